"""What LoadAwarePacking's scores in one cycle were based on, for ``secsched score`` and the logs.

It carries the metric source's note (window, age, staleness, nodes without metrics) and adds
what this plugin does about them, so a degraded input is always written down next to the
scores it changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from secondary_scheduler.plugins.trimaran.notes import MetricsNote

_SHOWN = 8


@dataclass(frozen=True)
class LoadAwareNote:
    plugin: str
    metrics: MetricsNote
    pod_millis: float
    how_estimated: str
    held_for_seconds: float | None = None
    """Stale metrics: how old the held peaks are (None when fresh)."""
    estimated: tuple[str, ...] = ()
    """Nodes without a CPU reading, loaded from their requests x the learned use per request."""
    unscored: tuple[str, ...] = ()
    """Nodes without a CPU reading scored 0 (fallbackToRequests: false)."""
    inflight: Mapping[str, int] = field(default_factory=dict)
    """Node -> millicores of pods bound since the window began that the reading lacks."""
    seasonal: Mapping[str, float] = field(default_factory=dict)
    """Node -> percent points its coming hours rose in previous days (weeks)."""

    def lines(self) -> list[str]:
        replaced = ("no metrics, scored 0", "recently")  # said below in this plugin's terms
        lines = [line for line in self.metrics.lines() if not line.startswith(replaced)]
        lines.append(f"pod predicted at {self.pod_millis:.0f}m CPU ({self.how_estimated})")
        if self.held_for_seconds is not None:
            lines.append(
                f"stale metrics: holding each node's last peak ({self.held_for_seconds:.0f}s old) plus every "
                "pod bound since, in full"
            )
        if self.estimated:
            lines.append(f"no CPU reading, load from requests x learned use: {_names(self.estimated)}")
        if self.unscored:
            lines.append(f"no CPU reading, scored 0 (fallbackToRequests: false): {_names(self.unscored)}")
        if self.inflight:
            shown = sorted(self.inflight.items(), key=lambda item: -item[1])[:_SHOWN]
            text = ", ".join(f"{node} +{millis}m" for node, millis in shown)
            more = len(self.inflight) - len(shown)
            tail = f" and {more} more nodes" if more > 0 else ""
            lines.append(f"pods not yet in the metrics: {text}{tail}")
        if self.seasonal:
            shown_rise = sorted(self.seasonal.items(), key=lambda item: -item[1])[:_SHOWN]
            text = ", ".join(f"{node} +{rise:.0f}pp" for node, rise in shown_rise)
            lines.append(f"daily/weekly pattern, rise ahead: {text}")
        return lines


def _names(nodes: Sequence[str]) -> str:
    shown = ", ".join(nodes[:_SHOWN])
    return shown if len(nodes) <= _SHOWN else f"{shown} and {len(nodes) - _SHOWN} more"
