"""The replay of one profile: a discrete-event loop over a trace, scheduling with the real framework.

Everything the scheduler runs, runs here, in memory and on the simulated clock: the profile's
``Framework`` and plugins (from the plugin registry, as ``secsched score`` builds them), the
scheduling queue with its backoffs and queueing hints, the event handlers that turn pod and node
changes into cluster events, the assumed pods, and the Trimaran services with their collectors and
recently-scheduled cache (fed by ``metrics.SimulatedMetrics``). Only the API server is missing: a
binding is applied to the simulated cluster at once, and a preemption's victims are deleted at once.

The loop takes, in time order, the next trace record (an arrival or a usage sample) or the next
event of its agenda (a departure, a usage scrape, a measurement, a Permit timeout, a queue wake-up
for a backoff that ends), and after each instant pops and schedules every pod the queue hands out.

Gangs: a record's ``group`` and ``minMember`` make a PodGroup, delivered to the PodGroup informer
(Coscheduling's) before its first member arrives, as a live cluster's watch would deliver it; a
gang's members wait at Permit while their binding cycles wait (as tasks), and their Permit
timeout is a timer on the agenda: it fires in simulated time.
"""

from __future__ import annotations

import asyncio
import datetime
import gc
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from secondary_scheduler.config.model import Profile, SchedulerConfiguration
from secondary_scheduler.framework import Framework, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.events import ActionType, ClusterEvent
from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.framework.interface import Plugin
from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.store import Fanout
from secondary_scheduler.plugins.coscheduling.podgroup import PODGROUPS
from secondary_scheduler.replay.api import ReplayApi
from secondary_scheduler.replay.clock import Agenda, Event, Kind, SimClock, Timer
from secondary_scheduler.replay.cluster import ClusterLoad, StartingCluster, requests_of
from secondary_scheduler.replay.metrics import MetricsSettings, SimulatedMetrics
from secondary_scheduler.replay.report import Measures, ProfileResult
from secondary_scheduler.replay.trace import PodArrival, ReplayRecord, UsageBatch, UsageSample
from secondary_scheduler.scheduler.assumed import AssumedPods
from secondary_scheduler.scheduler.eventhandlers import EventHandlers
from secondary_scheduler.scheduler.garbage import FullPasses
from secondary_scheduler.scheduler.metrics import SchedulerMetrics
from secondary_scheduler.scheduler.queue import QueuedPod, SchedulingQueue
from secondary_scheduler.scheduler.schedule_one import ScheduleOne

MEASURE_INTERVAL_SECONDS = 60.0
"""How often the report's measures are taken (node-minutes are counted at this resolution)."""
FULL_PASS_INTERVAL_SECONDS = 2.0
"""Wall seconds between two of the cycle collector's full passes during a replay (see ``run``)."""
YOUNG_PASS_OBJECTS = 50_000
"""The cycle collector's youngest-generation threshold during a replay (700 by default): a trace
record lives for one instant, so with passes this far apart nearly all are gone before one walks them."""
MIN_QUEUE_WAKE_SECONDS = 0.01
"""The queue is never woken sooner than this after now (as the scheduler's loop waits at least this)."""
_ACTIONS = {"ADDED": ActionType.ADD, "MODIFIED": ActionType.UPDATE_OTHER, "DELETED": ActionType.DELETE}
"""A watch event's kind as the action of a cluster event, as the scheduler maps its informers' changes."""


class ReplayError(Exception):
    """The replay cannot go on as asked; the message says why and what to do."""


@dataclass(frozen=True)
class ReplayOptions:
    target: float = 0.7
    """The CPU utilisation (a fraction of capacity) the report counts nodes over."""
    seed: int = 0
    """Seeds the framework's tie-breaking (and preemption's random start), so a replay repeats."""
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    measure_interval: float = MEASURE_INTERVAL_SECONDS


@dataclass
class _Pending:
    arrival: PodArrival
    manifest: dict[str, Any]


class _NoEvents:
    """Scheduled and FailedScheduling Events go nowhere: the report counts outcomes itself."""

    def scheduled(self, pod: PodInfo, scheduler_name: str, node: str) -> None:
        """Dropped."""

    def failed(self, pod: PodInfo, scheduler_name: str, message: str) -> None:
        """Dropped."""


