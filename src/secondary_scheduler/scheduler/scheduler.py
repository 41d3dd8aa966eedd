"""The scheduling loop: pop a pod, run its profile's framework, assume, bind in the background.

The scheduling cycle is synchronous (numpy over the NodeTable), so nothing changes the
cluster state under it; binding is asynchronous and bounded, so a slow API server delays
bindings, not decisions. This is kube-scheduler's split between the scheduling and the
binding cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from secondary_scheduler.config.model import SchedulerConfiguration
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, Plugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.framework.status import Code
from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path
from secondary_scheduler.kube.reflector import Reflector
from secondary_scheduler.kube.store import Fanout
from secondary_scheduler.plugins.trimaran.services import SERVICE as TRIMARAN
from secondary_scheduler.plugins.trimaran.services import TrimaranServices

from .cache import SchedulerCache
from .events import EventRecorder, set_unschedulable_condition
from .metrics import SchedulerMetrics
from .queue import QueuedPod, SchedulingQueue

log = logging.getLogger(__name__)

# kube-scheduler's informer ignores finished pods: they hold no resources.
ACTIVE_PODS_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
BoundHook = Callable[[PodInfo, str], None]


class Scheduler:
    def __init__(
        self,
        config: SchedulerConfiguration,
        api: ApiClient,
        events_api: ApiClient,
        registry: Mapping[str, type[Plugin]],
        *,
        metrics: SchedulerMetrics | None = None,
        bind_concurrency: int = 64,
    ) -> None:
        self.config = config
        self.api = api
        self.metrics = metrics or SchedulerMetrics()
        self.events = EventRecorder(events_api)
        # The Trimaran plugins' shared services (metrics collectors, recently-scheduled cache):
        # one set for every profile, so a metric source is fetched once however many use it.
        self.trimaran = TrimaranServices(api=api, registry=self.metrics.registry)
        self.handle = Handle(binder=self._bind_pod, services={TRIMARAN: self.trimaran})
        self.frameworks = {
            profile.scheduler_name: Framework(
                profile,
                registry,
                self.handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            )
            for profile in config.profiles
        }
        first = next(iter(self.frameworks.values()))
        self.queue: SchedulingQueue[PodInfo] = SchedulingQueue(
            first.run_queue_sort_less,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
        )
        self.table = NodeTable()
        self.cache = SchedulerCache(self.table, self.queue, self.frameworks)
        self.reflectors = [
            Reflector(api, "/api/v1/nodes", self.cache.nodes, name="nodes"),
            Reflector(
                api,
                "/api/v1/pods",
                Fanout(self.cache.pods, self.trimaran.recently_scheduled),
                params={"fieldSelector": ACTIVE_PODS_SELECTOR},
                name="pods",
            ),
        ]
        self.bound_hooks: list[BoundHook] = [
            lambda pod, node: self.trimaran.recently_scheduled.record(pod, node, time.time())
        ]
        self._bind_slots = asyncio.Semaphore(bind_concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._background: list[asyncio.Task[None]] = []

    # -- lifecycle ---------------------------------------------------------------------
    def synced(self) -> bool:
        return all(reflector.synced.is_set() for reflector in self.reflectors)

    async def start_informers(self) -> None:
        """List+watch nodes and pods and wait for the first full lists (kube-scheduler's cache sync)."""
        for reflector in self.reflectors:
            self._background.append(asyncio.create_task(reflector.run(), name=f"reflector-{reflector.name}"))
        self._background.append(asyncio.create_task(self._report_pending(), name="pending-gauge"))
        self.events.start()
        await asyncio.gather(*(reflector.synced.wait() for reflector in self.reflectors))
        await self.trimaran.start()  # first metrics fetch, so the first cycle is not blind
        log.info(
            "caches synced: %d nodes, %d pods pending",
            self.table.num_nodes,
            sum(self.queue.counts().values()),
        )

    async def run(self) -> None:
        """Schedule until cancelled (the caller cancels when leadership ends or on shutdown)."""
        while True:
            item = await self.queue.pop()
            self.schedule_one(item)
            await asyncio.sleep(0)  # let watch events and bindings in between cycles

    async def stop(self, grace: float = 5.0) -> None:
        """Wait a little for bindings in flight, then stop everything we started."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for task in [*self._tasks, *self._background]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.events.stop()
        await self.trimaran.stop()

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _report_pending(self) -> None:
        while True:
            for queue_name, count in self.queue.counts().items():
                self.metrics.pending_pods.labels(queue_name).set(count)
            self.metrics.pending_pods.labels("gated").set(len(self.cache.gated))
            await asyncio.sleep(1)

    # -- the scheduling cycle ----------------------------------------------------------
    def schedule_one(self, item: QueuedPod[PodInfo]) -> None:
        pod = item.pod
        framework = self.frameworks[pod.scheduler_name]
        profile = framework.scheduler_name
        started = time.perf_counter()
        state = CycleState()
        try:
            result = framework.schedule(pod, self.table, state)
        except Exception as error:
            log.exception("error scheduling pod %s", pod.key)
            self._failed(
                item, profile, f"running the scheduling framework: {error}", started, unschedulable=False
            )
            return
        node = result.node_name
        if node is None:
            unschedulable = result.status.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            self._failed(item, profile, result.message, started, unschedulable=unschedulable)
            return
        self.cache.assume(pod, node)
        status = framework.reserve(state, pod, node)
        if status.is_success:
            permit = framework.permit(state, pod, node)
            status = permit.status if permit.status.code != Code.WAIT else status
        if not status.is_success:
            framework.unreserve(state, pod, node)
            self.cache.forget(pod)
            self._failed(item, profile, status.message, started, unschedulable=status.is_rejected)
            return
        self._spawn(self._binding_cycle(item, framework, state, node, started), name=f"bind-{pod.key}")

    def _failed(
        self, item: QueuedPod[PodInfo], profile: str, message: str, started: float, unschedulable: bool
    ) -> None:
        pod = item.pod
        result = "unschedulable" if unschedulable else "error"
        self.metrics.schedule_attempts.labels(result, profile).inc()
        self.metrics.attempt_duration.labels(result, profile).observe(time.perf_counter() - started)
        log.info("unable to schedule pod %s: %s", pod.key, message)
        self.queue.requeue_failed(item, unschedulable=unschedulable)
        self.events.failed(pod, profile, message)
        self._spawn(set_unschedulable_condition(self.api, pod, message), name=f"condition-{pod.key}")

    async def _binding_cycle(
        self, item: QueuedPod[PodInfo], framework: Framework, state: CycleState, node: str, started: float
    ) -> None:
        pod = item.pod
        profile = framework.scheduler_name
        async with self._bind_slots:
            status = await framework.bind_cycle(state, pod, node)
        if not status.is_success:
            framework.unreserve(state, pod, node)
            self.cache.forget(pod)
            self._failed(item, profile, f"Binding rejected: {status.message}", started, unschedulable=False)
            return
        self.cache.finish_binding(pod)
        self.queue.done(pod.key)
        elapsed = time.perf_counter() - started
        self.metrics.schedule_attempts.labels("scheduled", profile).inc()
        self.metrics.attempt_duration.labels("scheduled", profile).observe(elapsed)
        self.metrics.pod_scheduling_attempts.observe(item.attempts)
        self.metrics.pod_scheduling_sli_duration.labels(str(min(item.attempts, 16))).observe(
            time.monotonic() - item.initial_timestamp
        )
        self.events.scheduled(pod, profile, node)
        for hook in self.bound_hooks:
            hook(pod, node)
        log.debug("bound %s to %s in %.1f ms", pod.key, node, elapsed * 1000)

    async def _bind_pod(self, pod: PodInfo, node: str) -> None:
        """Create the pod's Binding (pods/binding), the way kube-scheduler's DefaultBinder does."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.api.create(resource_path("v1", "pods", pod.namespace, pod.name, "binding"), body)
        except ApiError as error:
            # A retried request whose first attempt did get through: the pod is already ours.
            if error.conflict and await self._bound_to(pod, node):
                return
            raise

    async def _bound_to(self, pod: PodInfo, node: str) -> bool:
        try:
            current = await self.api.get(resource_path("v1", "pods", pod.namespace, pod.name))
        except ApiError:
            return False
        return bool((current.get("spec") or {}).get("nodeName") == node)
