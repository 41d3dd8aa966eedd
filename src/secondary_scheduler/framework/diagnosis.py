"""Why a pod fits nowhere, and kube-scheduler's one-line summary of it.

The summary counts each reason over the nodes and sorts the "<count> <reason>" strings as
text (so "12 ..." sorts before "3 ..."), exactly like kube-scheduler's FitError:

    0/12 nodes are available: 3 Insufficient cpu, 9 node(s) didn't match Pod's node
    affinity/selector. preemption: 0/12 nodes are available: ...
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from secondary_scheduler.framework.aliases import Slots
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


@dataclass
class Diagnosis:
    num_all_nodes: int
    node_statuses: dict[str, Status] = field(default_factory=dict)
    """The rejection of each node that was evaluated and did not fit."""
    node_slots: Slots | None = None
    """The table slots of ``node_statuses``' nodes in its order, when the runtime's filter pass
    wrote them (None otherwise): lets preemption pick its nodes without looking names up. Read it
    through ``slots_and_statuses``: an extender's rejections add nodes it does not cover."""
    absent_status: Status | None = None
    """The status of every node not in ``node_statuses`` (a PreFilter rejection applies to all)."""
    pre_filter_message: str = ""
    post_filter_message: str = ""
    unschedulable_plugins: set[str] = field(default_factory=set)
    """Plugins that rejected the pod somewhere: the runtime requeues it on events that concern them."""

    def status_of(self, node_name: str) -> Status:
        """A node's status; nodes never evaluated count as unresolvable, as in kube-scheduler."""
        status = self.node_statuses.get(node_name)
        if status is not None:
            return status
        return self.absent_status or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def slots_and_statuses(self) -> tuple[Slots, list[Status]] | None:
        """``node_slots`` and the statuses in the same order, if they still cover ``node_statuses``."""
        if self.node_slots is None or len(self.node_slots) != len(self.node_statuses):
            return None
        return self.node_slots, list(self.node_statuses.values())

    def distinct_statuses(self) -> list[tuple[Status, int]]:
        """Each distinct Status object of ``node_statuses`` and on how many nodes (nodes share them)."""
        statuses = self.node_statuses.values()
        by_identity = dict(zip(map(id, statuses), statuses, strict=True))
        tally = Counter(map(id, statuses))
        return [(status, tally[key]) for key, status in by_identity.items()]

    def reason_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for status, nodes in self.distinct_statuses():
            for reason in status.reasons:
                counts[reason] += nodes
        absent = self.num_all_nodes - len(self.node_statuses)
        if absent > 0 and self.absent_status is not None:
            for reason in self.absent_status.reasons:
                counts[reason] += absent
        return counts

    def message(self) -> str:
        return fit_error_message(
            self.num_all_nodes, self.reason_counts(), self.pre_filter_message, self.post_filter_message
        )
