"""Two replicas of one scheduler (ours or upstream's) under leader election, kept running as a
Deployment's kubelet would: a replica that exits (killed, or gave up its lease while the API
server was away, as both schedulers do by design) is started again after a short back-off.

Both replicas read the same configuration: deploy/06's load-aware profile (TargetLoadPacking
reading the cluster's Prometheus, as the benchmark's ``load-aware`` class runs it) with
Coscheduling enabled as scheduler-plugins documents it, and leader election on a Lease in the
run's namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.workloadclasses import TARGET_LOAD_PACKING, load_class_config
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster.schedulers import SchedulerRun, launch, start_scheduler
from secsched_devtools.repo import example_config

COSCHEDULING_POINTS = ("preFilter", "postFilter", "permit", "reserve")
RESTART_BACKOFF = 1.0
"""Seconds before an exited replica starts again (a kubelet's first back-off is 10 s; shorter here
so that a run measures the scheduler, not the back-off)."""


@dataclass(frozen=True)
class Election:
    """The leader election both replicas run (kube-scheduler's flags of the same names)."""

    lease_seconds: float = 8.0
    renew_seconds: float = 6.0
    retry_seconds: float = 2.0


def chaos_config(
    scheduler_name: str, kubeconfig: Path, prometheus_url: str, namespace: str, election: Election
) -> str:
    """deploy/06's load-aware profile, plus Coscheduling and leader election; both schedulers read it."""
    text = load_class_config(
        example_config(), TARGET_LOAD_PACKING, scheduler_name, 200, 400, kubeconfig, prometheus_url
    )
    document: dict[str, Any] = yaml.safe_load(text)
    [profile] = document["profiles"]
    plugins = profile.setdefault("plugins", {})
    plugins["queueSort"] = {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}
    for point in COSCHEDULING_POINTS:
        plugins.setdefault(point, {}).setdefault("enabled", []).append({"name": "Coscheduling"})
    document["leaderElection"] = {
        "leaderElect": True,
        "leaseDuration": f"{election.lease_seconds:g}s",
        "renewDeadline": f"{election.renew_seconds:g}s",
        "retryPeriod": f"{election.retry_seconds:g}s",
        "resourceName": scheduler_name,
        "resourceNamespace": namespace,
    }
    return yaml.safe_dump(document, sort_keys=False)


@dataclass
class Replica:
    """One replica: its current process and how often it was started again."""

    name: str
    run: SchedulerRun
    argv: list[str]
    restarts: int = 0
    exits: list[tuple[float, int]] = field(default_factory=list)
    """(monotonic time noticed, exit code) of each incarnation that ended."""

    def leading(self) -> bool:
        """Whether this replica holds the lease now (its ``leader_election_master_status``)."""
        if self.run.process.poll() is not None:
            return False
        try:
            return self.run.metric("leader_election_master_status") >= 1
        except httpx.HTTPError:
            return False


class Replicas:
    """Two replicas of `kind`, each started again when it exits, until `stop`."""

    def __init__(self, kind: str, config: str, kubeconfig: Path, directory: Path, count: int = 2) -> None:
        self.kind = kind
        self.config = config
        self.kubeconfig = kubeconfig
        self.directory = directory
        self.count = count
        self.replicas: list[Replica] = []
        self._keeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        for index in range(self.count):
            name = f"{self.kind}-{chr(ord('a') + index)}"
            run = await asyncio.to_thread(
                start_scheduler, self.kind, self.config, self.kubeconfig, self.directory, name
            )
            self.replicas.append(Replica(name, run, list(map(str, run.process.args))))  # type: ignore[arg-type]
        self._keeper = asyncio.create_task(self._keep(), name=f"keep-{self.kind}")

    async def _keep(self) -> None:
        while True:
            for replica in self.replicas:
                code = replica.run.process.poll()
                if code is None:
                    continue
                replica.exits.append((time.monotonic(), code))
                await asyncio.sleep(RESTART_BACKOFF)
                replica.restarts += 1
                log = self.directory / f"{replica.name}.{replica.restarts}.log"
                replica.run = await asyncio.to_thread(
                    launch, self.kind, replica.argv, log, replica.run.port, False
                )
            await asyncio.sleep(0.2)

    async def leader(self, timeout: float = 120.0) -> Replica:
        """The replica that leads (waits until exactly one does)."""

        async def leading() -> list[Replica]:
            return [r for r in self.replicas if await asyncio.to_thread(r.leading)]

        [found] = await poll_until(
            leading,
            lambda found: len(found) == 1,
            lambda found: (
                f"{self.kind}: {len(found)} replicas lead after {timeout:.0f}s, not one:\n"
                + "\n".join(r.run.tail(10) for r in self.replicas)
            ),
            timeout,
            interval=0.5,
        )
        return found

    def kill(self, replica: Replica) -> None:
        """kill -9: no chance to release the lease or to send what it holds; the keeper restarts it."""
        replica.run.process.kill()
        replica.run.process.wait()

    async def stop(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        for replica in self.replicas:
            await asyncio.to_thread(replica.run.stop)

    def restarts(self) -> int:
        return sum(replica.restarts for replica in self.replicas)
