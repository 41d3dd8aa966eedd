"""``NodeLabelPreference``: a Score plugin that prefers nodes by the value of one of their labels.

Args: a label key and the values to prefer, best first. A node whose value is the i-th of
n values scores ``MAX_NODE_SCORE * (n - i) // n`` (100, 50 for two values); a node without
the label, or with another value, scores 0. Use it to steer pods towards a hardware
generation, a rack, a "tier" an admin maintains, without making it a hard constraint.

How it runs over many nodes at once: the NodeTable keeps a label as a ``LabelColumn``, one
integer code per node slot (``LABEL_MISSING``, -1, where the node lacks the label), codes
assigned as values first appear. PreScore turns the preferred values into a lookup array
indexed by code, with one extra 0 at the end that code -1 lands on; Score is then a
single numpy gather over the candidate slots, whatever the number of nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import Field, field_validator

from secondary_scheduler.pluginapi import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    ClusterEventWithHint,
    CycleState,
    Handle,
    IntArray,
    NodeTable,
    PluginArgs,
    PodInfo,
    PreScorePlugin,
    ScorePlugin,
    Slots,
    Status,
)
from secsched_example_plugins.labelkeys import check_label_key


class NodeLabelPreferenceArgs(PluginArgs):
    """``pluginConfig[].args`` of NodeLabelPreference (YAML keys are camelCase: ``preferredValues``)."""

    label: str
    """The node label to read, e.g. ``example.com/tier``."""
    preferred_values: list[str] = Field(min_length=1)
    """The values to prefer, best first."""

    @field_validator("label")
    @classmethod
    def _label_key(cls, label: str) -> str:
        return check_label_key(label)

    @field_validator("preferred_values")
    @classmethod
    def _distinct(cls, values: list[str]) -> list[str]:
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once: each value has one rank")
        return values


@dataclass(frozen=True)
class PreferenceNote:
    """What the scores were based on, printed by ``secsched score`` under the table."""

    plugin: str
    label: str
    nodes_by_value: Mapping[str, int]
    """Preferred value (or "other or none") -> how many feasible nodes have it."""
    scores: Mapping[str, int]

    def lines(self) -> list[str]:
        parts = [
            f"{value}={self.scores.get(value, 0)} on {count} node(s)"
            for value, count in self.nodes_by_value.items()
            if count
        ]
        return [f"label {self.label}: " + ", ".join(parts)]


@dataclass(frozen=True)
class _ScoresByCode:
    """Cycle state from PreScore to Score: score per label code, plus a trailing 0 for LABEL_MISSING."""

    by_code: IntArray


OTHER = "other or none"


class NodeLabelPreference(PreScorePlugin, ScorePlugin):
    name = "NodeLabelPreference"
    args_model = NodeLabelPreferenceArgs

    def __init__(self, args: NodeLabelPreferenceArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        values = args.preferred_values
        self.value_scores = {
            value: MAX_NODE_SCORE * (len(values) - rank) // len(values) for rank, value in enumerate(values)
        }
        """Preferred value -> its score, decided once: the args never change while the scheduler runs."""
        self._state_key = f"{self.name}/scores"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """A Score plugin rejects no pod, so no cluster event needs to send one back to the queue."""
        return ()

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        """Build the lookup once per cycle; Skip when no feasible node has a preferred value."""
        by_code = self._scores_by_code(table)
        codes = table.label_column(self.args.label).codes[nodes]
        scores = by_code[codes]
        state.add_note(self._note(table, codes))
        if not scores.any():
            return SKIP  # every node would score 0: nothing to tell them apart by
        state.write(self._state_key, _ScoresByCode(by_code))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        # PreScore runs only where the profile enables it (multiPoint does; a profile that
        # enables this plugin under `score` alone does not): compute the lookup if it did not.
        cached = state.read(self._state_key, _ScoresByCode)
        by_code = cached.by_code if cached is not None else self._scores_by_code(table)
        return by_code[table.label_column(self.args.label).codes[nodes]]

    def _scores_by_code(self, table: NodeTable) -> IntArray:
        column = table.label_column(self.args.label)
        by_code = np.zeros(len(column.values) + 1, dtype=np.int64)  # the last entry is for code -1
        for value, score in self.value_scores.items():
            code = column.code_of(value)
            if code is not None:
                by_code[code] = score
        return by_code

    def _note(self, table: NodeTable, codes: IntArray) -> PreferenceNote:
        column = table.label_column(self.args.label)
        counts = dict.fromkeys([*self.args.preferred_values, OTHER], 0)
        for code in codes.tolist():
            value = column.values[code] if code >= 0 else OTHER
            counts[value if value in self.value_scores else OTHER] += 1
        return PreferenceNote(self.name, self.args.label, counts, self.value_scores)
