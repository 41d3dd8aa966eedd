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
from secondary_scheduler.framework.events import POD, ActionType, ClusterEvent
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.framework.interface import CycleState, Plugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.result import ScheduleResult
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.framework.status import SUCCESS, Code
from secondary_scheduler.framework.waiting import WaitingPod
from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path
from secondary_scheduler.kube.events import EventRecorder
from secondary_scheduler.kube.reflector import Reflector
from secondary_scheduler.kube.store import Fanout
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.eventhandlers import EventHandlers
from secondary_scheduler.scheduler.extenders import build_extenders
from secondary_scheduler.scheduler.garbage import FullPasses
from secondary_scheduler.scheduler.metrics import SchedulerMetrics
from secondary_scheduler.scheduler.podstatus import SCHEDULER_ERROR, UNSCHEDULABLE, PodStatusWriter
from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue

log = logging.getLogger(__name__)

# kube-scheduler's informer ignores finished pods: they hold no resources.
ACTIVE_PODS_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
_ACTIONS = {"ADDED": ActionType.ADD, "MODIFIED": ActionType.UPDATE_OTHER, "DELETED": ActionType.DELETE}


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
        self.events = EventRecorder(events_api, on_dropped=self.metrics.count_dropped_events)
        self.pod_status = PodStatusWriter(api)
        # One handle for every profile: what plugins ask of it (informers, services, pod
        # hooks) is set up once, however many profiles use it.
        self.handle = Handle(
            binder=self._bind_pod,
            client=api,
            metrics_registry=self.metrics.registry,
            event_sink=self.events.record,
            activator=self._activate,
            idle_notifier=lambda callback: self.queue.call_when_idle(callback),
        )
        self.extenders = build_extenders(config.extenders)
        self.frameworks = {
            profile.scheduler_name: Framework(
                profile,
                registry,
                self.handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                extenders=self.extenders,
            )
            for profile in config.profiles
        }
        first = next(iter(self.frameworks.values()))
        self.queue: SchedulingQueue[PodInfo] = SchedulingQueue(
            first.run_queue_sort_less,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            gate=self._gated,
        )
        self.table = NodeTable()
        self.assumed = AssumedPods(self.table)
        self.handlers = EventHandlers(
            self.table,
            self.queue,
            self.frameworks,
            self.assumed,
            on_event=self._cluster_event,
            on_deleted=self._reject_if_waiting,
        )
        self.reflectors = [
            Reflector(api, "/api/v1/nodes", self.handlers.nodes, name="nodes"),
            Reflector(
                api,
                "/api/v1/pods",
                Fanout(self.handlers.pods, *self.handle.shared.pod_handlers),
                params={"fieldSelector": ACTIVE_PODS_SELECTOR},
                name="pods",
            ),
        ]
        for informer in self.handle.informers.all():
            informer.add_listener(self._requeue_on(informer))
            self.reflectors.append(
                Reflector(api, informer.resource.path, informer, name=informer.resource.plural)
            )
        self._bind_slots = asyncio.Semaphore(bind_concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._background: list[asyncio.Task[None]] = []
        self.full_passes = FullPasses(self.queue.call_when_idle)

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
        await self.handle.start_services()  # e.g. a first metrics fetch, so the first cycle is not blind
        self.full_passes.settle()
        self._background.append(asyncio.create_task(self.full_passes.run(), name="cycle-collector"))
        log.info(
            "caches synced: %d nodes, %d pods pending",
            self.table.num_nodes,
            sum(self.queue.counts().values()),
        )

    async def run(self) -> None:
        """Schedule until cancelled (the caller cancels when leadership ends or on shutdown)."""
        while True:
            item = await self.queue.pop()
            if self.extenders:
                await self.schedule_one_async(item)
            else:
                self.schedule_one(item)
            # Let watch events and bindings in between cycles. Binding tasks that resumed (a pod
            # allowed or rejected at Permit) run here, before the next cycle; Coscheduling's
            # late Unreserve waits for the queue to go idle instead (``handle.when_idle``).
            await asyncio.sleep(0)

    async def stop(self, grace: float = 5.0) -> None:
        """Wait a little for bindings in flight, then stop everything we started."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        await self.pod_status.close(grace)
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for task in [*self._tasks, *self._background]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.full_passes.restore()
        await self.events.stop()
        await self.handle.stop_services()
        for extender in self.extenders:
            await extender.close()

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _reject_if_waiting(self, uid: str) -> None:
        """A deleted pod that a Permit plugin holds stops waiting (kube-scheduler rejects it as "removed")."""
        waiting = self.handle.waiting_pods.get(uid)
        if waiting is not None:
            waiting.reject("", "removed")

    def _gated(self, pod: PodInfo) -> bool:
        """The queue's PreEnqueue check for a pod on its way back in (a preemptor whose victims
        are still being evicted waits, as kube-scheduler's DefaultPreemption keeps it)."""
        framework = self.frameworks.get(pod.scheduler_name)
        return framework is not None and not framework.run_pre_enqueue(pod).is_success

    def _activate(self, pods: list[PodInfo]) -> None:
        """``handle.activate``: plugins move waiting pods (a gang's siblings) to the active queue."""
        moved = self.queue.activate(pod.key for pod in pods)
        if moved:
            log.debug("%d pods activated by a plugin", moved)

    def _cluster_event(self, event: ClusterEvent, old: Any, new: Any, skip: str = "") -> None:
        """Move back the unschedulable pods that ``event`` may help, by their rejectors' queueing hints.

        ``skip``: a pod the event is about itself (its own room freed), which it cannot help.
        """

        def worth(item: QueuedPod[PodInfo]) -> bool:
            if item.pod.key == skip:
                return False
            framework = self.frameworks.get(item.pod.scheduler_name)
            return framework is None or framework.worth_requeuing(item.pod, item.rejectors, event, old, new)

        moved = self.queue.move_all_to_active_or_backoff(event.label, worth)
        if moved:
            log.debug("%s: %d unschedulable pods back in the queue", event.label, moved)

    def _requeue_on(self, informer: Informer) -> Callable[[str, Any, Any], None]:
        """Changes to an object plugins read are cluster events too (``PersistentVolumeClaimAdd``...)."""
        kind = informer.resource.kind

        def requeue(action: str, old: Any, new: Any) -> None:
            self._cluster_event(ClusterEvent(kind, _ACTIONS[action]), old, new)

        return requeue

    async def _report_pending(self) -> None:
        while True:
            counts = self.queue.counts()
            counts["gated"] += len(self.handlers.gated)
            for queue_name, count in counts.items():
                self.metrics.pending_pods.labels(queue_name).set(count)
            await asyncio.sleep(1)

    # -- the scheduling cycle ----------------------------------------------------------
    def schedule_one(self, item: QueuedPod[PodInfo]) -> None:
        framework = self.frameworks[item.pod.scheduler_name]
        started = time.perf_counter()
        state = CycleState()
        try:
            result = framework.schedule(item.pod, self.table, state)
        except Exception as error:
            self._cycle_crashed(item, framework, error, started)
            return
        self._after_schedule(item, framework, state, result, started)

    async def schedule_one_async(self, item: QueuedPod[PodInfo]) -> None:
        """``schedule_one`` when extenders are configured: their HTTP calls are awaited mid-cycle.

        Cycles still run one at a time (``run`` awaits this), so only watch events and
        bindings run meanwhile; the framework finds the nodes again by name afterwards.
        """
        framework = self.frameworks[item.pod.scheduler_name]
        started = time.perf_counter()
        state = CycleState()
        try:
            result = await framework.schedule_async(item.pod, self.table, state)
        except Exception as error:
            self._cycle_crashed(item, framework, error, started)
            return
        self._after_schedule(item, framework, state, result, started)

    def _cycle_crashed(
        self, item: QueuedPod[PodInfo], framework: Framework, error: Exception, started: float
    ) -> None:
        log.exception("error scheduling pod %s", item.pod.key, exc_info=error)
        message = f"running the scheduling framework: {error}"
        self._failed(item, framework.scheduler_name, message, started, unschedulable=False)

    def _after_schedule(
        self,
        item: QueuedPod[PodInfo],
        framework: Framework,
        state: CycleState,
        result: ScheduleResult,
        started: float,
    ) -> None:
        """Assume, Reserve and Permit on the chosen node, then bind in the background; or report why not."""
        pod = item.pod
        profile = framework.scheduler_name
        node = result.node_name
        if node is None:
            unschedulable = result.status.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            diagnosis = result.diagnosis
            rejectors = frozenset(diagnosis.unschedulable_plugins) if diagnosis is not None else frozenset()
            self._failed(
                item,
                profile,
                result.message,
                started,
                unschedulable=unschedulable,
                rejectors=rejectors,
                nominated=result.nominated_node,
            )
            return
        self.pod_status.forget(pod.uid)  # an unsent failure of an earlier attempt is obsolete now
        self.assumed.assume(pod, node)
        status = framework.reserve(state, pod, node)
        waiting: WaitingPod | None = None
        if status.is_success:
            permit = framework.permit(state, pod, node)
            status = permit.status
            if status.code == Code.WAIT:
                # Held by a Permit plugin: the pod keeps its room while its binding cycle waits.
                waiting = self.handle.waiting_pods.add(pod, node, permit.timeouts)
                status = SUCCESS
        if not status.is_success:
            framework.unreserve(state, pod, node)
            self.assumed.forget(pod)
            rejectors = frozenset({status.plugin} if status.plugin else ())
            self._failed(item, profile, status.message, started, status.is_rejected, rejectors)
            return
        self._spawn(
            self._binding_cycle(item, framework, state, node, started, waiting), name=f"bind-{pod.key}"
        )

    def _failed(
        self,
        item: QueuedPod[PodInfo],
        profile: str,
        message: str,
        started: float,
        unschedulable: bool,
        rejectors: frozenset[str] = frozenset(),
        nominated: str | None = None,
    ) -> None:
        """Requeue the pod (``rejectors``: the plugins whose events can help it) and tell its user.

        ``nominated``: the nomination PostFilter changed (a node, or "" for none), written in
        the same status patch as the condition, as kube-scheduler's failure handler does.
        """
        pod = item.pod
        result = "unschedulable" if unschedulable else "error"
        self.metrics.schedule_attempts.labels(result, profile).inc()
        self.metrics.attempt_duration.labels(result, profile).observe(time.perf_counter() - started)
        log.info("unable to schedule pod %s: %s", pod.key, message)
        self.queue.requeue_failed(item, unschedulable=unschedulable, rejectors=rejectors)
        self.events.failed(pod, profile, message)
        reason = UNSCHEDULABLE if unschedulable else SCHEDULER_ERROR
        self.pod_status.update(pod, reason=reason, message=message, nominated=nominated)

    async def _binding_cycle(
        self,
        item: QueuedPod[PodInfo],
        framework: Framework,
        state: CycleState,
        node: str,
        started: float,
        waiting: WaitingPod | None,
    ) -> None:
        pod = item.pod
        profile = framework.scheduler_name
        if waiting is not None:
            try:
                allowed = await waiting.wait()
            finally:
                self.handle.waiting_pods.remove(pod.uid)
            if not allowed.is_success:
                framework.unreserve(state, pod, node)
                self.assumed.forget(pod)
                rejectors = frozenset({allowed.plugin} if allowed.plugin else ())
                # The pod had room: cluster events during its wait cannot be why it failed, so
                # they do not send it to backoff (see SchedulingQueue.drop_events_in_flight).
                self.queue.drop_events_in_flight(pod.key)
                self._failed(item, profile, allowed.message, started, allowed.is_rejected, rejectors)
                # The room the pod held while it waited is free again: pods waiting for room may
                # fit now. After the requeue, as kube-scheduler defers it (handleBindingCycleError).
                self._cluster_event(ClusterEvent(POD, ActionType.DELETE), pod, None, skip=pod.key)
                return
        # PreBind may wait long (volumes being provisioned): only the Bind call takes a slot.
        status = await framework.pre_bind(state, pod, node)
        if status.is_success:
            async with self._bind_slots:
                status = await framework.bind(state, pod, node)
        if not status.is_success:
            framework.unreserve(state, pod, node)
            self.assumed.forget(pod)
            rejectors = frozenset({status.plugin} if status.is_rejected and status.plugin else ())
            # The room the pod held is free again: pods waiting for room may fit now. As
            # kube-scheduler's handleBindingCycleError: after the requeue for a rejection (so
            # the pod itself waits for a new event), before it for an error.
            if not status.is_rejected:
                self._cluster_event(ClusterEvent(POD, ActionType.DELETE), pod, None)
            self._failed(item, profile, status.message, started, status.is_rejected, rejectors)
            if status.is_rejected:
                self._cluster_event(ClusterEvent(POD, ActionType.DELETE), pod, None, skip=pod.key)
            return
        self.assumed.finish_binding(pod)
        self.queue.done(pod.key)
        elapsed = time.perf_counter() - started
        self.metrics.schedule_attempts.labels("scheduled", profile).inc()
        self.metrics.attempt_duration.labels("scheduled", profile).observe(elapsed)
        self.metrics.pod_scheduling_attempts.observe(item.attempts)
        self.metrics.pod_scheduling_sli_duration.labels(str(min(item.attempts, 16))).observe(
            time.monotonic() - item.initial_timestamp
        )
        self.events.scheduled(pod, profile, node)
        self.handle.pod_bound(pod, node)
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
