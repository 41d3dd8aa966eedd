"""Prints the conformance test's agreement per plugin at the end of the run."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.conformance.test_conformance import summary_lines

    lines = summary_lines()
    if lines:
        terminalreporter.section("conformance with upstream kube-scheduler")
        for line in lines:
            terminalreporter.write_line(line)
