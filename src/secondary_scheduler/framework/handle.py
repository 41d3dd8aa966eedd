"""What plugins get from the framework besides the pod and the nodes.

One ``Handle`` serves every profile of a scheduler (so a resource is watched once and a
service started once, however many profiles use it); each Framework gives its plugins a
view of it bound to that profile (``for_framework``), as kube-scheduler's handle is the
framework itself.

A plugin uses it while it is built, to declare what it needs:

- ``informer(resource)``: the objects of a resource, listed and watched only because some
  plugin asked (filled from the snapshot under ``secsched score``);
- ``register_service(name, service)``: something with ``start()``/``stop()`` shared by plugins
  (a metrics collector), started after the informers synced and stopped on shutdown;
- ``watch_pods(handler)``, ``on_pod_bound(hook)``: the pod events and bindings the runtime sees;

and while it runs, to act: ``client`` (None in memory), ``spawn`` for work that must not
block a cycle, ``waiting_pods`` to allow or reject pods a Permit plugin holds, ``activate``
to move queued pods to the active queue, ``when_idle`` for work that should wait until
the scheduling loop has no pod left to try, and ``framework`` to run the profile's filters
(preemption does, through ``framework.nominated_filter``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from secondary_scheduler.framework.informers import Informer, Informers, Resource
from secondary_scheduler.framework.nominator import Nominator
from secondary_scheduler.framework.waiting import WaitingPods

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from secondary_scheduler.framework.podinfo import PodInfo
    from secondary_scheduler.framework.runtime import Framework
    from secondary_scheduler.kube.client import ApiClient
    from secondary_scheduler.kube.reflector import WatchHandler

log = logging.getLogger(__name__)

PodHook = Callable[["PodInfo", str], None]
"""Called with a pod and its node after the scheduler bound it."""
EventSink = Callable[["PodInfo", str, str, str, str, str], None]
"""Records an Event on a pod: (pod, scheduler name, type, reason, action, note)."""
Activator = Callable[[list["PodInfo"]], None]
"""Moves pods waiting in the scheduling queue (unschedulable or backing off) to the active queue."""
IdleNotifier = Callable[[Callable[[], None]], None]
"""Runs a callback once the scheduling loop has no pod left to try (the queue's ``call_when_idle``)."""

_Service = TypeVar("_Service")


class Service(Protocol):
    """Something plugins share that runs beside the scheduling loop."""

    async def start(self) -> None:
        """Called once the informers have synced, before the first cycle; returns when ready."""
        ...

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class Snapshot:
    """The frozen world ``secsched score`` schedules into, for plugins that read more than objects."""

    now: float
    """Wall-clock seconds (Unix time) at which the snapshot was taken."""
    data: dict[str, Any] = field(default_factory=dict)
    """Top-level snapshot keys beyond nodes, pods and objects (e.g. ``metrics``), parsed."""


@dataclass
class _Shared:
    """The part of a Handle every profile's view shares."""

    informers: Informers = field(default_factory=Informers)
    services: dict[str, object] = field(default_factory=dict)
    pod_handlers: list[WatchHandler] = field(default_factory=list)
    bound_hooks: list[PodHook] = field(default_factory=list)
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    nominator: Nominator = field(default_factory=Nominator)


@dataclass
class Handle:
    client: ApiClient | None = None
    """The scheduler's API client (DefaultBinder posts Bindings with it, preemption evicts with
    it); None when scheduling in memory (``secsched score``, unit tests)."""
    metrics_registry: CollectorRegistry | None = None
    """Where plugins register their Prometheus metrics (the scheduler's /metrics); None: their own."""
    clock: Callable[[], float] = time.monotonic
    """Seconds, monotonic: for plugins that time things (metrics freshness)."""
    wall_clock: Callable[[], float] = time.time
    """Unix seconds; stopped at the snapshot's ``now`` under ``secsched score``."""
    event_sink: EventSink | None = None
    """Where ``record_event`` sends Events (the scheduler's recorder); None drops them."""
    snapshot: Snapshot | None = None
    """Set when scheduling into a snapshot rather than a live cluster."""
    activator: Activator | None = None
    """The scheduler queue's activation (None in memory: there is no queue)."""
    idle_notifier: IdleNotifier | None = None
    """The scheduler queue's ``call_when_idle`` (None in memory: ``when_idle`` calls back at once)."""
    framework: Framework | None = None
    """The profile this view belongs to (None on the shared handle, before a Framework binds it)."""
    shared: _Shared = field(default_factory=_Shared)

    def for_framework(self, framework: Framework) -> Handle:
        """This handle as the plugins of one profile see it: everything shared, ``framework`` set."""
        return replace(self, framework=framework)

    # -- declaring what a plugin needs (while it is built) ----------------------------------
    def informer(self, resource: Resource) -> Informer:
        """The shared informer of ``resource``; the runtime lists and watches it from now on."""
        return self.shared.informers.informer(resource)

    @property
    def informers(self) -> Informers:
        return self.shared.informers

    @property
    def services(self) -> dict[str, object]:
        """Name -> service, shared by all profiles."""
        return self.shared.services

    def register_service(self, name: str, service: object) -> None:
        """Share ``service`` under ``name``; if it has ``start``/``stop`` the runtime calls them."""
        if name in self.shared.services and self.shared.services[name] is not service:
            raise ValueError(f"a different service is already registered as {name!r}")
        self.shared.services[name] = service

    def service(self, name: str, kind: type[_Service]) -> _Service:
        """The shared service registered under ``name``, checked to be a ``kind``."""
        value = self.shared.services.get(name)
        if not isinstance(value, kind):
            raise LookupError(f"no {kind.__name__} registered as service {name!r} in the framework handle")
        return value

    def watch_pods(self, handler: WatchHandler) -> None:
        """Feed ``handler`` the scheduler's pod list+watch (unfinished pods), as it arrives."""
        if handler not in self.shared.pod_handlers:
            self.shared.pod_handlers.append(handler)

    def on_pod_bound(self, hook: PodHook) -> None:
        """Call ``hook(pod, node)`` after each pod this scheduler binds."""
        self.shared.bound_hooks.append(hook)

    # -- what the runtime calls -------------------------------------------------------------
    def pod_bound(self, pod: PodInfo, node: str) -> None:
        for hook in self.shared.bound_hooks:
            hook(pod, node)

    async def start_services(self) -> None:
        for service in list(self.shared.services.values()):
            start = getattr(service, "start", None)
            if callable(start):
                await start()

    async def stop_services(self) -> None:
        """Stop the services and cancel what plugins spawned; failures are logged, never raised."""
        for task in list(self.shared.tasks):
            task.cancel()
        for service in list(self.shared.services.values()):
            stop = getattr(service, "stop", None)
            if callable(stop):
                try:
                    await stop()
                except Exception:
                    log.exception("stopping service %s", type(service).__name__)

    # -- acting while the scheduler runs ------------------------------------------------------
    @property
    def waiting_pods(self) -> WaitingPods:
        """Pods a Permit plugin holds: allow or reject them by UID, or iterate them."""
        return self.shared.waiting_pods

    @property
    def nominator(self) -> Nominator:
        """Pending pods nominated to nodes by preemption: the filters keep their room."""
        return self.shared.nominator

    def record_event(self, pod: PodInfo, event_type: str, reason: str, action: str, note: str) -> None:
        """An Event regarding ``pod``, reported by this profile (e.g. Normal/Preempted/Preempting)."""
        if self.event_sink is not None:
            reporter = self.framework.scheduler_name if self.framework is not None else ""
            self.event_sink(pod, reporter, event_type, reason, action, note)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move these pods to the active queue now, if they wait there (kube-scheduler's PodsToActivate).

        An unschedulable or backing-off pod is tried next; a pod being scheduled right now
        goes to backoff rather than wait for an event when it fails. Others are ignored.
        """
        if self.activator is not None:
            self.activator(list(pods))

    def when_idle(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the scheduling loop has caught up: no pod left to pop right now.

        For work that kube-scheduler does in a binding goroutine, which in practice runs after
        the scheduling goroutine's next cycles (Coscheduling's Unreserve of a pod rejected at
        Permit). In memory there is no loop to wait for: it is called at once.
        """
        if self.idle_notifier is None:
            callback()
        else:
            self.idle_notifier(callback)

    def spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        """Run API work in the background so the scheduling cycle does not wait for it.

        Failures are logged; the task is cancelled when the scheduler stops.
        """
        task = asyncio.get_running_loop().create_task(_logged(coroutine, name), name=name)
        self.shared.tasks.add(task)
        task.add_done_callback(self.shared.tasks.discard)


async def _logged(coroutine: Coroutine[Any, Any, None], name: str) -> None:
    try:
        await coroutine
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s failed", name)
