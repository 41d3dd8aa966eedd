"""Which NodeResourceTopology the plugin trusts for a node, between two reports of its exporter.

An exporter reports a node's NUMA zones after the kubelet admitted pods, so for a while
after a binding the object still shows the room the pod took: the next pod could be sent
to the same zone and be rejected by the kubelet. scheduler-plugins offers three answers,
chosen by the args as upstream's plugin.go does, and so do we:

- ``Passthrough`` (cacheResyncPeriodSeconds <= 0): the object as the informer has it.
- ``DiscardReserved`` (discardReservedNodes): a node with a pod reserved but not yet bound
  is not trusted (Filter rejects it, Score gives 0) until the binding is done.
- ``OverReserve`` (cacheResyncPeriodSeconds > 0): the objects as they were when the cache
  started, minus what the scheduler reserved since; a node is refreshed from the latest
  object only when its exporter's pod-set fingerprint matches the pods the scheduler sees
  there (the resync, every cacheResyncPeriodSeconds), and a node running pods of another
  scheduler is not trusted until then (foreign pods).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.kube.quantity import QuantityError, parse_quantity
from secondary_scheduler.plugins.noderesourcetopology import fingerprint
from secondary_scheduler.plugins.noderesourcetopology.podresources import pod_resources
from secondary_scheduler.plugins.noderesourcetopology.topology import (
    deep_copy,
    pods_fingerprint,
    topology_manager,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CachedInfo:
    generation: int = 0
    fresh: bool = False
    """False: the node's data cannot be trusted now (Filter rejects the node, Score gives 0)."""


class NRTCache(Protocol):
    """What Filter, Score, Reserve, Unreserve and PostBind ask of the cache (upstream's Interface)."""

    def get(self, node: str, pod: KubeObject) -> tuple[KubeObject | None, CachedInfo]: ...

    def node_maybe_over_reserved(self, node: str, pod: KubeObject) -> None: ...

    def node_has_foreign_pods(self, node: str, pod: KubeObject) -> None: ...

    def reserve(self, node: str, pod: KubeObject) -> None: ...

    def unreserve(self, node: str, pod: KubeObject) -> None: ...

    def post_bind(self, node: str, pod: KubeObject) -> None: ...


def _key(pod: KubeObject) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _uid(pod: KubeObject) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


class Passthrough:
    def __init__(self, informer: Informer) -> None:
        self.informer = informer

    def get(self, node: str, pod: KubeObject) -> tuple[KubeObject | None, CachedInfo]:
        found = self.informer.get(node)
        return (deep_copy(found) if found is not None else None), CachedInfo(fresh=True)

    def node_maybe_over_reserved(self, node: str, pod: KubeObject) -> None:
        pass

    def node_has_foreign_pods(self, node: str, pod: KubeObject) -> None:
        pass

    def reserve(self, node: str, pod: KubeObject) -> None:
        pass

    def unreserve(self, node: str, pod: KubeObject) -> None:
        pass

    def post_bind(self, node: str, pod: KubeObject) -> None:
        pass


class DiscardReserved(Passthrough):
    def __init__(self, informer: Informer) -> None:
        super().__init__(informer)
        self.reserved: dict[str, set[str]] = {}
        """Node -> UIDs of pods reserved there and not bound yet."""

    def get(self, node: str, pod: KubeObject) -> tuple[KubeObject | None, CachedInfo]:
        if self.reserved.get(node):
            return None, CachedInfo()
        return super().get(node, pod)

    def reserve(self, node: str, pod: KubeObject) -> None:
        self.reserved.setdefault(node, set()).add(_uid(pod))

    def unreserve(self, node: str, pod: KubeObject) -> None:
        self.reserved.get(node, set()).discard(_uid(pod))

    def post_bind(self, node: str, pod: KubeObject) -> None:
        self.reserved.get(node, set()).discard(_uid(pod))


