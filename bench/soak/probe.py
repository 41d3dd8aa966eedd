"""One sample of our scheduler's process, read from outside it.

- RSS, threads: /proc/<pid>/status; open files: /proc/<pid>/fd.
- Connections to the API server: the process's sockets (/proc/<pid>/fd) found ESTABLISHED to the
  API server's port in /proc/<pid>/net/tcp{,6}. Our client speaks HTTP/1.1, one connection per
  open watch besides the request pool, so a watch left open shows here.
- asyncio tasks: the task dump `--profiling` serves (/debug/pprof/goroutine, one "task NAME:" line
  per task); the watch loops are the tasks named ``reflector-<resource>``. Nothing is added to
  the scheduler for this: upstream's kube-scheduler answers the same question with the same
  endpoint (its goroutine dump).
- Latency, queue and bindings: /metrics, under kube-scheduler's names.
"""

from __future__ import annotations

import os
import re
import ssl
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

Buckets = tuple[tuple[float, float], ...]
"""A histogram's cumulative buckets: (upper bound, observations at or under it), +Inf last."""

ATTEMPT_HISTOGRAM = "scheduler_scheduling_attempt_duration_seconds"
SLI_HISTOGRAM = "scheduler_pod_scheduling_sli_duration_seconds"
ATTEMPTS_COUNTER = "scheduler_schedule_attempts"
PENDING_GAUGE = "scheduler_pending_pods"
TASK_LINE = re.compile(r"^task (?P<name>.*): (?:pending|done)$")
WATCH_TASK_PREFIX = "reflector-"
ESTABLISHED = "01"
PROBE_TIMEOUT = 30.0
"""Seconds a page may take: on a busy machine a scheduler's answer can lag well behind."""


@dataclass(frozen=True)
class Sample:
    """The scheduler process at one moment, ``seconds`` after the churn began."""

    seconds: float
    rss_bytes: int
    threads: int
    open_fds: int
    api_connections: int
    tasks: int
    watch_tasks: int
    attempt_buckets: Buckets
    """Scheduling attempts that ended with the pod scheduled (every profile)."""
    sli_buckets: Buckets
    """Pods' end-to-end scheduling latency (every attempt count)."""
    scheduled: float
    pending_active: float
    pending_backoff: float
    pending_unschedulable: float
    task_kinds: dict[str, int] = field(default_factory=dict)
    """Tasks by name with digits and pod keys dropped (``bind-``, ``event-sender-``): what grew."""


@dataclass(frozen=True)
class MetricsReading:
    attempt_buckets: Buckets
    sli_buckets: Buckets
    scheduled: float
    pending: dict[str, float]


def read_metrics(text: str) -> MetricsReading:
    """The figures a sample keeps from a /metrics page (Prometheus text format)."""
    attempts: dict[float, float] = defaultdict(float)
    sli: dict[float, float] = defaultdict(float)
    scheduled = 0.0
    pending: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == f"{ATTEMPT_HISTOGRAM}_bucket" and labels.get("result") == "scheduled":
                attempts[float(labels["le"])] += sample.value
            elif sample.name == f"{SLI_HISTOGRAM}_bucket":
                sli[float(labels["le"])] += sample.value
            elif sample.name == f"{ATTEMPTS_COUNTER}_total" and labels.get("result") == "scheduled":
                scheduled += sample.value
            elif sample.name == PENDING_GAUGE:
                pending[labels.get("queue", "")] = sample.value
    return MetricsReading(tuple(sorted(attempts.items())), tuple(sorted(sli.items())), scheduled, pending)


def task_kind(name: str) -> str:
    """A task's name without what varies per instance: ``bind-ns/pod`` -> ``bind-``,
    ``event-sender-12`` -> ``event-sender-``, ``Task-881`` -> ``Task-``."""
    if name.startswith("bind-"):
        return "bind-"
    return re.sub(r"\d+$", "", name)


def read_tasks(dump: str) -> list[str]:
    """Task names from the task dump (/debug/pprof/goroutine)."""
    return [match["name"] for line in dump.splitlines() if (match := TASK_LINE.match(line))]


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the process's open sockets."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for entry in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / entry)
        except OSError:
            continue  # closed since the listing
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def established_to(port: int, tables: list[str], inodes: set[str]) -> int:
    """How many of ``inodes`` are ESTABLISHED connections to ``port`` in /proc/net/tcp-format
    ``tables`` (columns: sl, local, remote address:port in hex, state, ..., inode)."""
    count = 0
    for table in tables:
        for line in table.splitlines()[1:]:
            columns = line.split()
            if len(columns) < 10:
                continue
            remote_port = int(columns[2].rsplit(":", 1)[1], 16)
            if remote_port == port and columns[3] == ESTABLISHED and columns[9] in inodes:
                count += 1
    return count


def _status_fields(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


class Probe:
    """Samples one scheduler process (its pid and its serving port)."""

    def __init__(
        self, pid: int, serving_port: int, apiserver_port: int, client_cert: tuple[str, str]
    ) -> None:
        """``client_cert``: (certificate, key) files of a user the API server lets read the task
        dump (the scheduler asks it, as kube-scheduler does; /metrics alone is open to all here)."""
        self.pid = pid
        self.apiserver_port = apiserver_port
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed serving certificate
        tls.load_cert_chain(*client_cert)
        self._http = httpx.AsyncClient(
            base_url=f"https://127.0.0.1:{serving_port}", verify=tls, timeout=PROBE_TIMEOUT
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def sample(self, seconds: float) -> Sample:
        """Read everything once; an HTTP error or a gone process raises (the run stops on it)."""
        metrics_page = await self._http.get("/metrics")
        metrics_page.raise_for_status()
        dump = await self._http.get("/debug/pprof/goroutine")
        dump.raise_for_status()
        status = _status_fields(self.pid)
        tables = [
            Path(f"/proc/{self.pid}/net/{name}").read_text()
            for name in ("tcp", "tcp6")
            if Path(f"/proc/{self.pid}/net/{name}").exists()
        ]
        reading = read_metrics(metrics_page.text)
        names = read_tasks(dump.text)
        return Sample(
            seconds=seconds,
            rss_bytes=int(status["VmRSS"].split()[0]) * 1024,
            threads=int(status["Threads"]),
            open_fds=len(os.listdir(f"/proc/{self.pid}/fd")),
            api_connections=established_to(self.apiserver_port, tables, socket_inodes(self.pid)),
            tasks=len(names),
            watch_tasks=sum(1 for name in names if name.startswith(WATCH_TASK_PREFIX)),
            attempt_buckets=reading.attempt_buckets,
            sli_buckets=reading.sli_buckets,
            scheduled=reading.scheduled,
            pending_active=reading.pending.get("active", 0.0),
            pending_backoff=reading.pending.get("backoff", 0.0),
            pending_unschedulable=reading.pending.get("unschedulable", 0.0),
            task_kinds=dict(Counter(task_kind(name) for name in names)),
        )
