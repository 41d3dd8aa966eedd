"""A dict of objects kept current by a Reflector, keyed by namespace/name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.reflector import WatchHandler


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKey)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


class ObjectStore:
    """The simplest WatchHandler: the latest version of every object, plus a change hook."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self.objects: dict[str, JSON] = {}
        self._on_change = on_change

    def replace(self, items: list[JSON]) -> None:
        self.objects = {object_key(item): item for item in items}
        self._changed()

    def event(self, kind: str, obj: JSON) -> None:
        key = object_key(obj)
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


class Fanout:
    """One watch feeding several handlers (one Reflector, one stream, many consumers)."""

    def __init__(self, *handlers: WatchHandler) -> None:
        self.handlers = handlers

    def replace(self, items: list[JSON]) -> None:
        for handler in self.handlers:
            handler.replace(items)

    def event(self, kind: str, obj: JSON) -> None:
        for handler in self.handlers:
            handler.event(kind, obj)