class _NoPodStatus:
    """A pending pod's PodScheduled condition is not written: no one reads it in a replay."""

    def update(
        self, pod: PodInfo, *, reason: str | None = None, message: str = "", nominated: str | None = None
    ) -> None:
        """Dropped."""

    def forget(self, uid: str) -> None:
        """Nothing kept."""


class ProfileReplay:
    """One profile's replay over one trace, from a fresh copy of the starting cluster."""

    def __init__(
        self,
        profile: Profile,
        config: SchedulerConfiguration,
        registry: Mapping[str, type[Plugin]],
        cluster: StartingCluster,
        options: ReplayOptions,
        *,
        epoch: float = 0.0,
        config_label: str = "",
    ) -> None:
        self.profile = profile
        self.options = options
        self.config_label = config_label
        self.clock = SimClock(epoch)
        self.load = ClusterLoad(cluster)
        self.agenda = Agenda()
        self.api = ReplayApi(bind=self._binding_posted, delete=self._deletion_sent, get=self._pod_object)
        self.handle = Handle(
            client=cast(ApiClient, self.api),
            clock=self.clock.monotonic,
            wall_clock=self.clock.wall,
            activator=self._activate,
            idle_notifier=lambda callback: self.queue.call_when_idle(callback),
        )
        self.handle.waiting_pods.call_later = self._call_later
        self.metrics = SimulatedMetrics(self.load, self.clock, options.metrics, self.handle)
        try:
            self.framework = Framework(
                profile,
                registry,
                self.handle,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                rng=random.Random(options.seed),
            )
        except ValueError as error:  # the framework's words already name the profile
            raise ReplayError(str(error)) from error
        self.handle.informers.fill(cluster.objects)
        self.queue: SchedulingQueue[PodInfo] = SchedulingQueue(
            self.framework.run_queue_sort_less,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            clock=self.clock.monotonic,
            gate=self._gated,
        )
        self.table = NodeTable()
        self.assumed = AssumedPods(self.table, clock=self.clock.monotonic)
        frameworks = {profile.scheduler_name: self.framework}
        self.handlers = EventHandlers(
            self.table,
            self.queue,
            frameworks,
            self.assumed,
            on_event=self._cluster_event,
            on_deleted=self._reject_if_waiting,
        )
        self.pods = Fanout(self.handlers.pods, *self.handle.shared.pod_handlers)
        """The pod watch as the scheduler's reflector feeds it: the event handlers, then the plugins'."""
        for informer in self.handle.informers.all():
            informer.add_listener(self._requeue_on(informer))
        self.podgroups = next(
            (informer for informer in self.handle.informers.all() if informer.resource == PODGROUPS), None
        )
        """The PodGroup informer, when a plugin of the profile reads PodGroups (Coscheduling)."""
        self.cycle = ScheduleOne(
            frameworks,
            self.table,
            self.assumed,
            self.queue,
            events=_NoEvents(),
            pod_status=_NoPodStatus(),
            metrics=SchedulerMetrics(),
            on_cluster_event=self._cluster_event,
            clock=self.clock.monotonic,
        )
        self.handlers.nodes.replace(cluster.nodes)
        self.pods.replace(cluster.pods)
        self.load.count_static_pods(cluster.pods)
        self.measures = Measures(self.load, options.target, options.measure_interval)
        self.placements: dict[str, str] = {}
        """Pod key -> the node it was bound to (its latest binding)."""
        self._pending: dict[str, _Pending] = {}
        self._bound: dict[str, dict[str, Any]] = {}
        """Pod key -> its bound manifest, while it runs."""
        self._watch: list[tuple[str, dict[str, Any]]] = []
        """Pod watch events the API calls caused, delivered once the call's caller is done."""
        self._holding: dict[asyncio.Task[None], PodInfo] = {}
        """Binding cycles of pods a Permit plugin holds (a gang's members), by task."""
        self._wake_at = math.inf
        self.decisions = 0
        self.preempted = 0
        self.waits: list[float] = []
        """Seconds each pod that did not bind on arrival waited for its node."""
        self.never_bound = 0
        """Pods that left (or the trace ended) without ever being bound."""

    @property
    def name(self) -> str:
        return self.profile.scheduler_name

    async def run(
        self, records: Iterable[ReplayRecord], progress: Callable[[float], None] | None = None
    ) -> ProfileResult:
        """Replay ``records`` (in ``t`` order: a trace's ``stream()``, or its ``records()``) to the last
        one's time; the profile's measures.

        Instant by instant: the agenda's events before it, the departures at it, the trace's records
        at it (the usage samples of an instant applied together), the agenda's other events at it,
        then the queue's turn. ``progress(t)`` hears each instant.
        """
        started = time.perf_counter()
        # As the scheduler does (scheduler.garbage): automatic full passes of the cycle collector
        # would walk the whole state again and again (a third of a week's replay at 1,000 nodes);
        # the replay makes them itself between instants, each walking only what is new.
        passes = FullPasses(self.queue.call_when_idle)
        passes.settle()
        _young, middle, oldest = gc.get_threshold()
        gc.set_threshold(YOUNG_PASS_OBJECTS, middle, oldest)  # restore() gives back the collector's own
        try:
            end = await self._replay(records, progress, passes)
        finally:
            passes.restore()
            gc.unfreeze()
        self.never_bound += len(self._pending)
        return self.measures.result(
            name=self.name,
            config=self.config_label,
            decisions=self.decisions,
            seconds=time.perf_counter() - started,
            waits=self.waits,
            unschedulable=self.never_bound,
            preempted=self.preempted,
            sources=self.metrics.sources,
            duration=end,
        )

    async def _replay(
        self, records: Iterable[ReplayRecord], progress: Callable[[float], None] | None, passes: FullPasses
    ) -> float:
        """``run``'s loop; returns the last record's time."""
        if self.metrics.providers:  # else no plugin reads metrics: nothing to scrape
            self.metrics.sample()
            self.agenda.add(self.options.metrics.scrape_interval, Kind.SAMPLE)
        self.measures.tick(self.clock.now)
        self.agenda.add(self.options.measure_interval, Kind.MEASURE)
        last_pass = time.perf_counter()
        now: float | None = None
        samples: list[UsageSample | UsageBatch] = []
        collect = samples.append  # once per record: kept local
        for record in records:
            t = record.t
            if t != now:
                if now is not None:
                    await self._instant_done(now, samples, progress)
                    samples.clear()
                    if time.perf_counter() - last_pass >= FULL_PASS_INTERVAL_SECONDS:
                        passes.full_pass()
                        last_pass = time.perf_counter()
                    if t < now:
                        raise ReplayError(f"trace records go back in time, from t={now} to t={t}")
                now = t
                await self._agenda_until(now, Kind.ARRIVAL)
                self._advance(now)
            if type(record) is UsageBatch or type(record) is UsageSample:
                collect(record)
            else:
                assert type(record) is PodArrival
                if samples:  # the samples before it first: it may be sampled again after it arrives
                    self.load.apply(samples)
                    samples.clear()
                self._arrive(record)
        end = 0.0 if now is None else now
        if now is not None:
            await self._instant_done(now, samples, progress)
        await self._agenda_until(end, Kind.QUEUE, inclusive=True)
        self._advance(end)
        self.measures.tick(end)
        for task in self._holding:
            task.cancel()
        return end

    async def _instant_done(
        self, now: float, samples: list[UsageSample | UsageBatch], progress: Callable[[float], None] | None
    ) -> None:
        """The trace's records at ``now`` are read: its last samples, the agenda's other events at it,
        then the queue's turn."""
        if samples:
            self.load.apply(samples)
        await self._agenda_until(now, Kind.QUEUE, inclusive=True)
        await self._drain()
        if progress is not None:
            progress(now)

    # -- the loop ---------------------------------------------------------------------------------
    async def _agenda_until(self, moment: float, kind: Kind, *, inclusive: bool = False) -> None:
        """Handle the agenda's events before (``moment``, ``kind``), or up to it with ``inclusive``;
        the queue gets its turn after each instant the agenda alone fills."""
        limit = (moment, kind)
        while (next_time := self.agenda.peek_time()) is not None:
            position = (next_time, self.agenda.peek_kind())
            if position > limit or (position == limit and not inclusive):
                return
            event = self.agenda.pop()
            self._handle(event)
            following = self.agenda.peek_time()
            if event.time < moment and (following is None or following > event.time):
                await self._drain()

    def _advance(self, to: float) -> None:
        if to > self.clock.now:
            self.clock.advance(to)

    def _handle(self, event: Event) -> None:
        self._advance(event.time)
        if event.kind == Kind.DEPARTURE:
            self._depart(event.payload)
        elif event.kind == Kind.SAMPLE:
            self.metrics.sample()
            self.agenda.add(event.time + self.options.metrics.scrape_interval, Kind.SAMPLE)
        elif event.kind == Kind.MEASURE:
            self.measures.tick(event.time)
            self.agenda.add(event.time + self.options.measure_interval, Kind.MEASURE)
        elif event.kind == Kind.TIMER:
            event.payload.fire()
        elif event.kind == Kind.QUEUE:
            self._wake_at = math.inf

    def _arrive(self, arrival: PodArrival) -> None:
        if arrival.end is not None and arrival.end <= arrival.t:
            return  # gone as soon as created: the scheduler never sees it
        if arrival.group is not None:
            self._pod_group_of(arrival)
        manifest = arrival.manifest(self.name)
        key = arrival.key
        cpu, memory = requests_of(arrival.requests)
        self.load.pod_arrived(key, cpu, memory)
        self._pending[key] = _Pending(arrival, manifest)
        if arrival.end is not None:
            self.agenda.add(arrival.end, Kind.DEPARTURE, key)
        self.pods.event("ADDED", manifest)

    def _pod_group_of(self, arrival: PodArrival) -> None:
        """The PodGroup a gang member names: made from the record's ``minMember`` when its first
        member arrives (created then, as a deploy creates it with its pods), or the starting
        cluster's; a member that contradicts it stops the replay."""
        informer = self.podgroups
        group = arrival.group
        if informer is None or group is None:
            return  # no plugin of the profile reads PodGroups: the label is only a label
        existing = informer.get(group, arrival.namespace)
        if existing is not None:
            min_member = (existing.get("spec") or {}).get("minMember")
            if arrival.min_member is not None and arrival.min_member != min_member:
                raise ReplayError(
                    f"pod {arrival.key}: minMember={arrival.min_member} but its PodGroup "
                    f"{arrival.namespace}/{group} has minMember {min_member}: give every member of a "
                    "group the same minMember"
                )
            return
        if arrival.min_member is None:
            raise ReplayError(
                f"pod {arrival.key}: group={group!r} names a PodGroup that neither the starting cluster "
                "nor an earlier record made: set minMember on the group's records"
            )
        created = datetime.datetime.fromtimestamp(self.clock.wall(), datetime.UTC)
        informer.event(
            "ADDED",
            {
                "apiVersion": PODGROUPS.api_version,
                "kind": PODGROUPS.kind,
                "metadata": {
                    "name": group,
                    "namespace": arrival.namespace,
                    "uid": f"podgroup-{arrival.namespace}-{group}",
                    "resourceVersion": "1",
                    "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
                "spec": {"minMember": arrival.min_member},
            },
        )

    def _depart(self, key: str) -> None:
        """The trace deletes the pod: pending or running, it is gone (a victim is gone already)."""
        pending = self._pending.pop(key, None)
        if pending is not None:
            self.never_bound += 1
            self.load.remove(key)
            self.pods.event("DELETED", pending.manifest)
            return
        bound = self._bound.pop(key, None)
        if bound is not None:
            self.load.remove(key)
            self.pods.event("DELETED", bound)

    async def _drain(self) -> None:
        """Schedule every pod the queue hands out now; then set a wake-up for the next one due."""
        while True:
            await self._settle()
            item = self.queue.pop_nowait()
            if item is None:
                if self._unsettled():
                    continue  # the queue's idle callbacks released held pods: they may requeue
                break
            await self.metrics.catch_up()
            self.decisions += 1
            binding = self.cycle.scheduling_cycle(item)
            if binding is None:
                continue
            if binding.waiting is None:
                await self.cycle.binding_cycle(binding)
            else:
                task = asyncio.get_running_loop().create_task(self.cycle.binding_cycle(binding))
                self._holding[task] = item.pod
                task.add_done_callback(self._holding.pop)
        self._schedule_wake()

    async def _settle(self) -> None:
        """Let the work a cycle started run to its end (preemption's evictions, a gang's bindings
        its last member allowed or a rejection ended), then deliver the watch events their API
        calls caused."""
        while self._unsettled():
            while self.handle.shared.tasks or any(self._released(task) for task in self._holding):
                await asyncio.sleep(0)
            events, self._watch = self._watch, []
            for kind, obj in events:
                self.pods.event(kind, obj)

    def _unsettled(self) -> bool:
        return bool(
            self._watch or self.handle.shared.tasks or any(self._released(task) for task in self._holding)
        )

    def _released(self, task: asyncio.Task[None]) -> bool:
        """Whether a held pod's binding cycle can go on (every plugin allowed it, or one rejected it)."""
        waiting = self.handle.waiting_pods.get(self._holding[task].uid)
        return not task.done() and (waiting is None or not waiting.pending_plugins)

    def _schedule_wake(self) -> None:
        """Wake the queue when its next waiting pod is due (a backoff ends, an unschedulable pod's
        periodic retry), as the scheduler's loop would wake from its wait."""
        due = self.queue.next_wake_time()
        if due is None:
            return
        wake = max(due, self.clock.now + MIN_QUEUE_WAKE_SECONDS)
        if wake < self._wake_at:
            self._wake_at = wake
            self.agenda.add(wake, Kind.QUEUE)

    def _call_later(self, seconds: float, callback: Callable[..., object], *args: Any) -> Timer:
        """The Permit timeouts' timer (``WaitingPods.call_later``): an agenda event in simulated time."""
        timer = Timer(callback, args)
        self.agenda.add(self.clock.now + seconds, Kind.TIMER, timer)
        return timer

    # -- what the API server would do -------------------------------------------------------------
    def _binding_posted(self, key: str, node: str) -> None:
        pending = self._pending.pop(key, None)
        if pending is None:
            raise ApiError(404, "NotFound", f'pods "{key}" not found')
        manifest = {**pending.manifest, "spec": {**pending.manifest["spec"], "nodeName": node}}
        self._bound[key] = manifest
        self.placements[key] = node
        self.load.place(key, node)
        waited = self.clock.now - pending.arrival.t
        if waited > 0:
            self.waits.append(waited)
        self._watch.append(("MODIFIED", manifest))

    def _deletion_sent(self, key: str) -> bool:
        """Preemption evicts a victim: it is deleted at once (its VM is gone; nothing recreates it)."""
        bound = self._bound.pop(key, None)
        if bound is None:
            return False
        self.preempted += 1
        self.load.remove(key)
        self._watch.append(("DELETED", bound))
        return True

    def _pod_object(self, key: str) -> dict[str, Any] | None:
        bound = self._bound.get(key)
        if bound is not None:
            return bound
        pending = self._pending.get(key)
        return pending.manifest if pending is not None else None

    # -- the scheduler's wiring of queue, events and plugins ----------------------------------------
    def _cluster_event(self, event: ClusterEvent, old: Any, new: Any, skip: str = "") -> None:
        """Move back the unschedulable pods ``event`` may help, by their rejectors' queueing hints."""

        def worth(item: QueuedPod[PodInfo]) -> bool:
            if item.pod.key == skip:
                return False
            return self.framework.worth_requeuing(item.pod, item.rejectors, event, old, new)

        self.queue.move_all_to_active_or_backoff(event.label, worth)

    def _requeue_on(self, informer: Informer) -> Callable[[str, Any, Any], None]:
        """Changes to objects plugins read (a PodGroup's creation) are cluster events too."""
        kind = informer.resource.kind

        def requeue(action: str, old: Any, new: Any) -> None:
            self._cluster_event(ClusterEvent(kind, _ACTIONS[action]), old, new)

        return requeue

    def _reject_if_waiting(self, uid: str) -> None:
        """A deleted pod that a Permit plugin holds stops waiting (kube-scheduler rejects it as "removed")."""
        waiting = self.handle.waiting_pods.get(uid)
        if waiting is not None:
            waiting.reject("", "removed")

    def _gated(self, pod: PodInfo) -> bool:
        """PreEnqueue on a pod's way back into the queue (a preemptor waits for its victims to go)."""
        return not self.framework.run_pre_enqueue(pod).is_success

    def _activate(self, pods: list[PodInfo]) -> None:
        self.queue.activate(pod.key for pod in pods)
