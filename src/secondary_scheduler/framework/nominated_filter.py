"""Filtering with the pods nominated to a node counted on it (RunFilterPluginsWithNominatedPods).

A pod that preemption nominated to a node waits there for its victims to go; the room they
leave must not be taken by a pod of lower or equal importance. So, as kube-scheduler does, a
node where pods of at least the incoming pod's priority are nominated fits only if the filters
pass both with those pods counted on it and without them (the second pass matters to a pod
that affinity draws to them). Nodes without nominations (nearly all) never come here:
``Framework.run_filter_plugins`` filtered them in its vectorised pass.

Two callers: the scheduling algorithm (``scheduler.schedule_one``, once per cycle over the
nodes it filters) and preemption's dry run (DefaultPreemption, on nodes with victims removed).
The nominated pods are moved onto the live table for a moment (``PodMoves``) and put back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.interface import CycleState, PodPredicate
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.podmoves import PodMoves
from secondary_scheduler.framework.runtime import Framework
from secondary_scheduler.framework.status import SUCCESS, Status


def nominated_pods_by_slot(
    framework: Framework, pod: PodInfo, table: NodeTable, slots: Sequence[int] | None = None
) -> dict[int, list[PodInfo]]:
    """Slot -> the pods nominated there that ``pod`` must leave room for, over every node or
    only over ``slots``: those of equal or higher priority, except ``pod`` itself and pods the
    table already counts (assumed or bound since: counting them twice would reject good nodes)."""
    by_node = framework.handle.nominator.by_node()
    if not by_node:
        return {}
    places: Iterable[tuple[int | None, Mapping[str, PodInfo] | None]]
    if slots is None or len(by_node) < len(slots):
        places = ((table.slot_of(node), pods) for node, pods in by_node.items())
        if slots is not None:  # the usual case: a few nominations, a dry run's hundreds of nodes
            asked = set(slots)
            places = ((slot, pods) for slot, pods in places if slot in asked)
    else:
        places = ((slot, by_node.get(table.names[slot])) for slot in slots)
    priority, uid, key, placed = pod.priority, pod.uid, pod.key, table.pod_keys
    by_slot: dict[int, list[PodInfo]] = {}
    for slot, pods in places:
        if slot is None or not pods:
            continue
        kept = [
            other
            for other in pods.values()
            if other.priority >= priority
            and other.uid != uid
            and other.key != key
            and other.key not in placed
        ]
        if kept:
            by_slot[slot] = kept
    return by_slot


def filter_node_with_nominated_pods(
    framework: Framework,
    state: CycleState | None,
    pod: PodInfo,
    table: NodeTable,
    slot: int,
    nominated: Sequence[PodInfo],
    reads: PodPredicate | None = None,
) -> Status:
    """RunFilterPluginsWithNominatedPods on one node: with ``nominated`` counted, then without.

    ``state`` is PreFilter's output for the table as it is; None runs PreFilter again
    first. Adding the nominated pods runs PreFilter again, unless ``reads`` says
    PreFilter reads none of them.
    """
    if nominated:
        unread = state is not None and reads is not None and not any(map(reads, nominated))
        status = _filter_with_pods(framework, pod, table, slot, nominated, state if unread else None)
        if not status.is_success:
            return status
    if state is None:
        state = CycleState()
        status = framework.run_pre_filter_plugins(state, pod, table)
        if not status.is_success:
            return status
    return framework.run_filter_plugins_on_node(state, pod, table, slot)


def run_filters_with_nominated_pods(
    framework: Framework,
    pod: PodInfo,
    table: NodeTable,
    slot: int,
    state: CycleState | None = None,
    reads: PodPredicate | None = None,
) -> Status:
    """Whether ``pod`` fits the node in ``slot`` of the table as it is now.

    For preemption's dry run, which removes and re-adds pods on the node. ``state`` is
    PreFilter's output if it still holds for the table as it is now (the caller knows
    the pods it moved are none that PreFilter reads); None runs PreFilter again in a
    fresh CycleState (PodTopologySpread and InterPodAffinity precompute from the pods
    on the table). ``reads`` says which pods PreFilter reads, so that adding nominated
    pods it does not read reuses ``state`` too (None: it may read any).
    """
    nominated = nominated_pods_by_slot(framework, pod, table, [slot]).get(slot, [])
    return filter_node_with_nominated_pods(framework, state, pod, table, slot, nominated, reads)


def rejections_with_nominated_pods(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    candidates: Slots,
    nominated: Mapping[int, list[PodInfo]],
) -> dict[int, Status]:
    """Candidate position -> the status of nodes that do not fit once their nominated pods count.

    For the scheduling cycle: only nodes with nominated pods are filtered again; the
    vectorised pass already filtered every node without them (the second of upstream's
    two passes).
    """
    if not nominated:
        return {}
    position_of = np.full(table.capacity, -1, dtype=np.int64)
    position_of[candidates] = np.arange(len(candidates))
    among = {slot: pods for slot, pods in nominated.items() if position_of[slot] >= 0}
    statuses = _filter_with_nominated(framework, state, pod, table, among, framework.pre_filter_reads(pod))
    return {int(position_of[slot]): status for slot, status in statuses.items()}


def run_filters_on_nodes(
    framework: Framework,
    pod: PodInfo,
    table: NodeTable,
    slots: Sequence[int],
    state: CycleState,
    reads: PodPredicate,
) -> dict[int, Status]:
    """Slot -> status of each node in ``slots`` that ``pod`` does not fit as the table is now.

    ``run_filters_with_nominated_pods`` for many nodes at once (preemption's dry run asks
    hundreds): ``state`` must hold for the table as it is now, ``reads`` says which pods
    PreFilter reads. The nodes with nominated pods are filtered with them counted first;
    those that pass, and every other node, then in one pass as they are (upstream's two
    passes), each node's filters seeing only its own pods.
    """
    nominated = nominated_pods_by_slot(framework, pod, table, slots)
    statuses = _filter_with_nominated(framework, state, pod, table, nominated, reads)
    rest = np.fromiter((slot for slot in slots if slot not in statuses), dtype=np.intp)
    if len(rest):
        statuses.update(_filter_together(framework, state, pod, table, rest))
    return statuses


def _filter_with_nominated(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    nominated: Mapping[int, list[PodInfo]],
    reads: PodPredicate,
) -> dict[int, Status]:
    """Slot -> status of the nodes that do not fit with their nominated pods added (upstream's
    first pass). Nodes whose nominated pods PreFilter does not read are filtered together,
    with all of them on the table at once (each node's filters then see only its own pods);
    the others one by one, PreFilter run again with their pods."""
    statuses: dict[int, Status] = {}
    together: dict[int, list[PodInfo]] = {}
    for slot, pods in nominated.items():
        if any(map(reads, pods)):
            status = _filter_with_pods(framework, pod, table, slot, pods)
            if not status.is_success:
                statuses[slot] = status
        else:
            together[slot] = pods
    if together:
        slots = np.fromiter(together, dtype=np.intp, count=len(together))
        statuses.update(_filter_together(framework, state, pod, table, slots, together))
    return statuses


def _filter_together(
    framework: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    slots: Slots,
    pods_by_slot: Mapping[int, Sequence[PodInfo]] | None = None,
) -> dict[int, Status]:
    """Slot -> status of the nodes that do not fit (with their ``pods_by_slot`` added), in one pass."""
    added = [(slot, other) for slot, pods in (pods_by_slot or {}).items() for other in pods]
    with PodMoves(table, totals_only=framework.filters_read_totals_only(state)) as moves:
        moves.add(added)
        rejected_by, unresolvable, rejections = framework.run_filter_plugins(state, pod, table, slots)
        diagnosis = framework.diagnose(table, slots, rejected_by, unresolvable, rejections, {})
    rejected = diagnosis.rejected
    statuses = map(rejected.statuses.__getitem__, rejected.groups.tolist())
    return dict(zip(rejected.slots.tolist(), statuses, strict=True))


def _filter_with_pods(
    framework: Framework,
    pod: PodInfo,
    table: NodeTable,
    slot: int,
    pods: Sequence[PodInfo],
    state: CycleState | None = None,
) -> Status:
    """Filter one node with ``pods`` added to it; PreFilter runs again unless ``state`` still holds.

    Upstream updates PreFilter's state with the plugins' AddPod extensions instead.
    """
    totals_only = state is not None and framework.filters_read_totals_only(state)
    with PodMoves(table, totals_only=totals_only) as moves:
        moves.add((slot, other) for other in pods)
        status = SUCCESS
        if state is None:
            state = CycleState()
            status = framework.run_pre_filter_plugins(state, pod, table)
        if status.is_success:
            status = framework.run_filter_plugins_on_node(state, pod, table, slot)
    return status
