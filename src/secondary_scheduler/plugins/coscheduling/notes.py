"""What Coscheduling decided about a gang in one cycle, for ``secsched score`` to print."""

from __future__ import annotations

from dataclasses import dataclass, field

from secondary_scheduler.framework.interface import CycleState


@dataclass
class GangNote:
    """The gang's lines of one cycle (PreFilter's and PostFilter's), in the order they were decided."""

    plugin: str
    entries: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return list(self.entries)


def add_line(state: CycleState, plugin: str, line: str) -> None:
    """Append ``line`` to the plugin's note of this cycle (one note per plugin and cycle)."""
    note = state.notes.get(plugin)
    if not isinstance(note, GangNote):
        note = GangNote(plugin)
        state.add_note(note)
    note.entries.append(line)