def subtract_assumed(nrt: KubeObject, assumed: Iterable[dict[str, Decimal]]) -> None:
    """Take each assumed pod's effective request from every zone that has the resource (upstream's rule).

    Upstream cannot know the zone the kubelet will pick, so it over-reserves: the request is
    taken from each zone; a zone with less left is set to zero.
    """
    for requests in assumed:
        for zone in nrt.get("zones") or ():
            for item in zone.get("resources") or ():
                quantity = requests.get(str(item.get("name", "")))
                if quantity is None:
                    continue
                try:
                    available = parse_quantity(item.get("available", 0))
                except (QuantityError, TypeError):
                    available = Decimal(0)
                item["available"] = "0" if available < quantity else _format(available - quantity)


def _format(quantity: Decimal) -> str:
    return format(quantity.normalize(), "f")


PodFilter = Callable[[KubeObject], bool]


def relevant_shared(pod: KubeObject) -> bool:
    """Shared informer mode: only Running pods count towards a node's pod set."""
    return (pod.get("status") or {}).get("phase") == "Running"


def relevant_dedicated(pod: KubeObject) -> bool:
    """Dedicated informer mode: every bound pod that is not Pending."""
    return (pod.get("status") or {}).get("phase") != "Pending" and bool(
        (pod.get("spec") or {}).get("nodeName")
    )


class PodLister:
    """The pods the scheduler's pod watch shows, for the resync's fingerprints and foreign pods."""

    def __init__(self) -> None:
        self.pods: dict[str, KubeObject] = {}
        self.listeners: list[Callable[[KubeObject], None]] = []

    def replace(self, items: list[dict[str, Any]]) -> None:
        self.pods = {_key(pod): pod for pod in items}
        for pod in items:
            self._tell(pod)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.pods.pop(_key(obj), None)
        else:
            self.pods[_key(obj)] = obj
        self._tell(obj)

    def _tell(self, pod: KubeObject) -> None:
        for listener in self.listeners:
            listener(pod)


@dataclass
class CacheSettings:
    """The ``cache`` args, as the overreserve cache uses them."""

    foreign_pods_detect: str = "All"
    resync_method: str = "Autodetect"
    informer_mode: str = "Dedicated"
    resync_scope: str = "All"


