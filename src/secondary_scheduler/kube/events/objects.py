"""What events.k8s.io/v1 and core/v1 Events share: the object an event is about, its name, its times.

Both of client-go's recorders (``tools/events`` and ``tools/record``) build on these.
"""

from __future__ import annotations

import datetime
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

MAX_NOTE = 1024
"""The API server refuses a longer note (events.k8s.io's NoteLengthLimit, in bytes)."""
EVENT_TYPES = ("Normal", "Warning")
DropReason = Literal["queue_full", "rejected", "retry_limit", "shutdown"]
"""Why an event was not written (the scheduler's ``scheduler_events_dropped_total{reason}``)."""

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")


class PodReference(Protocol):
    """A pod an event is about (the scheduler's PodInfo is one)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...


@dataclass(frozen=True)
class ObjectReference:
    """Any other object an event is about."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""


Regarding = ObjectReference | PodReference


def reference(regarding: Regarding) -> dict[str, str]:
    """client-go's reference.GetReference: the ObjectReference an Event carries."""
    if isinstance(regarding, ObjectReference):
        api_version, kind = regarding.api_version, regarding.kind
    else:
        api_version, kind = "v1", "Pod"
    ref = {
        "apiVersion": api_version,
        "kind": kind,
        "namespace": regarding.namespace,
        "name": regarding.name,
        "uid": regarding.uid,
    }
    # GetReference keeps the object's resourceVersion: a pod whose status changed between
    # two failures starts a new Event rather than a series.
    obj = getattr(regarding, "obj", None)
    if isinstance(obj, Mapping):
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            ref["resourceVersion"] = str(version)
    return ref


def stamp(at: float, fraction: bool) -> str:
    """MicroTime (events.k8s.io's eventTime) or Time (core/v1's timestamps) of epoch seconds."""
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if fraction else "%Y-%m-%dT%H:%M:%SZ")


def parse_stamp(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def unix_nanos(clock: Callable[[], float], now: float) -> int:
    """The event's time in nanoseconds for its name: the real clock's own, or the fake clock's."""
    return time.time_ns() if clock is time.time else int(now * 1e9)


def event_name(reference_name: str, unix_nano: int) -> str:
    """client-go's GenerateEventName: ``<name>.<nanoseconds in hex>``, or a UUID if that is no valid name."""
    name = f"{reference_name}.{unix_nano:x}"
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return str(uuid.uuid4())
    return name


def describe(event: dict[str, Any]) -> str:
    """``<reason> on <namespace>/<name>``, for logs, in either API."""
    regarding = event.get("regarding") or event.get("involvedObject") or {}
    return f"{event.get('reason')} on {regarding.get('namespace')}/{regarding.get('name')}"
