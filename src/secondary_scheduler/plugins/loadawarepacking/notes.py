"""What LoadAwarePacking's scores in one cycle were based on, for ``secsched score`` and the logs.

It carries the metric source's note (window, age, staleness, nodes without metrics) and adds
what this plugin does about them, so a degraded input is always written down next to the
scores it changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray
from secondary_scheduler.plugins.loadawarepacking.risecalibration import RiseFit
from secondary_scheduler.plugins.trimaran.notes import MetricsNote

_SHOWN = 8


@dataclass(frozen=True)
class LoadAwareNote:
    """Kept as the cycle's arrays; node names are looked up only when the note is read (a cycle
    must not pay for explanations nobody asks for)."""

    plugin: str
    metrics: MetricsNote
    pod_millis: float
    how_estimated: str
    names: Sequence[str] = field(repr=False)
    """The table's node names by slot."""
    nodes: IntArray = field(repr=False)
    """The scored slots; the arrays below are aligned with them."""
    estimated_mask: BoolArray = field(repr=False)
    """Nodes without a CPU reading, loaded from their requests x the learned use per request."""
    unscored_mask: BoolArray = field(repr=False)
    """Nodes without a CPU reading scored 0 (fallbackToRequests: false)."""
    missing_by_slot: FloatArray = field(repr=False)
    """Per table slot, millicores of pods bound since the window began that the reading lacks
    (nodes read from requests lack none: see ``missing_millis``)."""
    rise_by_slot: FloatArray = field(repr=False)
    """Per table slot, percent points the coming hours rose in previous days (weeks)."""
    anchored_slots: IntArray = field(repr=False)
    """Slots predicted from their reading before their latest pods, those pods counted in full."""
    held_for_seconds: float | None = None
    """Stale metrics: how old the held peaks are (None when fresh)."""
    rise_fit: RiseFit | None = None
    """How the remembered rises are weighed, once the plugin has seen what came (None: not yet)."""

    @property
    def missing_millis(self) -> FloatArray:
        """Per scored node, millicores of pods bound since the window began that the reading lacks."""
        return np.where(self.estimated_mask, 0.0, self.missing_by_slot[self.nodes])

    @property
    def rise_percent(self) -> FloatArray:
        """Per scored node, percent points the coming hours rose in previous days (weeks)."""
        return np.where(self.estimated_mask, 0.0, self.rise_by_slot[self.nodes])

    @property
    def anchored_mask(self) -> BoolArray:
        """Per scored node, whether it was read from before its latest pods."""
        return np.isin(self.nodes, self.anchored_slots) & ~(self.estimated_mask | self.unscored_mask)

    @property
    def estimated(self) -> tuple[str, ...]:
        return self._named(self.estimated_mask)

    @property
    def unscored(self) -> tuple[str, ...]:
        return self._named(self.unscored_mask)

    @property
    def anchored(self) -> tuple[str, ...]:
        return self._named(self.anchored_mask)

    @property
    def inflight(self) -> dict[str, int]:
        missing = self.missing_millis
        return {self.names[self.nodes[i]]: int(missing[i]) for i in _largest(missing)}

    @property
    def seasonal(self) -> dict[str, float]:
        rise = self.rise_percent
        return {self.names[self.nodes[i]]: float(rise[i]) for i in _largest(rise)}

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
        inflight = self.inflight
        if inflight:
            text = ", ".join(f"{node} +{millis}m" for node, millis in inflight.items())
            more = int((self.missing_millis > 0.5).sum()) - len(inflight)
            tail = f" and {more} more nodes" if more > 0 else ""
            lines.append(f"pods not yet in the metrics: {text}{tail}")
        if self.anchored:
            lines.append(
                "read from before their latest pods, which count in full (the source may hold less than "
                f"its window): {_names(self.anchored)}"
            )
        seasonal = self.seasonal
        if seasonal:
            text = ", ".join(f"{node} +{rise:.0f}pp" for node, rise in seasonal.items())
            weighed = f" (weighed by what came: {self.rise_fit})" if self.rise_fit else ""
            lines.append(f"daily/weekly pattern, rise ahead: {text}{weighed}")
        return lines

    def _named(self, mask: BoolArray) -> tuple[str, ...]:
        return tuple(self.names[slot] for slot in self.nodes[mask].tolist())


def _largest(values: FloatArray) -> list[int]:
    """Indices of the few largest values above 0.5 (what a note shows), largest first."""
    positive = np.flatnonzero(values > 0.5)
    if len(positive) > _SHOWN:
        positive = positive[np.argpartition(-values[positive], _SHOWN)[:_SHOWN]]
    return sorted(positive.tolist(), key=lambda i: -values[i])


def _names(nodes: Sequence[str]) -> str:
    shown = ", ".join(nodes[:_SHOWN])
    return shown if len(nodes) <= _SHOWN else f"{shown} and {len(nodes) - _SHOWN} more"
