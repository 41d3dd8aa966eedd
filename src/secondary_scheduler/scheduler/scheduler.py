"""The scheduling loop: informers, queue and profiles wired together; one pod at a time.

``Scheduler`` lists and watches the cluster into the NodeTable and the scheduling queue,
pops pods and hands each to ``ScheduleOne`` (``scheduler.schedule_one``: the scheduling
cycle, then the binding cycle as a background task). The scheduling cycle is synchronous
(numpy over the NodeTable), so nothing changes the cluster state under it; binding is
asynchronous and bounded, so a slow API server delays bindings, not decisions. This is
kube-scheduler's split between the scheduling and the binding cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from secondary_scheduler.config.model import SchedulerConfiguration
from secondary_scheduler.framework.events import ActionType, ClusterEvent
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.framework.interface import Plugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.events.recorder import EventRecorder
from secondary_scheduler.kube.events.sender import DRAIN_SECONDS
from secondary_scheduler.kube.reflector import Reflector
from secondary_scheduler.kube.store import Fanout
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.eventhandlers import EventHandlers
from secondary_scheduler.scheduler.eventrecovery import (
    PREDECESSOR_WRITES_SECONDS,
    RecentlyBound,
    write_missing_events,
)
from secondary_scheduler.scheduler.events import SchedulerEvents
from secondary_scheduler.scheduler.extenders import build_extenders
from secondary_scheduler.scheduler.garbage import FullPasses
from secondary_scheduler.scheduler.metrics import SchedulerMetrics
from secondary_scheduler.scheduler.podstatus import PodStatusWriter
from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue
from secondary_scheduler.scheduler.schedule_one import BIND_CONCURRENCY, ScheduleOne

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
        bind_concurrency: int = BIND_CONCURRENCY,
    ) -> None:
        self.config = config
        self.api = api
        self.metrics = metrics or SchedulerMetrics()
        self.events_api = events_api
        self.events = EventRecorder(events_api, on_dropped=self.metrics.count_dropped_events)
        self.pod_status = PodStatusWriter(api)
        # One handle for every profile: what plugins ask of it (informers, services, pod
        # hooks) is set up once, however many profiles use it.
        self.handle = Handle(
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
        self.recently_bound = RecentlyBound(self.frameworks)
        self.reflectors = [
            Reflector(api, "/api/v1/nodes", self.handlers.nodes, name="nodes"),
            Reflector(
                api,
                "/api/v1/pods",
                Fanout(self.handlers.pods, self.recently_bound, *self.handle.shared.pod_handlers),
                params={"fieldSelector": ACTIVE_PODS_SELECTOR},
                name="pods",
            ),
        ]
        for informer in self.handle.informers.all():
            informer.add_listener(self._requeue_on(informer))
            self.reflectors.append(
                Reflector(api, informer.resource.path, informer, name=informer.resource.plural)
            )
        self.cycle = ScheduleOne(
            self.frameworks,
            self.table,
            self.assumed,
            self.queue,
            events=SchedulerEvents(self.events),
            pod_status=self.pod_status,
            metrics=self.metrics,
            on_cluster_event=self._cluster_event,
            clock=self.queue.clock,
            bind_concurrency=bind_concurrency,
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._background: list[asyncio.Task[None]] = []
        self._events_drain_seconds = DRAIN_SECONDS
        """How long ``stop`` goes on writing queued Events (none once leadership is lost)."""
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
        self._background.append(
            asyncio.create_task(self._write_missing_scheduled_events(), name="missing-scheduled-events")
        )
        while True:
            item = await self.queue.pop()
            if self.extenders:
                binding = await self.cycle.scheduling_cycle_async(item)
            else:
                binding = self.cycle.scheduling_cycle(item)
            if binding is not None:
                self._spawn(self.cycle.binding_cycle(binding), name=f"bind-{item.pod.key}")
            # Let watch events and bindings in between cycles. Binding tasks that resumed (a pod
            # allowed or rejected at Permit) run here, before the next cycle; Coscheduling's
            # late Unreserve waits for the queue to go idle instead (``handle.when_idle``).
            await asyncio.sleep(0)

    def abandon_in_flight(self) -> None:
        """Leadership is lost: stop the bindings and status writes in flight at once, without
        the grace ``stop`` gives them (another replica may lead already; kube-scheduler exits).
        Queued Events are dropped too: the next leader writes the Scheduled ones it finds
        missing (``eventrecovery``), and a late write of ours would make a second."""
        for task in self._tasks:
            task.cancel()
        self.pod_status.abandon()
        self._events_drain_seconds = 0.0

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
        await self.events.stop(self._events_drain_seconds)
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

    async def _write_missing_scheduled_events(self) -> None:
        """Now leading: the Scheduled Events a killed predecessor did not write (``eventrecovery``)."""
        pods = self.recently_bound.take()
        # A predecessor that lost its lease, or whose writes an API server held while stopped,
        # may have Events landing still: list them once those have.
        await asyncio.sleep(PREDECESSOR_WRITES_SECONDS)
        try:
            await write_missing_events(
                self.events_api, pods, SchedulerEvents(self.events), self.recently_bound.window
            )
        except Exception as error:  # a background task: say why, never die silently
            log.warning("not writing the Scheduled Events a previous leader left unwritten: %s", error)

    async def _report_pending(self) -> None:
        while True:
            counts = self.queue.counts()
            for queue_name, count in counts.items():
                self.metrics.pending_pods.labels(queue_name).set(count)
            await asyncio.sleep(1)
