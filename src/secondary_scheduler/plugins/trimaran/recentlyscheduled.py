"""TargetLoadPacking's cache of recently placed pods, whose load the metrics may not show yet.

Upstream stamps a pod with the time its informer first sees it assigned. At start-up that
is every pod in the cluster, all stamped "now", so for the next minute every node's
existing load is counted twice. We keep two stamps per pod and let the plugin pick:

- ``bound_at`` (ours): when the pod was bound. The scheduler's bind hook (``record``) gives
  it exactly; a pod first seen through the informer (``observe``) takes its PodScheduled
  condition's lastTransitionTime, which the API server sets at binding, and a pod without
  one (created with ``nodeName``) counts as bound long ago.
- ``seen_at`` (upstream's, for parityMode): when this process first saw the pod assigned.

The cache implements the Reflector's WatchHandler (``replace``, ``event``), so the
runtime can feed it straight from its pod informer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.podphase import scheduled_at
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics

KEEP_SECONDS = 60.0
"""Entries older than this (both stamps) are dropped: upstream's metrics reporting interval."""
CLEANUP_INTERVAL_SECONDS = 5 * 60.0
"""How often old entries are dropped, as upstream."""
_LOG_LIMIT = 8192
"""The change log keeps at most this many changes (readers further behind start over)."""

Pod = Mapping[str, Any]


@dataclass
class Entry:
    """One placed pod: the raw Pod, its node, and its two time stamps (Unix seconds)."""

    pod: Pod
    node: str
    bound_at: float | None
    """When it was bound; None when unknown, i.e. long ago."""
    seen_at: float
    """When this process first saw it assigned (upstream's stamp)."""

    def stamp(self, parity: bool) -> float | None:
        """The stamp TargetLoadPacking compares with the metrics window."""
        return self.seen_at if parity else self.bound_at


def pod_key(pod: Pod) -> str:
    """The pod's UID, or namespace/name for pods without one (files given to ``secsched score``)."""
    metadata = pod.get("metadata") or {}
    uid = metadata.get("uid")
    if uid:
        return str(uid)
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


class RecentlyScheduled:
    def __init__(self, telemetry: TrimaranMetrics, *, clock: Callable[[], float] = time.time) -> None:
        self.telemetry = telemetry
        self.clock = clock
        self._entries: dict[str, Entry] = {}
        self._by_node: dict[str, dict[str, Entry]] = {}
        self._last_cleanup = clock()
        self.version = 0
        """Counts every change, so that readers can keep per-node sums and update only what changed."""
        self._changes: list[str] = []
        """The node of each change, from version ``_first_logged`` on (see ``changed_since``)."""
        self._first_logged = 0

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, pod: PodInfo | Pod, node: str, timestamp: float | None = None) -> None:
        """The bind hook: the scheduler bound ``pod`` to ``node`` at ``timestamp`` (default: now)."""
        obj = pod.obj if isinstance(pod, PodInfo) else pod
        when = self.clock() if timestamp is None else timestamp
        self._add(Entry(obj, node, bound_at=when, seen_at=when), "bind")

    def observe(self, pod: Pod) -> None:
        """The informer hook for an added or updated pod: assigned pods enter the cache once."""
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if not node:
            return
        known = self._entries.get(pod_key(pod))
        if known is not None and known.node == node:
            return
        bound_at = scheduled_at(pod)
        entry = Entry(pod, node, bound_at=bound_at, seen_at=self.clock())
        self._add(entry, "scheduled-condition" if bound_at is not None else "old")

    def forget(self, pod: PodInfo | Pod) -> None:
        """The informer hook for a deleted pod."""
        obj = pod.obj if isinstance(pod, PodInfo) else pod
        entry = self._entries.pop(pod_key(obj), None)
        if entry is not None:
            self._unindex(entry)
        self.telemetry.recently_scheduled.set(len(self._entries))

    def replace(self, items: list[dict[str, Any]]) -> None:
        """WatchHandler: a (re)list. Pods gone from the list leave; the others keep their stamps."""
        listed = {pod_key(pod) for pod in items}
        for key in [key for key in self._entries if key not in listed]:
            self._unindex(self._entries.pop(key))
        for pod in items:
            self.observe(pod)
        self.telemetry.recently_scheduled.set(len(self._entries))

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        """WatchHandler: one watch event of a pod."""
        if kind == "DELETED":
            self.forget(obj)
        else:
            self.observe(obj)

    def on_nodes(self) -> Iterator[tuple[str, Iterable[Entry]]]:
        """(node, its entries) for every node with entries; drops old entries every 5 minutes first."""
        self.tidy()
        return iter([(node, entries.values()) for node, entries in self._by_node.items()])

    def on_node(self, node: str) -> Iterable[Entry]:
        """The entries of one node (none if it has none)."""
        return self._by_node.get(node, {}).values()

    def tidy(self) -> None:
        """Drop old entries if 5 minutes have passed since the last time (upstream's cleanup period)."""
        now = self.clock()
        if now - self._last_cleanup >= CLEANUP_INTERVAL_SECONDS:
            self._cleanup(now)

    def changed_since(self, version: int) -> set[str] | None:
        """The nodes whose entries changed after ``version``; None when the log no longer reaches
        that far back (the reader starts over from ``on_nodes``)."""
        if version < self._first_logged:
            return None
        return set(self._changes[version - self._first_logged :])

    def _changed(self, node: str) -> None:
        self.version += 1
        self._changes.append(node)
        if len(self._changes) > _LOG_LIMIT:  # readers this far behind start over
            del self._changes[: _LOG_LIMIT // 2]
            self._first_logged = self.version - len(self._changes)

    def _add(self, entry: Entry, stamp: str) -> None:
        key = pod_key(entry.pod)
        previous = self._entries.get(key)
        if previous is not None:
            self._unindex(previous)
        self._entries[key] = entry
        self._by_node.setdefault(entry.node, {})[key] = entry
        self._changed(entry.node)
        self.telemetry.stamped_pods.labels(stamp).inc()
        self.telemetry.recently_scheduled.set(len(self._entries))

    def _unindex(self, entry: Entry) -> None:
        on_node = self._by_node.get(entry.node, {})
        on_node.pop(pod_key(entry.pod), None)
        if not on_node:
            self._by_node.pop(entry.node, None)
        self._changed(entry.node)

    def _cleanup(self, now: float) -> None:
        """Upstream's cleanupCache: forget pods placed more than a reporting interval ago."""
        self._last_cleanup = now
        cutoff = now - KEEP_SECONDS
        old = [
            key
            for key, entry in self._entries.items()
            if entry.seen_at < cutoff and (entry.bound_at is None or entry.bound_at < cutoff)
        ]
        for key in old:
            self._unindex(self._entries.pop(key))
        self.telemetry.recently_scheduled.set(len(self._entries))
