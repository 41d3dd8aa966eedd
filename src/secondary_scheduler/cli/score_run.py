"""One scheduling cycle in memory, over a snapshot: what ``secsched score`` reports.

The framework, the plugins and the profile are the scheduler's own; only the inputs differ:
nodes and pods from the snapshot file, the informers plugins ask for filled from its
``objects``, its other keys (metrics) handed to plugins as ``handle.snapshot``, and the
clock stopped at the snapshot's ``now``. Nothing here names a plugin.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.cli.score_inputs import ClusterSnapshot
from secondary_scheduler.config.model import Profile
from secondary_scheduler.framework import CycleState, Framework, Handle, NodeTable, PodInfo, ScheduleResult
from secondary_scheduler.framework.handle import Snapshot
from secondary_scheduler.framework.interface import Note, Plugin
from secondary_scheduler.framework.status import Code
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.scheduler.schedule_one import schedule_pod

NOT_EVALUATED = "not evaluated: enough feasible nodes were found first (percentageOfNodesToScore)"


class CycleError(Exception):
    """The cycle itself failed (a plugin error, not a pod that does not fit)."""


@dataclass(frozen=True)
class PluginScore:
    raw: int
    """The plugin's Score."""
    normalized: int
    weight: int
    skipped: bool = False
    """Its PreScore returned Skip: it scored nothing here."""


@dataclass(frozen=True)
class NodeReport:
    name: str
    feasible: bool
    reason: str | None
    """Why the node was filtered out (None when feasible)."""
    plugins: dict[str, PluginScore]
    total: int


@dataclass(frozen=True)
class ScoreReport:
    profile: str
    pod: str
    selected: str | None
    nodes: tuple[NodeReport, ...]
    """Feasible nodes by total (best first), then the others by name."""
    score_plugins: tuple[tuple[str, int], ...]
    """(plugin, weight) of the profile's score plugins, in order."""
    notes: tuple[Note, ...]
    """What plugins' decisions were based on (the load-aware plugins' metrics)."""
    message: str
    """Why the pod fits nowhere (kube-scheduler's FitError), or empty."""
    tied: tuple[str, ...]
    """Nodes sharing the best total (the framework picks one at random)."""
    unread_kinds: tuple[str, ...] = ()
    """Kinds in the snapshot's ``objects`` that no enabled plugin reads."""

    def as_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "pod": self.pod,
            "selected": self.selected,
            "nodes": {
                node.name: {
                    "feasible": node.feasible,
                    "reason": node.reason,
                    "plugins": {
                        name: {"score": score.raw, "normalized": score.normalized, "weight": score.weight}
                        for name, score in node.plugins.items()
                    },
                    "total": node.total,
                }
                for node in self.nodes
            },
        }


def explain(
    profile: Profile,
    snapshot: ClusterSnapshot,
    pod: JSON,
    percentage_of_nodes_to_score: int | None = None,
    *,
    registry: Mapping[str, type[Plugin]],
) -> ScoreReport:
    """Schedule ``pod`` into the snapshot with ``profile`` and report every node's scores.

    ``registry``: the plugins the profile's names resolve to (the command's, ``--plugin`` included).
    """
    recent = [(entry.pod, entry.node, entry.timestamp) for entry in snapshot.recently_scheduled]
    frozen = Snapshot(now=snapshot.now, data={"metrics": snapshot.metrics, "recentlyScheduled": recent})
    handle = Handle(wall_clock=lambda: snapshot.now, snapshot=frozen)
    try:
        framework = Framework(
            profile,
            registry,
            handle,
            percentage_of_nodes_to_score=percentage_of_nodes_to_score,
            rng=random.Random(0),  # the same snapshot always gives the same answer, ties included
        )
    except ValueError as error:
        raise CycleError(str(error)) from error
    unread = handle.informers.fill(snapshot.objects)
    table = NodeTable.from_objects(snapshot.nodes, snapshot.pods)
    info = PodInfo.from_pod(pod)
    state = CycleState()
    result = asyncio.run(_schedule(framework, handle, info, table, state))
    if result.status.code == Code.ERROR:
        raise CycleError(result.status.message)
    return _report(framework, info, table, state, result, tuple(unread))


async def _schedule(
    framework: Framework, handle: Handle, pod: PodInfo, table: NodeTable, state: CycleState
) -> ScheduleResult:
    """The cycle, between the plugins' services' start (their first, static fetch) and their stop."""
    await handle.start_services()
    try:
        return schedule_pod(framework, pod, table, state, explain=True)
    finally:
        await handle.stop_services()


def _report(
    framework: Framework,
    pod: PodInfo,
    table: NodeTable,
    state: CycleState,
    result: ScheduleResult,
    unread_kinds: tuple[str, ...],
) -> ScoreReport:
    explanation = result.explanation
    scored: dict[str, NodeReport] = {}
    if explanation is not None:
        for index, name in enumerate(explanation.nodes):
            plugins = {
                scores.plugin: PluginScore(
                    int(scores.raw[index]), int(scores.normalized[index]), scores.weight
                )
                for scores in explanation.plugins
            }
            scored[name] = NodeReport(name, True, None, plugins, int(explanation.totals[index]))
    others = []
    diagnosis = result.diagnosis
    rejected = diagnosis.node_statuses if diagnosis is not None else {}
    for slot in table.active_slots():
        name = table.names[slot]
        if name not in scored:
            status = rejected.get(name) or (diagnosis.status_of_others() if diagnosis is not None else None)
            reason = status.message if status is not None else ""
            others.append(NodeReport(name, False, reason or NOT_EVALUATED, {}, 0))
    feasible = sorted(scored.values(), key=lambda node: (-node.total, node.name))
    best = feasible[0].total if feasible else None
    # Every plugin's note: the score plugins' first (in profile order), then the others (preemption).
    first = [plugin.name for plugin in framework.score_plugins if plugin.name in state.notes]
    notes = tuple(
        state.notes[name] for name in [*first, *(name for name in state.notes if name not in first)]
    )
    return ScoreReport(
        profile=framework.scheduler_name,
        pod=pod.key,
        selected=result.node_name,
        nodes=(*feasible, *sorted(others, key=lambda node: node.name)),
        score_plugins=tuple(
            (plugin.name, framework.score_weights[plugin.name]) for plugin in framework.score_plugins
        ),
        notes=notes,
        message="" if result.status.is_success else result.status.message,
        tied=tuple(node.name for node in feasible if node.total == best) if len(feasible) > 1 else (),
        unread_kinds=unread_kinds,
    )
