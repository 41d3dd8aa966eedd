"""The faults a chaos run injects, each at a seeded random moment, and when each one ended.

A fault's *end* is when the part it broke is back (the API server answers /readyz again, etcd
/health, the killed process started again): the recovery measured is the scheduler's own, from
that moment to its next binding. The leader's kill ends at the kill: what follows (the lease
running out, the standby taking over) is the scheduler's recovery.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from dataclasses import dataclass

import httpx

from bench.chaos import operator
from bench.chaos.replicas import Replicas
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import PROMETHEUS, PROVISIONER, LocalCluster

APISERVER_KILL = "apiserver-kill"
ETCD_RESTART = "etcd-restart"
APISERVER_STOP = "apiserver-stop"
PROMETHEUS_KILL = "prometheus-kill"
LEADER_KILL = "leader-kill"
OPERATOR_KILL = "operator-kill"
PROVISIONER_RESTART = "provisioner-restart"
KINDS = (
    APISERVER_KILL,
    ETCD_RESTART,
    APISERVER_STOP,
    PROMETHEUS_KILL,
    LEADER_KILL,
    OPERATOR_KILL,
    PROVISIONER_RESTART,
)
DESCRIPTIONS = {
    APISERVER_KILL: "kill -9 kube-apiserver, start it again after 1-4 s",
    ETCD_RESTART: "stop etcd (SIGTERM), start it again after 1-3 s",
    APISERVER_STOP: "SIGSTOP kube-apiserver for 3-10 s, then SIGCONT (watches and leases time out)",
    PROMETHEUS_KILL: "kill -9 Prometheus, start it again after 3-10 s",
    LEADER_KILL: "kill -9 the leading replica of two (its keeper starts it again after 1 s)",
    OPERATOR_KILL: "change the CR, kill -9 the operator 0-0.5 s later (mid-reconcile), start it after 1-3 s",
    PROVISIONER_RESTART: "kill -9 the storage provisioner, start it again after 1-3 s",
}
OPERATOR_CONVERGE_SECONDS = 120.0
IN_FLIGHT_SECONDS = 0.5
"""After a leader's kill, bindings seen this soon are the dead leader's (sent before it died); a
standby cannot bind that soon, as the lease it must take over lasts seconds."""


@dataclass(frozen=True)
class FaultRecord:
    """One fault: what, from when to when (monotonic seconds), and what it broke for good (if anything)."""

    kind: str
    started: float
    ended: float
    detail: str
    violation: str | None = None
    in_flight: float = 0.0
    """Seconds after ``ended`` whose bindings are not the recovery: those the killed leader had sent
    before it died, which the API server still completes."""


def plan(kinds: tuple[str, ...], repeats: int, seed: int) -> list[str]:
    """Each kind ``repeats`` times, in a seeded random order."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown fault kinds {unknown}: choose from {', '.join(KINDS)}")
    if repeats < 1:
        raise ValueError(f"repeats={repeats}: inject each fault at least once")
    order = [kind for kind in kinds for _ in range(repeats)]
    random.Random(seed).shuffle(order)
    return order


class FaultInjector:
    """Injects one fault at a time into this cluster, these scheduler replicas and this operator."""

    def __init__(
        self,
        cluster: LocalCluster,
        replicas: Replicas,
        operator_process: operator.OperatorProcess | None,
        api: ApiClient,
        rng: random.Random,
    ) -> None:
        self.cluster = cluster
        self.replicas = replicas
        self.operator = operator_process
        self.api = api
        self.rng = rng

    async def inject(self, kind: str) -> FaultRecord:
        handlers = {
            APISERVER_KILL: self._apiserver_kill,
            ETCD_RESTART: self._etcd_restart,
            APISERVER_STOP: self._apiserver_stop,
            PROMETHEUS_KILL: self._prometheus_kill,
            LEADER_KILL: self._leader_kill,
            OPERATOR_KILL: self._operator_kill,
            PROVISIONER_RESTART: self._provisioner_restart,
        }
        return await handlers[kind]()

    async def _apiserver_kill(self) -> FaultRecord:
        downtime = self.rng.uniform(1, 4)
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.restart, "kube-apiserver", downtime, True)
        return FaultRecord(APISERVER_KILL, started, time.monotonic(), f"down {downtime:.1f}s")

    async def _etcd_restart(self) -> FaultRecord:
        downtime = self.rng.uniform(1, 3)
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.restart, "etcd", downtime)
        health = f"http://127.0.0.1:{self.cluster.ports['etcd']}/health"
        await asyncio.to_thread(
            self.cluster.supervisor.wait, "etcd", lambda: httpx.get(health, timeout=2).status_code == 200
        )
        return FaultRecord(ETCD_RESTART, started, time.monotonic(), f"down {downtime:.1f}s")

    async def _apiserver_stop(self) -> FaultRecord:
        stopped = self.rng.uniform(3, 10)
        started = time.monotonic()
        self.cluster.signal("kube-apiserver", signal.SIGSTOP)
        try:
            await asyncio.sleep(stopped)
        finally:
            self.cluster.signal("kube-apiserver", signal.SIGCONT)
        return FaultRecord(APISERVER_STOP, started, time.monotonic(), f"stopped {stopped:.1f}s")

    async def _prometheus_kill(self) -> FaultRecord:
        downtime = self.rng.uniform(3, 10)
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.restart, PROMETHEUS, downtime, True)
        ready = f"{self.cluster.prometheus_url}/-/ready"
        await asyncio.to_thread(
            self.cluster.supervisor.wait, PROMETHEUS, lambda: httpx.get(ready, timeout=2).status_code == 200
        )
        return FaultRecord(PROMETHEUS_KILL, started, time.monotonic(), f"down {downtime:.1f}s")

    async def _leader_kill(self) -> FaultRecord:
        leader = await self.replicas.leader()
        started = time.monotonic()
        self.replicas.kill(leader)
        return FaultRecord(
            LEADER_KILL, started, time.monotonic(), f"killed {leader.name}", in_flight=IN_FLIGHT_SECONDS
        )

    async def _operator_kill(self) -> FaultRecord:
        if self.operator is None:
            raise RuntimeError(f"{OPERATOR_KILL} needs the operator: the run was started without it")
        generation = await operator.nudge(self.api)
        started = time.monotonic()
        await asyncio.sleep(self.rng.uniform(0, 0.5))
        self.operator.kill()
        downtime = self.rng.uniform(1, 3)
        await asyncio.sleep(downtime)
        self.operator.start()
        ended = time.monotonic()
        try:
            await wait_for(
                lambda: operator.converged(self.api),
                f"the operator to converge on generation {generation}",
                timeout=OPERATOR_CONVERGE_SECONDS,
                interval=0.5,
            )
        except TimeoutError:
            return FaultRecord(
                OPERATOR_KILL,
                started,
                ended,
                f"generation {generation}",
                f"operator: not converged on the CR's generation {generation} "
                f"{OPERATOR_CONVERGE_SECONDS:.0f}s after its restart",
            )
        converged = time.monotonic() - ended
        return FaultRecord(
            OPERATOR_KILL,
            started,
            ended,
            f"generation {generation}, converged {converged:.1f}s after restart",
        )

    async def _provisioner_restart(self) -> FaultRecord:
        downtime = self.rng.uniform(1, 3)
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.restart, PROVISIONER, downtime, True)
        return FaultRecord(PROVISIONER_RESTART, started, time.monotonic(), f"down {downtime:.1f}s")
