"""bench/'s import graph, read from the source (ast: nothing is imported or run).

What it guards (issue 40): no import cycle between bench's modules (the section table at the
top imports the sections, the sections import the shared measuring and types below them,
never the table nor each other's private helpers). Imports inside functions count; those
under ``if TYPE_CHECKING:`` do not (never executed).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import bench
from tests.unit.test_import_graph import edges_in_cycles

from secsched_devtools.importgraph import executed_imports

ROOT = Path(bench.__file__).resolve().parent
MODULES = {f"bench.{path.stem}": path for path in sorted(ROOT.glob("*.py")) if path.stem != "__init__"}
SECTION_TABLE = "bench.sections"
ENTRY_POINTS = {"bench.__main__", "bench.runner"}
"""The only modules that may import the section table."""


@cache
def imports_of(module: str) -> tuple[tuple[str, str], ...]:
    """(bench module imported, name taken from it or "") for each import of ``module`` that
    reaches another bench module."""
    found: list[tuple[str, str]] = []
    for node in executed_imports(MODULES[module]):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name in MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                if child in MODULES:
                    found.append((child, ""))
                elif node.module in MODULES:
                    found.append((node.module, alias.name))
    return tuple(found)


def edges() -> set[tuple[str, str]]:
    return {(module, target) for module in MODULES for target, _ in imports_of(module)}


def test_no_import_cycle_between_bench_modules() -> None:
    assert sorted(f"{a} -> {b}" for a, b in edges_in_cycles(edges())) == []


def test_only_the_entry_points_import_the_section_table() -> None:
    """The sections' shared types live in ``bench.runinfo``: a section needs nothing from the table."""
    importers = {module for module, target in edges() if target == SECTION_TABLE}
    assert importers <= ENTRY_POINTS


def test_no_bench_module_takes_another_ones_private_names() -> None:
    """What two sections share has a public home (``bench.measuring``, ``bench.claims``, ...)."""
    taken = [
        f"{module} imports {name} from {target}"
        for module in MODULES
        for target, name in imports_of(module)
        if name.startswith("_")
    ]
    assert taken == []


def test_the_graph_is_read() -> None:
    """Guards the guard: the table imports every section, a section its measuring module."""
    assert {("bench.sections", "bench.throughput"), ("bench.throughput", "bench.measuring")} <= edges()
    assert edges_in_cycles([("bench.a", "bench.b"), ("bench.b", "bench.a")])
