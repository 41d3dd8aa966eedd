"""docs/benchmarks.md is rewritten section by section: a run replaces only what it measured."""

from __future__ import annotations

from pathlib import Path

from bench.report import TITLE, merge, milliseconds, number, parse_sections, table, write

ORDER = ["environment", "throughput", "placement"]


def test_a_new_document_has_the_intro_and_the_sections_in_registry_order() -> None:
    text = merge("", {"throughput": "## T\nbody\n", "environment": "## E\n"}, ORDER)
    assert text.startswith(TITLE + "\n")
    assert list(parse_sections(text)) == ["environment", "throughput"]
    assert "<!-- section: throughput -->\n## T\nbody\n<!-- /section: throughput -->\n" in text


def test_rerunning_one_section_keeps_the_others_untouched() -> None:
    first = merge("", {"environment": "env 1\n", "throughput": "t 1\n", "placement": "p 1\n"}, ORDER)
    second = merge(first, {"environment": "env 2\n", "throughput": "t 2\n"}, ORDER)
    assert parse_sections(second) == {"environment": "env 2\n", "throughput": "t 2\n", "placement": "p 1\n"}
    assert merge(second, {}, ORDER) == second  # stable


def test_a_new_section_goes_before_the_sections_that_follow_it_in_the_registry() -> None:
    first = merge("", {"environment": "e\n", "placement": "p\n"}, ORDER)
    second = merge(first, {"throughput": "t\n"}, ORDER)
    assert list(parse_sections(second)) == ["environment", "throughput", "placement"]
    third = merge(second, {"other": "o\n"}, ORDER)  # unknown to the registry: last
    assert list(parse_sections(third))[-1] == "other"


def test_write_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "docs" / "benchmarks.md"
    write(path, {"throughput": "x\n"}, ORDER)
    write(path, {"environment": "y\n"}, ORDER)
    assert parse_sections(path.read_text()) == {"environment": "y\n", "throughput": "x\n"}


def test_formatting() -> None:
    assert table(["a", "b"], [["1", "2"]]) == "| a | b |\n| :--- | ---: |\n| 1 | 2 |\n"
    assert number(1234.56, 1) == "1,234.6"
    assert number(float("nan")) == "–"
    assert milliseconds(0.0123) == "12.3"
    assert milliseconds(1.5) == "1,500"


class _Run:
    def __init__(self, throughput: float, p50: float, p99: float, cpu: float) -> None:
        self.throughput, self.p50, self.p99, self._cpu = throughput, p50, p99, cpu

    def cpu_ms_per_pod(self, process: str) -> float:
        return self._cpu


def test_comparison_rows_put_ours_upstream_and_their_ratios_with_blank_extras() -> None:
    from bench.report import comparison_rows

    rows = comparison_rows(_Run(20.0, 0.5, 1.0, 2.0), _Run(10.0, 1.0, 2.0, 4.0), lambda run: ["x", "y"])
    assert rows[0][:1] + rows[0][-2:] == ["ours", "x", "y"]
    assert rows[2] == ["ours / upstream", "2.00×", "0.50×", "0.50×", "0.50×", "", ""]
