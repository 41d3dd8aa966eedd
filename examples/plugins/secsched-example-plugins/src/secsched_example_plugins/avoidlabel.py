"""``AvoidNodeLabel``: a Filter plugin that keeps pods off nodes carrying a label.

Args: the label key, optionally the values to avoid (any value when empty), and a pod
label that lets a pod opt out (its own tooling, a debug pod). Use it for nodes an admin
marks as draining or reserved without tainting them (a taint needs every other pod to
tolerate it; this applies to this scheduler's pods only).

The check is one vectorised test over the candidates' label codes. A rejection is
UnschedulableAndUnresolvable: evicting pods from the node would not help, so preemption
does not try. The plugin registers the events that can undo a rejection (a node added,
a node's labels changed) with a queueing hint, so a rejected pod is retried when a node
without the label appears, and not on every binding in the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from secondary_scheduler.pluginapi import (
    LABEL_MISSING,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    NodeTable,
    PluginArgs,
    PodInfo,
    Rejection,
    Slots,
)
from secsched_example_plugins.labelkeys import check_label_key


class AvoidNodeLabelArgs(PluginArgs):
    """``pluginConfig[].args`` of AvoidNodeLabel (YAML keys are camelCase: ``podOptOutLabel``)."""

    label: str
    """The node label that marks nodes to avoid, e.g. ``example.com/draining``."""
    values: list[str] = Field(default_factory=list)
    """Avoid only nodes whose label has one of these values; empty: any value."""
    pod_opt_out_label: str | None = None
    """Pods carrying this label (any value) may use avoided nodes all the same."""

    @field_validator("label")
    @classmethod
    def _label_key(cls, label: str) -> str:
        return check_label_key(label)

    @field_validator("pod_opt_out_label")
    @classmethod
    def _opt_out_key(cls, label: str | None) -> str | None:
        return None if label is None else check_label_key(label)


class AvoidNodeLabel(FilterPlugin):
    name = "AvoidNodeLabel"
    args_model = AvoidNodeLabelArgs

    def __init__(self, args: AvoidNodeLabelArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        values = f" with value {' or '.join(args.values)}" if args.values else ""
        self.reason = f"node(s) had label {args.label}{values}, which this profile avoids"
        """The reason in the pod's FailedScheduling event: "3 node(s) had label ..." """

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._node_may_fit
            ),
        )

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        if self.args.pod_opt_out_label is not None and self.args.pod_opt_out_label in pod.labels:
            return []
        column = table.label_column(self.args.label)
        if self.args.values:
            avoided = column.isin(candidates, self.args.values)
        else:
            avoided = column.codes[candidates] != LABEL_MISSING
        if not avoided.any():
            return []
        return [Rejection(avoided, self.reason, unresolvable=True)]

    def _node_may_fit(self, pod: PodInfo, old: Any, new: Any) -> bool:
        """Queueing hint: the added or relabelled node (a raw v1 Node) is not one we avoid."""
        if new is None:
            return False
        return not self._avoids((new.get("metadata") or {}).get("labels") or {})

    def _avoids(self, labels: dict[str, str]) -> bool:
        value = labels.get(self.args.label)
        return value is not None and (not self.args.values or value in self.args.values)
