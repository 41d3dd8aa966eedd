"""What the framework asks of a scheduler extender (kube-scheduler's framework.Extender).

The HTTP client lives in ``secondary_scheduler.scheduler.extenders``; the framework sees
only this protocol, so tests can stand in for an extender without a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo

EXTENDER_NAME = "Extender"
"""The pseudo-plugin a pod is unschedulable by when an extender rejected some nodes (upstream's
ExtenderName): it has no queueing hints, so any cluster event requeues the pod."""

MAX_EXTENDER_PRIORITY = 10
"""Extenders score 0..10; the scheduler scales by MaxNodeScore / MaxExtenderPriority and the weight."""


class ExtenderError(Exception):
    """A call to an extender failed: unreachable, a timeout, a non-200 answer, an ``Error`` in its reply."""


@dataclass(frozen=True)
class ExtenderFilterResult:
    nodes: Sequence[str]
    """The nodes that pass, in the extender's order (a subset of those it was given)."""
    failed: Mapping[str, str] = field(default_factory=dict)
    """Node -> why it does not fit now (preemption may still help there)."""
    failed_and_unresolvable: Mapping[str, str] = field(default_factory=dict)
    """Node -> why it can never fit; wins over ``failed`` for a node in both."""


class Extender(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def ignorable(self) -> bool:
        """Its errors skip it (filter, bind) instead of failing the cycle."""
        ...

    @property
    def weight(self) -> int: ...

    @property
    def is_filter(self) -> bool: ...

    @property
    def is_prioritizer(self) -> bool: ...

    @property
    def is_binder(self) -> bool: ...

    def is_interested(self, pod: PodInfo) -> bool:
        """Whether the pod requests one of its managed resources (always, if it manages none)."""
        ...

    async def filter(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> ExtenderFilterResult:
        """Raises ExtenderError. ``table`` is read before the first await only."""
        ...

    async def prioritize(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> Mapping[str, int]:
        """Node -> score (0..MAX_EXTENDER_PRIORITY, unweighted); raises ExtenderError."""
        ...

    async def bind(self, pod: PodInfo, node: str) -> None:
        """Asks the extender to bind the pod; raises ExtenderError."""
        ...
