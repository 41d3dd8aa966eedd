"""The soak's report: its Markdown, the page section it rewrites (and nothing else), its CSV."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest
from bench.soak.analysis import analyse
from bench.soak.churn import Churned
from bench.soak.options import Bounds, SoakOptions
from bench.soak.report import RunContext, render, write_samples, write_section
from tests.unit.soak.soaksamples import steady_run

CONTEXT = RunContext("2026-11-28 12:00 UTC", "make soak", "2 CPUs (test)", "abc123", 0.5)
CHURNED = Churned(
    pods_created=18_000,
    pods_deleted=17_700,
    pods_by_kind=Counter({"plain": 9_900, "spread": 3_600}),
    nodes_added=300,
    nodes_removed=280,
    flaps=Counter({"load": 14, "exporter away": 13, "prometheus away": 13}),
)


def test_the_section_says_what_ran_and_how_flat_it_stayed() -> None:
    samples = steady_run(rss=0.5)
    analysis = analyse(samples, 3600, Bounds())
    body = render(CONTEXT, SoakOptions(), analysis, CHURNED, samples)
    assert body.startswith("_Measured 2026-11-28 12:00 UTC with `make soak` on 2 CPUs (test) (commit abc123)")
    assert "18,000 pods created" in body
    assert "300 nodes added and 280 removed" in body
    assert "load 14, exporter away 13, prometheus away 13" in body
    assert "Verdict: **FAILED** (RSS slope after the first quarter)" in body
    assert "fitted slope after the first quarter +30.0 MiB per hour" in body
    assert "| RSS slope after the first quarter | 30.00 MiB/h | 24 MiB/h | **exceeded** |" in body
    timeline = [line for line in body.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert [line.split(" | ")[0] for line in timeline] == [f"| {minute:.1f}" for minute in range(0, 61, 5)]


PAGE = """\
# Reliability

Intro.

## Chaos: `make chaos`

Chaos figures, another tool's.

## Soak: `make soak`

Not yet measured.
"""


def test_missed_samples_are_counted_with_the_first_reason() -> None:
    samples = steady_run()
    missed = ["12m00s: ReadTimeout", "40m00s: ReadTimeout"]
    body = render(CONTEXT, SoakOptions(), analyse(samples, 3600, Bounds()), CHURNED, samples, missed)
    assert "(61 samples, 2 missed (the first at 12m00s: ReadTimeout): RSS" in body
    assert "(61 samples: RSS" in render(
        CONTEXT, SoakOptions(), analyse(samples, 3600, Bounds()), CHURNED, samples
    )


@pytest.mark.parametrize("after", ["", "\n## Later\n\nMore.\n"])
def test_only_the_soak_section_is_rewritten(tmp_path: Path, after: str) -> None:
    page = tmp_path / "reliability.md"
    page.write_text(PAGE + after)
    write_section(page, "New figures.\n")
    write_section(page, "Newer figures.\n")
    assert page.read_text() == PAGE.replace("Not yet measured.", "Newer figures.") + after


def test_a_page_without_the_heading_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "other.md"
    page.write_text("# Other\n")
    with pytest.raises(ValueError, match="no '## Soak: `make soak`' heading"):
        write_section(page, "figures")


def test_the_samples_go_to_csv_one_row_each(tmp_path: Path) -> None:
    samples = steady_run(minutes=3)
    write_samples(tmp_path / "out" / "samples.csv", samples)
    rows = list(csv.DictReader((tmp_path / "out" / "samples.csv").open()))
    assert [float(row["seconds"]) for row in rows] == [0, 60, 120, 180]
    assert rows[-1]["watch_tasks"] == "18"
