"""A cluster's recent past as a secsched trace: its pods' lives and use, read from its Prometheus.

For the window [now - history, now], at every ``step``:

* use, from cAdvisor's series as the kubelet serves them (the local cluster's load exporter
  serves its model's pod usage under the same names when its ``podSeries`` is on):
  CPU ``sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!="",
  container!="POD"}[rate_window]))`` and memory ``sum by (namespace, pod)
  (container_memory_working_set_bytes{...})``. A sample is written where both have a value.
* lives: a pod's creation is kube-state-metrics' ``kube_pod_created`` where present, else the
  API's ``creationTimestamp`` for a pod that still exists, else its first memory sample; its
  deletion is ``kube_pod_deletion_timestamp`` where present, none for a pod that still exists
  (and is not terminating), else its last memory sample plus a step (memory, an instant series,
  ends when the pod does; a rate lingers for its window). Pods created before the window arrive
  at t=0 (the trace holds every pod alive in the window, so replay its nodes without their pods).
* what a pod asks for (requests, limits, labels, owner, priority, group): from the API for a pod
  that still exists, else from kube-state-metrics' ``kube_pod_container_resource_requests``
  and ``..._limits``; a deleted pod that neither knows is left out, and counted.

Samples are held per pod in arrays (24 bytes each) until the window is read, then written in time
order: a day of 1,000 pods at one-minute steps is ~35 MB.
"""

from __future__ import annotations

import calendar
import heapq
import math
import time
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from secondary_scheduler.framework.podrequests import pod_requests
from secondary_scheduler.httpsession import TRANSPORT_ERRORS, LazySession
from secondary_scheduler.kube.client import JSON, ApiClient
from secondary_scheduler.kube.kubeconfig import Connection
from secondary_scheduler.kube.quantity import format_cpu, resource_value
from secondary_scheduler.plugins.trimaran.args import PROMETHEUS
from secondary_scheduler.plugins.trimaran.providers.auth import BearerToken, tls_context
from secondary_scheduler.plugins.trimaran.source import MetricSource
from secondary_scheduler.replay.trace import (
    INSTANCE_TYPE_ANNOTATION,
    POD_GROUP_LABEL,
    PodArrival,
    ReplayRecord,
    TraceHeader,
    TraceRecord,
    UsageSample,
    batched,
    write_trace,
)

CPU_QUERY = "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{{{selector}}}[{window}s]))"
MEMORY_QUERY = "sum by (namespace, pod) (container_memory_working_set_bytes{{{selector}}})"
CONTAINERS = 'container!="",container!="POD"'
"""The containers' own series: not the pod's cgroup (container="") nor the pause container."""
POINTS_PER_QUERY = 1000
"""Steps per range query (Prometheus refuses more than 11,000 points per series)."""
MIN_RATE_WINDOW = 60.0


class RecordError(Exception):
    """Recording cannot go on: the message says what failed and how to fix it."""


@dataclass(frozen=True)
class RecordOptions:
    history: float
    """Seconds of the past to record."""
    step: float = 60.0
    """Seconds between two samples of a pod."""
    rate_window: float | None = None
    """The window of the CPU rate, seconds (default: the step, at least 60 s, so rate() sees two
    scrapes at intervals up to 30 s)."""
    namespaces: tuple[str, ...] = ()
    """Only pods of these namespaces (all when empty)."""

    def __post_init__(self) -> None:
        if not self.history > 0:
            raise ValueError(f"--history {self.history:g}s: give a positive duration such as 1h or 7d")
        if not 0 < self.step <= self.history:
            raise ValueError(f"--history-step {self.step:g}s: give a positive duration within the history")
        if self.rate_window is not None and not self.rate_window > 0:
            raise ValueError(f"rate window {self.rate_window:g}s: give a positive duration")

    @property
    def window(self) -> float:
        return self.rate_window if self.rate_window is not None else max(self.step, MIN_RATE_WINDOW)


def parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``30m``, ``12h`` (a Go duration) or ``7d`` (days)."""
    from secondary_scheduler.config.base import parse_go_duration

    if text.endswith("d") and text[:-1].replace(".", "", 1).isdigit():
        return float(text[:-1]) * 86400
    return parse_go_duration(text)


class PrometheusQueries:
    """Range and instant queries against a Prometheus (or Thanos querier) HTTP API."""

    def __init__(self, source: MetricSource, api: ApiClient | None = None, timeout: float = 60.0) -> None:
        self.address = source.address.rstrip("/")
        self._token = BearerToken(source, api)
        self._http = LazySession(tls=tls_context(source), timeout=aiohttp.ClientTimeout(total=timeout))

    async def close(self) -> None:
        await self._http.close()

    async def range(self, promql: str, start: float, end: float, step: float) -> list[JSON]:
        return await self._get(
            "query_range",
            {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"},
        )

    async def instant(self, promql: str, at: float) -> list[JSON]:
        return await self._get("query", {"query": promql, "time": f"{at:.3f}"})

    async def _get(self, path: str, params: dict[str, str]) -> list[JSON]:
        token = await self._token.get()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        url = f"{self.address}/api/v1/{path}"
        try:
            async with self._http().get(url, params=params, headers=headers) as response:
                status, content = response.status, await response.read()
        except TRANSPORT_ERRORS as error:
            raise RecordError(
                f"{url}: {error or type(error).__name__}: check --prometheus (the Prometheus base URL)"
            ) from error
        if status in (401, 403):
            raise RecordError(f"{url}: HTTP {status}: the token is missing or not allowed to query")
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise RecordError(
                f"{url}: HTTP {status} is not Prometheus' JSON API: check --prometheus"
            ) from None
        if status >= 400 or body.get("status") != "success":
            raise RecordError(f"{params['query']}: HTTP {status}: {body.get('error') or 'failed'}")
        return list(body["data"]["result"])


@dataclass
class _Pod:
    times: array[float] = field(default_factory=lambda: array("d"))
    cpu: array[float] = field(default_factory=lambda: array("d"))
    memory: array[float] = field(default_factory=lambda: array("d"))
    created: float | None = None
    deleted: float | None = None
    requests: dict[str, str] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)


@dataclass
class Recording:
    """What was read: the header and the pods, and what had to be left out."""

    header: TraceHeader
    arrivals: list[PodArrival]
    samples: dict[str, tuple[array[float], array[float], array[float]]]
    left_out: list[str]

    def records(self) -> Iterator[TraceRecord]:
        """Arrivals and samples merged in time order (an arrival before its pod's samples)."""
        streams: list[Iterator[tuple[float, int, int, TraceRecord]]] = [
            ((arrival.t, 0, n, arrival) for n, arrival in enumerate(self.arrivals))
        ]
        streams.extend(self._samples_of(n, arrival) for n, arrival in enumerate(self.arrivals))
        for _, _, _, record in heapq.merge(*streams, key=lambda item: item[:3]):
            yield record

    def stream(self) -> Iterator[ReplayRecord]:
        return batched(self.records())

    def _samples_of(self, n: int, arrival: PodArrival) -> Iterator[tuple[float, int, int, TraceRecord]]:
        times, cpu, memory = self.samples[arrival.key]
        for t, cores, used in zip(times, cpu, memory, strict=True):
            yield t, 1, n, UsageSample(t, arrival.namespace, arrival.name, cores, used)

    def write(self, path: Path) -> int:
        return write_trace(path, self.header, self.records())


async def record(
    prometheus: PrometheusQueries,
    api: ApiClient,
    options: RecordOptions,
    *,
    now: float | None = None,
) -> Recording:
    """Read the window from Prometheus and the API (see the module's docstring)."""
    end = time.time() if now is None else now
    start = end - options.history
    selector = CONTAINERS + _namespace_selector(options.namespaces)
    pods: dict[tuple[str, str], _Pod] = {}
    cpu_at: dict[tuple[str, str], dict[float, float]] = {}
    cpu_query = CPU_QUERY.format(selector=selector, window=f"{options.window:g}")
    memory_query = MEMORY_QUERY.format(selector=selector)
    chunk = options.step * POINTS_PER_QUERY
    first = math.ceil(start / options.step) * options.step
    begin = first
    while begin <= end:
        until = min(begin + chunk - options.step, end)
        for series in await prometheus.range(cpu_query, begin, until, options.step):
            values = cpu_at.setdefault(_key(series), {})
            for at, value in series["values"]:
                values[float(at)] = float(value)
        for series in await prometheus.range(memory_query, begin, until, options.step):
            key = _key(series)
            pod = pods.setdefault(key, _Pod())
            rates = cpu_at.get(key, {})
            for at_text, value in series["values"]:
                at = float(at_text)
                if at in rates:
                    pod.times.append(round(at - start, 3))
                    pod.cpu.append(max(rates.pop(at), 0.0))
                    pod.memory.append(float(value))
        cpu_at = {key: {at: v for at, v in values.items() if at > until} for key, values in cpu_at.items()}
        begin = until + options.step
    await _kube_state_metrics(prometheus, pods, selector, options, end)
    listed = await _listed_pods(api, options.namespaces)
    arrivals: list[PodArrival] = []
    samples: dict[str, tuple[array[float], array[float], array[float]]] = {}
    left_out: list[str] = []
    for key in sorted(pods, key=lambda k: (_created(pods[k], listed.get(k), start), k)):
        pod, live = pods[key], listed.get(key)
        if not pod.times and live is None:
            continue
        arrival = _arrival(key, pod, live, start, end, options)
        if arrival is None:
            left_out.append(f"{key[0]}/{key[1]}")
            continue
        arrivals.append(arrival)
        keep = [
            i for i, t in enumerate(pod.times) if arrival.t <= t and (arrival.end is None or t < arrival.end)
        ]
        samples[arrival.key] = (
            array("d", (pod.times[i] for i in keep)),
            array("d", (round(pod.cpu[i], 6) for i in keep)),
            array("d", (float(round(pod.memory[i])) for i in keep)),
        )
    header = TraceHeader(
        start=round(start, 3),
        source="cluster",
        description=(
            f"recorded from {prometheus.address}: {options.history:g}s of history at "
            f"{options.step:g}s steps, "
            f"CPU rate over {options.window:g}s; {len(arrivals)} pods"
            + (f", {len(left_out)} deleted pods left out (no recorded requests)" if left_out else "")
        ),
        seed=None,
    )
    return Recording(header, arrivals, samples, left_out)


def _key(series: Mapping[str, Any]) -> tuple[str, str]:
    metric = series.get("metric") or {}
    return str(metric.get("namespace", "")), str(metric.get("pod", ""))


def _namespace_selector(namespaces: tuple[str, ...]) -> str:
    return f',namespace=~"{"|".join(namespaces)}"' if namespaces else ""


async def _kube_state_metrics(
    prometheus: PrometheusQueries,
    pods: dict[tuple[str, str], _Pod],
    selector: str,
    options: RecordOptions,
    end: float,
) -> None:
    """Creation, deletion, requests and limits from kube-state-metrics, where it runs."""
    namespaces = _namespace_selector(options.namespaces).lstrip(",")
    span = f"{math.ceil(options.history + options.step)}s"
    for series in await prometheus.instant(
        f"max by (namespace, pod) (last_over_time(kube_pod_created{{{namespaces}}}[{span}]))", end
    ):
        pods.setdefault(_key(series), _Pod()).created = float(series["value"][1])
    for series in await prometheus.instant(
        f"max by (namespace, pod) (last_over_time(kube_pod_deletion_timestamp{{{namespaces}}}[{span}]))", end
    ):
        if _key(series) in pods:
            pods[_key(series)].deleted = float(series["value"][1])
    for kind in ("requests", "limits"):
        query = (
            f"sum by (namespace, pod, resource) "
            f"(last_over_time(kube_pod_container_resource_{kind}{{{namespaces}}}[{span}]))"
        )
        for series in await prometheus.instant(query, end):
            pod = pods.get(_key(series))
            resource = (series.get("metric") or {}).get("resource")
            if pod is None or not resource:
                continue
            value = float(series["value"][1])
            text = format_cpu(math.ceil(value * 1000)) if resource == "cpu" else str(math.ceil(value))
            (pod.requests if kind == "requests" else pod.limits)[resource] = text


async def _listed_pods(api: ApiClient, namespaces: tuple[str, ...]) -> dict[tuple[str, str], JSON]:
    listed = (await api.list_all("/api/v1/pods", None))["items"]
    pods = {}
    for pod in listed:
        metadata = pod.get("metadata") or {}
        key = (metadata.get("namespace", ""), metadata.get("name", ""))
        if (not namespaces or key[0] in namespaces) and (pod.get("status") or {}).get("phase") not in (
            "Succeeded",
            "Failed",
        ):
            pods[key] = pod
    return pods


def _created(pod: _Pod, live: JSON | None, start: float) -> float:
    if pod.created is not None:
        return pod.created
    stamp = _timestamp(((live or {}).get("metadata") or {}).get("creationTimestamp"))
    if stamp is not None:
        return stamp
    return start + pod.times[0] if pod.times else start


def _timestamp(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _arrival(
    key: tuple[str, str], pod: _Pod, live: JSON | None, start: float, end: float, options: RecordOptions
) -> PodArrival | None:
    created = _created(pod, live, start)
    metadata = (live or {}).get("metadata") or {}
    spec = (live or {}).get("spec") or {}
    if live is not None and not metadata.get("deletionTimestamp"):
        deleted: float | None = None
    elif pod.deleted is not None:
        deleted = pod.deleted
    elif live is not None:
        deleted = _timestamp(metadata.get("deletionTimestamp"))
    else:
        deleted = start + pod.times[-1] + options.step if pod.times else None
    if live is not None:
        requests, limits = _requests_and_limits(spec, live.get("status") or {})
    else:
        requests, limits = pod.requests, pod.limits
        if not requests:
            return None
    t = max(created - start, 0.0)
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    owners = metadata.get("ownerReferences") or []
    owner = f"{owners[0].get('kind', '').lower()}/{owners[0].get('name', '')}" if owners else None
    return PodArrival(
        t=round(t, 3),
        namespace=key[0],
        name=key[1],
        end=None if deleted is None or deleted >= end else round(max(deleted - start, t), 3),
        requests=requests,
        limits=limits,
        labels=labels,
        owner=owner,
        instance_type=(metadata.get("annotations") or {}).get(INSTANCE_TYPE_ANNOTATION),
        priority=int(spec.get("priority") or 0),
        group=labels.get(POD_GROUP_LABEL),
    )


def _requests_and_limits(spec: JSON, status: JSON) -> tuple[dict[str, str], dict[str, str]]:
    """The pod's requests as the scheduler sums them, and its limits where every container sets one."""
    requests = {
        name: format_cpu(value) if name == "cpu" else str(value)
        for name, value in pod_requests(spec, status).items()
    }
    containers = spec.get("containers") or []
    limits: dict[str, str] = {}
    limited = [((c.get("resources") or {}).get("limits") or {}) for c in containers]
    if limited and all(limited):
        for resource in set.intersection(*(set(each) for each in limited)):
            total = sum(resource_value(resource, each[resource]) for each in limited)
            limits[resource] = format_cpu(total) if resource == "cpu" else str(total)
    return requests, limits


def prometheus_source(address: str | None, configured: list[MetricSource]) -> MetricSource:
    """The Prometheus to read: ``address``, else the first one the config's load-aware plugins read."""
    if address:
        return MetricSource(kind=PROMETHEUS, address=address)
    for source in configured:
        if source.kind == PROMETHEUS:
            return source
    raise RecordError(
        "recording needs a Prometheus: give --prometheus URL, or a --config whose load-aware plugin reads "
        "Prometheus (metricProvider.type: Prometheus)"
    )


async def record_to_file(
    connection: Connection, source: MetricSource, options: RecordOptions, path: Path
) -> Recording:
    """Record the window and write it as a secsched trace at ``path``."""
    async with ApiClient(
        connection, qps=50, burst=100, max_retry_seconds=10.0, user_agent="secsched-record"
    ) as api:
        prometheus = PrometheusQueries(source, api)
        try:
            recording = await record(prometheus, api, options)
        finally:
            await prometheus.close()
    recording.write(path)
    return recording
