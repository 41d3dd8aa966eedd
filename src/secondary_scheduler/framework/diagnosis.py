"""Why a pod fits nowhere, and kube-scheduler's one-line summary of it.

The summary counts each reason over the nodes and sorts the "<count> <reason>" strings as
text (so "12 ..." sorts before "3 ..."), exactly like kube-scheduler's FitError:

    0/12 nodes are available: 3 Insufficient cpu, 9 node(s) didn't match Pod's node
    affinity/selector. preemption: 0/12 nodes are available: ...

A filter pass over thousands of nodes rejects most of them alike, so the rejected nodes are
kept grouped (``RejectedNodes``: one Status per distinct rejection, one group index per node)
and counted with numpy; the per-node mapping by name is built only when someone reads it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.status import Code, Status


def fit_error_message(
    num_all_nodes: int,
    reason_counts: Mapping[str, int],
    pre_filter_message: str = "",
    post_filter_message: str = "",
) -> str:
    """kube-scheduler's FitError text; a PreFilter rejection replaces the per-node counts."""
    message = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_message:
        message += f" {pre_filter_message}."
    else:
        histogram = sorted(f"{count} {reason}" for reason, count in reason_counts.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if post_filter_message:
        message += f" {post_filter_message}"
    return message


@dataclass(frozen=True)
class RejectedNodes:
    """The nodes a filter pass rejected, in the order it evaluated them: each node's table slot
    and the index of its Status in ``statuses`` (nodes rejected alike share one)."""

    slots: Slots
    groups: IntArray
    statuses: Sequence[Status]
    names: Sequence[str]
    """The table's node name of each slot when the pass ran (a later node may reuse a slot)."""

    def __len__(self) -> int:
        return len(self.slots)

    def by_name(self) -> dict[str, Status]:
        names = map(self.names.__getitem__, self.slots.tolist())
        return dict(zip(names, map(self.statuses.__getitem__, self.groups.tolist()), strict=True))

    def node_counts(self) -> list[tuple[Status, int]]:
        """Each status and on how many nodes, leaving out statuses no node has."""
        counts = np.bincount(self.groups, minlength=len(self.statuses)).tolist()
        return [(status, count) for status, count in zip(self.statuses, counts, strict=True) if count]

    def codes(self) -> IntArray:
        """Each node's status code, aligned with ``slots``."""
        by_group = np.array([int(status.code) for status in self.statuses], dtype=np.int64)
        return by_group[self.groups]

    def status_of(self, name: str) -> Status | None:
        """One node's status, found without building the mapping (None: not rejected here)."""
        try:
            slot = self.names.index(name)
        except ValueError:
            return None
        found = np.flatnonzero(self.slots == slot)
        return self.statuses[int(self.groups[found[0]])] if len(found) else None


NO_NODES_REJECTED = RejectedNodes(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64), (), ())


class Diagnosis:
    """The rejection of each node that was evaluated and did not fit, and what applies to the rest.

    Statuses come from the filter pass (``rejected``, grouped) and by node name (given here or
    added by an extender, ``add_node_status``); a node is in one or the other.
    """

    def __init__(
        self,
        num_all_nodes: int,
        node_statuses: Mapping[str, Status] | None = None,
        *,
        rejected: RejectedNodes = NO_NODES_REJECTED,
        absent_status: Status | None = None,
        pre_filter_message: str = "",
        post_filter_message: str = "",
        unschedulable_plugins: set[str] | None = None,
    ) -> None:
        self.num_all_nodes = num_all_nodes
        self.rejected = rejected
        self._named: dict[str, Status] = dict(node_statuses or {})
        self._all_by_name: dict[str, Status] | None = None
        self.absent_status = absent_status
        """The status of every node not rejected here (a PreFilter rejection applies to all)."""
        self.pre_filter_message = pre_filter_message
        self.post_filter_message = post_filter_message
        self.unschedulable_plugins: set[str] = set(unschedulable_plugins or ())
        """Plugins that rejected the pod somewhere: the runtime requeues it on events that concern them."""

    @property
    def node_statuses(self) -> Mapping[str, Status]:
        """Every rejected node's status by name (built on first read, for reports and tests);
        read-only: ``add_node_status`` adds one."""
        if self._all_by_name is None:
            self._all_by_name = {**self.rejected.by_name(), **self._named}
        return MappingProxyType(self._all_by_name)

    @property
    def num_rejected(self) -> int:
        return len(self.rejected) + len(self._named)

    def add_node_status(self, name: str, status: Status) -> None:
        """A node rejected after the filter pass (by an extender)."""
        self._named[name] = status
        self._all_by_name = None

    def status_of(self, node_name: str) -> Status:
        """One node's status, found without building ``node_statuses`` (read that for many)."""
        status = self._named.get(node_name)
        if status is None and node_name:
            status = self.rejected.status_of(node_name)
        return self.status_of_others() if status is None else status

    def status_of_others(self) -> Status:
        """The status of the nodes not rejected here: never evaluated counts as unresolvable, as
        in kube-scheduler."""
        return self.absent_status or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def slots_and_codes(self) -> tuple[Slots, IntArray] | None:
        """The rejected nodes' slots and status codes; None when some were rejected by name only
        (an extender's), so that the caller looks every node up by name."""
        if self._named:
            return None
        return self.rejected.slots, self.rejected.codes()

    def distinct_statuses(self) -> list[tuple[Status, int]]:
        """Each distinct rejection and on how many nodes (nodes share Status objects)."""
        found = self.rejected.node_counts()
        named = self._named.values()
        by_identity = dict(zip(map(id, named), named, strict=True))
        tally = Counter(map(id, named))
        return found + [(status, tally[key]) for key, status in by_identity.items()]

    def reason_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for status, nodes in self.distinct_statuses():
            for reason in status.reasons:
                counts[reason] += nodes
        absent = self.num_all_nodes - self.num_rejected
        if absent > 0 and self.absent_status is not None:
            for reason in self.absent_status.reasons:
                counts[reason] += absent
        return counts

    def message(self) -> str:
        return fit_error_message(
            self.num_all_nodes, self.reason_counts(), self.pre_filter_message, self.post_filter_message
        )