class OverReserve:
    def __init__(
        self, informer: Informer, pods: PodLister, settings: CacheSettings, profiles: set[str]
    ) -> None:
        self.informer = informer
        self.pods = pods
        self.settings = settings
        self.profiles = profiles
        """Scheduler names whose pods are not foreign (every profile that runs this cache)."""
        self.generation = 0
        self._store: dict[str, KubeObject] | None = None
        self.assumed: dict[str, dict[str, dict[str, Decimal]]] = {}
        """Node -> pod key -> the pod's effective request, reserved since the node's last flush."""
        self.maybe_over_reserved: dict[str, int] = {}
        self.foreign: dict[str, int] = {}
        self.attributes_changed: dict[str, int] = {}
        self.relevant = relevant_dedicated if settings.informer_mode == "Dedicated" else relevant_shared
        if settings.foreign_pods_detect != "None":
            pods.listeners.append(self._maybe_foreign)
        if settings.resync_scope == "All":
            informer.add_listener(self._maybe_attributes_changed)

    @property
    def store(self) -> dict[str, KubeObject]:
        """The objects as first listed: taken from the informer on first use (after it synced)."""
        if self._store is None:
            self._store = {str(obj["metadata"]["name"]): deep_copy(obj) for obj in self.informer}
        return self._store

    def start(self) -> None:
        """Take the initial list now (the scheduler calls this once the informers synced)."""
        _ = self.store

    def get(self, node: str, pod: KubeObject) -> tuple[KubeObject | None, CachedInfo]:
        if node in self.foreign:
            return None, CachedInfo(self.generation, fresh=False)
        info = CachedInfo(self.generation, fresh=True)
        cached = self.store.get(node)
        if cached is None:
            return None, info
        nrt = deep_copy(cached)
        assumed = self.assumed.get(node)
        if assumed:
            subtract_assumed(nrt, assumed.values())
        return nrt, info

    def node_maybe_over_reserved(self, node: str, pod: KubeObject) -> None:
        self.maybe_over_reserved[node] = self.maybe_over_reserved.get(node, 0) + 1

    def node_has_foreign_pods(self, node: str, pod: KubeObject) -> None:
        if node not in self.store:
            return
        self.foreign[node] = self.foreign.get(node, 0) + 1

    def reserve(self, node: str, pod: KubeObject) -> None:
        self.assumed.setdefault(node, {})[_key(pod)] = pod_resources(pod).effective
        self.maybe_over_reserved.pop(node, None)

    def unreserve(self, node: str, pod: KubeObject) -> None:
        self.assumed.get(node, {}).pop(_key(pod), None)

    def post_bind(self, node: str, pod: KubeObject) -> None:
        pass

    # -- what keeps it honest -----------------------------------------------------------------
    def _maybe_foreign(self, pod: KubeObject) -> None:
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node or spec.get("schedulerName", "default-scheduler") in self.profiles:
            return
        if (
            self.settings.foreign_pods_detect == "OnlyExclusiveResources"
            and not pod_resources(pod).has_exclusive()
        ):
            return
        self.node_has_foreign_pods(str(node), pod)

    def _maybe_attributes_changed(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if kind != "MODIFIED" or new is None or self._store is None:
            return
        name = str(new["metadata"]["name"])
        current = self._store.get(name)
        if current is not None and topology_manager(current) != topology_manager(new):
            self.attributes_changed[name] = self.attributes_changed.get(name, 0) + 1

    def resync(self) -> list[str]:
        """Refresh the nodes that may be off from their latest objects, when those are trustworthy."""
        dirty = sorted(set(self.foreign) | set(self.maybe_over_reserved))
        changed = sorted(self.attributes_changed)
        if not dirty and not changed:
            return []
        by_node: dict[str, list[KubeObject]] = {}
        for pod in self.pods.pods.values():
            if self.relevant(pod):
                by_node.setdefault(str((pod.get("spec") or {}).get("nodeName", "")), []).append(pod)
        updates: dict[str, KubeObject] = {}
        for node in dirty:
            latest = self.informer.get(node)
            if latest is None or node not in by_node:
                continue
            expected, only_exclusive = pods_fingerprint(latest, self.settings.resync_method)
            if not expected:
                continue
            pods = [
                (str(p["metadata"].get("namespace", "")), str(p["metadata"].get("name", "")))
                for p in by_node[node]
                if not only_exclusive or pod_resources(p).has_exclusive()
            ]
            try:
                fingerprint.check(pods, expected)
            except fingerprint.FingerprintError as error:
                log.debug("node %s not resynced: %s", node, error)
                continue
            updates[node] = latest
        for node in changed:
            latest = self.informer.get(node)
            if latest is not None:
                updates[node] = latest
        self.flush(updates.values())
        return sorted(updates)

    def flush(self, objects: Iterable[KubeObject]) -> None:
        flushed = False
        for nrt in objects:
            name = str(nrt["metadata"]["name"])
            self.store[name] = deep_copy(nrt)
            self.assumed.pop(name, None)
            self.maybe_over_reserved.pop(name, None)
            self.foreign.pop(name, None)
            self.attributes_changed.pop(name, None)
            flushed = True
        if flushed:
            self.generation += 1


class Resyncer:
    """The service that runs the overreserve cache's resync every period while the scheduler runs."""

    def __init__(self, cache: OverReserve, period_seconds: float) -> None:
        self.cache = cache
        self.period = period_seconds
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.cache.start()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="nrt-cache-resync")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                flushed = self.cache.resync()
            except Exception:
                log.exception("NodeResourceTopology cache resync failed")
                continue
            if flushed:
                log.info("NodeResourceTopology cache: resynced %s", ", ".join(flushed))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
