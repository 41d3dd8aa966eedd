"""docs/benchmarks.md: a fixed introduction, then delimited sections that runs replace one by one."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from bench.stats import ratio

TITLE = "# Benchmarks"
INTRO = """\
Measured by `make bench` (`python -m bench`), which starts a real control plane on this
machine (etcd, kube-apiserver, kube-controller-manager, KWOK fake nodes), grows it through
each cluster size, and runs our scheduler and the upstream kube-scheduler on it in turn.
Each part below is written by one section of the benchmark and replaced only when that
section is run again (`python -m bench --only <section>`), so parts can come from
different runs: each says when and how it was measured.
"""
_SECTION = re.compile(
    r"<!-- section: (?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /section: (?P=name) -->\n?", re.DOTALL
)


def parse_sections(text: str) -> dict[str, str]:
    """Section name -> body, in the order they appear."""
    return {match["name"]: match["body"] for match in _SECTION.finditer(text)}


def merge(existing: str, updates: Mapping[str, str], order: list[str]) -> str:
    """The document with ``updates`` replacing (or adding) their sections and every other section kept.

    Sections keep their place; new ones go where ``order`` (the registry's order) puts them.
    """
    sections = parse_sections(existing)
    names = list(sections)
    for name in updates:
        if name not in names:
            later = (
                [other for other in order[order.index(name) + 1 :] if other in names] if name in order else []
            )
            names.insert(names.index(later[0]) if later else len(names), name)
    sections.update(updates)
    parts = [TITLE, "", INTRO]
    for name in names:
        body = sections[name].rstrip("\n") + "\n"
        parts.append(f"<!-- section: {name} -->\n{body}<!-- /section: {name} -->\n")
    return "\n".join(parts)


def write(path: Path, updates: Mapping[str, str], order: list[str]) -> None:
    existing = path.read_text() if path.exists() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(merge(existing, updates, order))


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A Markdown table; ``align`` has one letter per column (l or r), right by default."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if side == "r" else ":---" for side in align]
    lines = [header, rule, *rows]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines) + "\n"


def number(value: float, digits: int = 0) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value:,.{digits}f}"


def milliseconds(seconds: float) -> str:
    if seconds is None or math.isnan(seconds):
        return "–"
    value = seconds * 1000
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


class Measured(Protocol):
    """What the ours-vs-upstream tables read from a run record."""

    @property
    def throughput(self) -> float: ...

    @property
    def p50(self) -> float: ...

    @property
    def p99(self) -> float: ...

    def cpu_ms_per_pod(self, process: str) -> float: ...


_Record = TypeVar("_Record", bound=Measured)


def comparison_rows(
    ours: _Record, theirs: _Record, extra: Callable[[_Record], Sequence[str]]
) -> list[list[str]]:
    """Rows "ours", "upstream" and "ours / upstream": pods/s, p50, p99, scheduler CPU/pod, then ``extra``."""
    rows = [
        [
            label,
            number(record.throughput, 1),
            milliseconds(record.p50),
            milliseconds(record.p99),
            number(record.cpu_ms_per_pod("scheduler"), 2),
            *extra(record),
        ]
        for label, record in (("ours", ours), ("upstream", theirs))
    ]
    ratios = [
        ratio(ours.throughput, theirs.throughput),
        ratio(ours.p50, theirs.p50),
        ratio(ours.p99, theirs.p99),
        ratio(ours.cpu_ms_per_pod("scheduler"), theirs.cpu_ms_per_pod("scheduler")),
    ]
    blanks = [""] * len(extra(ours))
    rows.append(["ours / upstream", *(f"{number(value, 2)}×" for value in ratios), *blanks])
    return rows
