"""``PodMoves``: pods moved on or off nodes for a moment, and put back exactly as they were.

Two what-ifs move pods within a cycle: the filters count the pods nominated to a node on
it (RunFilterPluginsWithNominatedPods), and preemption's dry run takes possible victims
off their nodes and puts them back one by one. Upstream works on copies of NodeInfo; here
the live table moves and is restored before anything else reads it.

The moves are made one of two ways, with the same result for the filters that run:

- on the whole table (``add_pods``/``remove_pods``): each node's pod list, the pod lookups
  and the plugins' indexes follow, for filters that read them and for PreFilter run again;
- in the node totals alone (``count_in_totals``), when no filter that runs reads more
  (``FilterPlugin.reads_node_pods``) and PreFilter's output is reused: no per-pod
  bookkeeping, the cost of a few numpy operations whatever the number of pods; each
  move is undone by subtracting again the rows it added, last move first.

Either way each node's pods keep their order (it breaks ties among preemption's victims,
as the order of upstream's NodeInfo.Pods does).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from secondary_scheduler.framework.nodetable import NodeTable, SavedTotals, TotalsChange
from secondary_scheduler.framework.podinfo import PodInfo

Placement = tuple[int, PodInfo]
"""A slot of the table and a pod."""


class PodMoves:
    """Use as a context manager: every move made inside is undone on leaving it."""

    def __init__(self, table: NodeTable, *, totals_only: bool) -> None:
        self.table = table
        self.totals_only = totals_only
        self._moved: dict[str, tuple[int, PodInfo, int]] = {}
        """Pod key -> its slot, the pod, and +1 if it was put on the node, -1 if taken off
        (whole-table moves only)."""
        self._changes: list[TotalsChange | SavedTotals] = []
        """Each move in the totals alone, in the order made."""
        self._orders: dict[int, list[str]] = {}
        """Slot -> its pod keys in their order before its first move (whole-table moves only)."""

    def __enter__(self) -> PodMoves:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.restore()

    def add(self, placements: Iterable[Placement]) -> None:
        """Put pods on nodes: pods taken off before, or pods the table does not count anywhere."""
        if self.totals_only:
            self._count(placements, 1)
            return
        moved = self._track(placements, 1)
        if moved:
            names = self.table.names
            self.table.add_pods((pod, names[slot]) for slot, pod in moved)

    def remove(self, placements: Iterable[Placement]) -> None:
        """Take pods off the nodes they are on (or were put on by ``add``)."""
        if self.totals_only:
            self._count(placements, -1)
            return
        moved = self._track(placements, -1)
        if moved:
            self.table.remove_pods(pod.key for _slot, pod in moved)

    def remove_all(self, slots: Iterable[int]) -> None:
        """Take every pod off the nodes in ``slots`` (in the totals alone: their totals saved and zeroed)."""
        slots = list(slots)
        if not slots:
            return
        if self.totals_only:
            self._changes.append(self.table.empty_totals(slots))
            return
        pods = self.table.pods
        self.remove([(slot, pod) for slot in slots for pod in pods[slot].values()])

    def restore(self) -> None:
        """Undo every move: pods taken off go back, pods put on come off, each node's order as before."""
        if self.totals_only:
            changes, self._changes = self._changes, []
            for change in reversed(changes):
                if isinstance(change, SavedTotals):
                    self.table.restore_totals(change)
                else:
                    self.table.uncount(change)
            return
        taken_off = [(slot, pod) for slot, pod, net in self._moved.values() if net < 0]
        put_on = [(slot, pod) for slot, pod, net in self._moved.values() if net > 0]
        self._moved = {}
        names = self.table.names
        self.table.add_pods((pod, names[slot]) for slot, pod in taken_off)
        self.table.remove_pods(pod.key for _slot, pod in put_on)
        for slot, keys in self._orders.items():
            pods = self.table.pods[slot]
            if list(pods) != keys and pods.keys() == set(keys):
                self.table.pods[slot] = {key: pods[key] for key in keys}
        self._orders = {}

    def _count(self, placements: Iterable[Placement], sign: int) -> None:
        """A move in the totals alone, kept to be undone."""
        moved = list(placements)
        if moved:
            self._changes.append(self.table.count_in_totals(moved, sign))

    def _track(self, placements: Iterable[Placement], sign: int) -> list[Placement]:
        """Record a whole-table move (and each node's order before its first move); returns it."""
        moved = list(placements)
        tracked = self._moved
        orders, pods = self._orders, self.table.pods
        for slot, _pod in moved:
            if slot not in orders:
                orders[slot] = list(pods[slot])
        for slot, pod in moved:
            previous = tracked.get(pod.key)
            net = sign + (previous[2] if previous is not None else 0)
            if net:
                tracked[pod.key] = (slot, pod, net)
            else:
                del tracked[pod.key]
        return moved
