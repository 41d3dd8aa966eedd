"""The outcome of a plugin call or a scheduling step, with kube-scheduler's status codes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    """Something broke (not the pod's fault): the pod is retried with backoff."""
    UNSCHEDULABLE = 2
    """The pod does not fit now; preempting other pods might make it fit."""
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    """The pod does not fit and removing pods would not change that (affinity, taints...)."""
    WAIT = 4
    """A Permit plugin holds the pod before binding."""
    SKIP = 5
    """A Pre* plugin has nothing to do for this pod: its later extension point is skipped."""


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    """The plugin that returned the status (set by the framework)."""

    @classmethod
    def error(cls, message: str) -> Status:
        return cls(Code.ERROR, (message,))

    @classmethod
    def unschedulable(cls, *reasons: str, unresolvable: bool = False) -> Status:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return cls(code, reasons)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    @property
    def is_rejected(self) -> bool:
        """The pod does not fit (as opposed to an error or a wait)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def with_plugin(self, plugin: str) -> Status:
        return replace(self, plugin=plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)
