"""What a Trimaran plugin's scores in one cycle were based on, kept in the CycleState.

``secsched score`` prints these so a person can see why a node got the score it got:
which source and window, how old, and which nodes were scored without measured load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from secondary_scheduler.framework.interface import CycleState

_SHOWN_NODES = 8


def note_key(plugin: str) -> str:
    """The CycleState key a plugin's note is written under."""
    return f"trimaran/note/{plugin}"


def read_note(state: CycleState, plugin: str) -> MetricsNote | None:
    return state.read(note_key(plugin), MetricsNote)


@dataclass(frozen=True)
class MetricsNote:
    plugin: str
    source: str
    window: str | None
    """The newest snapshot's window (15m...), None when there is none yet."""
    age_seconds: float | None
    stale: bool
    staleness_limit: float | None
    """None in parityMode: any age is trusted, as upstream."""
    missing_series: tuple[str, ...] = ()
    """Resources the plugin uses that no node has metrics of (cpu, memory)."""
    estimated: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Resource -> nodes whose load of it was estimated from their requests instead of measured."""
    unmeasured: tuple[str, ...] = ()
    """Nodes scored 0 for lack of metrics (no fallback)."""
    recent: Mapping[str, int] = field(default_factory=dict)
    """TargetLoadPacking: node -> predicted millicores of recently placed pods added to its load."""

    @property
    def estimated_nodes(self) -> int:
        """How many nodes had any load estimated."""
        return len({node for nodes in self.estimated.values() for node in nodes})

    def lines(self) -> list[str]:
        """The note as short sentences, most important first."""
        parity = self.staleness_limit is None
        if self.window is None or self.age_seconds is None:
            lines = [f"metrics: {self.source}: no snapshot yet"]
        else:
            lines = [f"metrics: {self.source}, window {self.window}, {self.age_seconds:.0f}s old"]
        if self.stale and self.staleness_limit is not None:
            lines.append(
                f"stale: older than metricsStalenessLimit ({self.staleness_limit:g}s), so not trusted"
            )
        lines += [f"no node has {resource} metrics (series missing)" for resource in self.missing_series]
        by_nodes: dict[tuple[str, ...], list[str]] = {}
        for resource, nodes in self.estimated.items():
            by_nodes.setdefault(nodes, []).append(resource)
        for nodes, resources in by_nodes.items():
            what = " and ".join(resources)
            lines.append(f"{what} load estimated from requests (fallbackToRequests): {_names(nodes)}")
        if self.unmeasured:
            why = "parityMode" if parity else "fallbackToRequests: false"
            lines.append(f"no metrics, scored 0 ({why}): {_names(self.unmeasured)}")
        if self.recent:
            counted = ", ".join(f"{node} +{millis}m" for node, millis in sorted(self.recent.items()))
            lines.append(f"recently placed pods not yet in the metrics: {counted}")
        if parity:
            lines.append("parityMode: upstream behaviour (no staleness limit, no fallback)")
        return lines


def _names(nodes: Sequence[str]) -> str:
    shown = ", ".join(nodes[:_SHOWN_NODES])
    return shown if len(nodes) <= _SHOWN_NODES else f"{shown} and {len(nodes) - _SHOWN_NODES} more"
