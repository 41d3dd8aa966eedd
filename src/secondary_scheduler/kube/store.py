"""A dict of objects kept current by a Reflector, keyed by namespace/name."""

from __future__ import annotations

from collections.abc import Callable

from .client import JSON
from .reflector import WatchHandler


def object_key(obj: JSON) -> str:
    meta = obj.get("metadata", {})
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


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
