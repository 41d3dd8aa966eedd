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


# -- prose every compared section writes the same way ------------------------------------------
LOADED = 1.0
"""A 1-minute load above this before the benchmark began means other work was running."""
IDLE_BUSY = 0.5
"""CPUs busy with the cluster idle above which other work was running (the cluster alone: about 0.1)."""


class Settled(Protocol):
    """What the load note reads from a run record."""

    @property
    def load_before(self) -> float: ...

    @property
    def load_after(self) -> float: ...

    @property
    def busy_before(self) -> float: ...

    @property
    def idle_cpus(self) -> float: ...


def load_note(
    cpus: int,
    load_at_start: float,
    records: Sequence[Settled],
    quiet_margin: float,
    other_loads: Sequence[float] = (),
) -> list[str]:
    """A paragraph on how busy the machine was: whether other work ran beside the section's runs.

    The load during the runs counts the benchmark's own cluster; what says other work ran is the
    load before the cluster started (``load_at_start``), the idle cluster's machine being busy, or
    runs that started before the machine settled. ``other_loads``: loads the section measured
    outside its compared runs.
    """
    loads = [r.load_before for r in records] + [r.load_after for r in records] + list(other_loads)
    loads = [value for value in loads if not math.isnan(value)]
    if not loads:
        return []
    idle = max((r.idle_cpus for r in records if not math.isnan(r.idle_cpus)), default=math.nan)
    unsettled = [r for r in records if r.busy_before - r.idle_cpus >= quiet_margin]
    loaded = load_at_start > LOADED or (not math.isnan(idle) and idle > IDLE_BUSY) or bool(unsettled)
    text = (
        f"1-minute load average on the {cpus} CPUs: {load_at_start:.2f} when the benchmark began, "
        f"{min(loads):.2f}-{max(loads):.2f} at the starts and ends of this section's runs (the "
        "benchmark's own cluster counts in it too)."
    )
    if loaded:
        text += (
            " **These figures are from a machine shared with other work**"
            + (
                f" (with the cluster idle, {idle:.2f} of its {cpus} CPUs were busy)"
                if not math.isnan(idle)
                else ""
            )
            + (
                f" ({len(unsettled)} of {len(records)} runs started before the machine settled, "
                "see *busy before* below)"
                if unsettled
                else ""
            )
            + ": absolute numbers are lower than on an idle machine; the ratios compare runs made in "
            "ABBA order under the same conditions."
        )
    else:
        text += " The machine was otherwise quiet."
    return [text, ""]


def every_run(explanation: str, header: list[str], rows: list[list[str]], align: str) -> list[str]:
    """The "Every run" part: each run in the order they ran, after what its columns mean."""
    return [
        "### Every run",
        "",
        f"In the order they ran. {explanation}",
        "",
        table(header, rows, align=align),
    ]


def compared_runs_method(sizes: Sequence[int], repeats: int) -> str:
    """The Method's first point, the same for every section that compares runs on the throughput
    section's cluster."""
    listed = ", ".join(f"{size:,}" for size in sizes)
    return f"""\
- The cluster and the scheduler processes are the throughput section's: at each size ({listed} nodes
  here) both schedulers run in turn, {repeats} runs each in ABBA order, each a fresh process
  with the same flags and configuration, each waiting for its caches to sync; each run has a fresh
  namespace. The best run of each scheduler (by throughput) is shown above; every run is listed.\
"""
