"""What changes under the scheduler during a soak: pods, nodes and the node-load metrics.

Three loops, each at a steady pace set by the options and each counting what it did (``Churned``):

- pods: created at ``pod_rate`` per second on a fixed timetable (a slow API answer does not
  slow the pace: requests overlap), each deleted ``pod_lifetime`` seconds after its creation;
- nodes: every ``node_churn_every`` seconds ``node_churn_count`` KWOK nodes join (Ready before
  the loop goes on) and, once more than ``node_churn_pool`` churned nodes are up, the oldest go
  (with the pods bound to them: the pod GC removes those);
- metrics: every ``flap_every`` seconds, in turn, the base load changes, the load exporter goes
  away for ``outage`` seconds (its series go stale in Prometheus, then come back), and
  Prometheus itself goes away for as long (the plugins' queries fail, then succeed).

A failed API call is counted and its first words kept for the report, never swallowed silently.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench.soak.options import SoakOptions
from bench.soak.workload import pod_manifest
from secondary_scheduler.kube.client import ApiClient, ApiError
from secsched_devtools.cluster.localcluster import LOAD_EXPORTER, PROMETHEUS, LocalCluster

IN_FLIGHT = 32
"""API requests one loop keeps in flight at most."""
KEPT_ERRORS = 5
FLAPS = ("load", "exporter away", "prometheus away")


@dataclass
class Churned:
    """What the churn did, for the progress line and the report."""

    pods_created: int = 0
    pods_deleted: int = 0
    pods_by_kind: Counter[str] = field(default_factory=Counter)
    nodes_added: int = 0
    nodes_removed: int = 0
    flaps: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    """Failed calls by what was tried (``create pod``, ``delete node``, ...)."""
    error_texts: list[str] = field(default_factory=list)

    def failed(self, what: str, error: Exception) -> None:
        self.errors[what] += 1
        if len(self.error_texts) < KEPT_ERRORS:
            self.error_texts.append(f"{what}: {error}"[:300])


async def _every(period: float, until: float, action: Callable[[int], Awaitable[None]]) -> None:
    """Run ``action(n)`` every ``period`` seconds (the n-th time) until the monotonic ``until``."""
    turn = 0
    next_at = time.monotonic() + period
    while next_at < until:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await action(turn)
        turn += 1
        next_at += period


class PodChurn:
    """Pods created at a steady rate into ``namespace``, each deleted after its lifetime."""

    def __init__(self, api: ApiClient, namespace: str, options: SoakOptions, churned: Churned) -> None:
        self.api = api
        self.namespace = namespace
        self.options = options
        self.churned = churned
        self._chooser = random.Random(options.seed)
        self._gate = asyncio.Semaphore(IN_FLIGHT)
        self._requests: set[asyncio.Task[None]] = set()

    @property
    def live(self) -> int:
        return self.churned.pods_created - self.churned.pods_deleted

    async def run(self, until: float) -> None:
        started = time.monotonic()
        created = 0
        to_delete: deque[tuple[float, str]] = deque()
        while (now := time.monotonic()) < until:
            while created < (now - started) * self.options.pod_rate:
                name = f"soak-{created}"
                kind, manifest = pod_manifest(name, created, self._chooser)
                self._start(self._create(kind, manifest))
                to_delete.append((now + self.options.pod_lifetime, name))
                created += 1
            while to_delete and to_delete[0][0] <= now:
                self._start(self._delete(to_delete.popleft()[1]))
            next_creation = started + created / self.options.pod_rate
            next_deletion = to_delete[0][0] if to_delete else until
            await asyncio.sleep(max(0.0, min(next_creation, next_deletion, until) - time.monotonic()))
        if self._requests:
            await asyncio.wait(list(self._requests))

    def _start(self, request: Awaitable[None]) -> None:
        task = asyncio.ensure_future(request)
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _create(self, kind: str, manifest: dict[str, object]) -> None:
        async with self._gate:
            try:
                await self.api.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)
            except ApiError as error:
                self.churned.failed("create pod", error)
                return
        self.churned.pods_created += 1
        self.churned.pods_by_kind[kind] += 1

    async def _delete(self, name: str) -> None:
        async with self._gate:
            try:
                await self.api.delete(
                    f"/api/v1/namespaces/{self.namespace}/pods/{name}", {"gracePeriodSeconds": 0}
                )
            except ApiError as error:
                if not error.not_found:  # its node went, and the pod GC took it first
                    self.churned.failed("delete pod", error)
                    return
        self.churned.pods_deleted += 1


class NodeChurn:
    """KWOK nodes joining and leaving, beyond the ``options.nodes`` that stay."""

    def __init__(self, cluster: LocalCluster, api: ApiClient, options: SoakOptions, churned: Churned) -> None:
        self.cluster = cluster
        self.api = api
        self.options = options
        self.churned = churned
        self.up: deque[str] = deque()
        self._next_index = options.nodes

    async def run(self, until: float) -> None:
        await _every(self.options.node_churn_every, until, self._change)

    async def _change(self, _turn: int) -> None:
        count = self.options.node_churn_count
        names = await self.cluster.add_nodes(count, start=self._next_index)
        self._next_index += count
        self.up.extend(names)
        self.churned.nodes_added += len(names)
        while len(self.up) > self.options.node_churn_pool:
            name = self.up.popleft()
            try:
                await self.api.delete(f"/api/v1/nodes/{name}")
            except ApiError as error:
                self.churned.failed("delete node", error)
                continue
            self.churned.nodes_removed += 1


class MetricsFlap:
    """The node-load metrics changing and going away, in turn (``FLAPS``)."""

    def __init__(self, cluster: LocalCluster, options: SoakOptions, churned: Churned) -> None:
        self.cluster = cluster
        self.options = options
        self.churned = churned
        self._chooser = random.Random(options.seed + 1)

    async def run(self, until: float) -> None:
        await _every(self.options.flap_every, until, self._flap)

    async def _flap(self, turn: int) -> None:
        kind = FLAPS[turn % len(FLAPS)]
        if kind == "load":
            load = {
                "cpu": round(self._chooser.uniform(0.1, 0.6), 2),
                "memory": round(self._chooser.uniform(0.1, 0.5), 2),
                "noise": 0.05,
            }
            await asyncio.to_thread(self.cluster.set_base_load, {"default": load})
        else:
            component = LOAD_EXPORTER if kind == "exporter away" else PROMETHEUS
            # Blocks for the outage: a thread, so the pods and the samples go on meanwhile.
            await asyncio.to_thread(self.cluster.restart, component, self.options.outage)
        self.churned.flaps[kind] += 1
