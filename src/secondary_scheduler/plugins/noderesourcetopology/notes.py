"""Why NodeResourceTopologyMatch decided as it did in one cycle, for ``secsched score`` to print."""

from __future__ import annotations

from dataclasses import dataclass, field

from secondary_scheduler.framework.interface import CycleState

_SHOWN_NODES = 12


@dataclass
class NUMANote:
    plugin: str
    filtered: dict[str, str] = field(default_factory=dict)
    """Node -> which zone each container would get, or why no zone fits."""
    strategy: str = ""
    scored: dict[str, list[str]] = field(default_factory=dict)
    """Node -> how its score came about (per container, per zone)."""

    def lines(self) -> list[str]:
        lines = []
        for node, why in list(self.filtered.items())[:_SHOWN_NODES]:
            lines.append(f"{node}: {why}")
        if len(self.filtered) > _SHOWN_NODES:
            lines.append(f"... and {len(self.filtered) - _SHOWN_NODES} more nodes filtered")
        for node, how in list(self.scored.items())[:_SHOWN_NODES]:
            lines.append(f"{node} ({self.strategy}): {'; '.join(how)}")
        if len(self.scored) > _SHOWN_NODES:
            lines.append(f"... and {len(self.scored) - _SHOWN_NODES} more nodes scored")
        return lines


def note_of(state: CycleState, plugin: str) -> NUMANote:
    """This cycle's note of ``plugin``, created on first use."""
    found = state.notes.get(plugin)
    if isinstance(found, NUMANote):
        return found
    note = NUMANote(plugin)
    state.add_note(note)
    return note
