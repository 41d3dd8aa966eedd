"""What a Python module imports, read from its source with ``ast`` (nothing is imported or run).

One home for the reading that the import-graph tests (tests/unit/test_import_graph.py, bench's
tests/unit/bench/test_bench_import_graph.py) and the architecture drawing (docs/architecture.py)
share, so the rules they check and the picture they draw cannot drift apart. Every import
counts, those inside functions too (they run when the function does), except those under
``if TYPE_CHECKING:`` (never executed).
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterator
from pathlib import Path
from typing import NamedTuple


class ModuleFile(NamedTuple):
    path: Path
    is_package: bool
    """Whether the file is a package's ``__init__.py``."""


def module_files(root: Path) -> dict[str, ModuleFile]:
    """Every module of the package whose directory is ``root``, by dotted name."""
    found: dict[str, ModuleFile] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = ModuleFile(path, is_package)
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (never executed)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            named = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            )
            if named:
                hidden.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return hidden


def executed_imports(path: Path) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of the file at ``path`` that can run (deferred ones included)."""
    tree = ast.parse(path.read_text(), str(path))
    hidden = _type_checking_only(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in hidden:
            yield node


def imports_of(name: str, module: ModuleFile, known: Container[str]) -> list[str]:
    """The modules the module ``name`` imports, relative imports resolved; ``from a import b`` is
    ``a.b`` when that is in ``known``, else ``a``."""
    here = name if module.is_package else name.rpartition(".")[0]
    found: list[str] = []
    for node in executed_imports(module.path):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
            continue
        base = node.module or ""
        if node.level:
            anchor = here
            for _ in range(node.level - 1):
                anchor = anchor.rpartition(".")[0]
            base = f"{anchor}.{base}" if base else anchor
        for alias in node.names:
            child = f"{base}.{alias.name}"
            found.append(child if child in known else base)
    return found
