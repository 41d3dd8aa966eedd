"""What a load reports: problems anchored to a YAML path and a line, so people can fix them.

Every step of the loader records into one `Findings` collector instead of raising, so a single
run reports all errors at once; the loader turns them into `Problem`s and a `ConfigError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

YamlPath = tuple[str | int, ...]
"""Keys and list indices from the document root; the string "[]" stands for "any index"."""


def format_path(path: YamlPath) -> str:
    """`("profiles", 0, "plugins")` -> `profiles[0].plugins`, the way people read YAML paths."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part == "[]":
            text += "[]"
        else:
            text += f".{part}" if text else part
    return text


@dataclass(frozen=True)
class Problem:
    """One error or warning: where it is (YAML path and 1-based line) and what to do about it."""

    path: str
    line: int | None
    message: str

    def render(self, source: str) -> str:
        """`file:line: path: message`, the compiler-style form editors and terminals link."""
        where = f"{source}:{self.line}" if self.line is not None else source
        what = f"{self.path}: " if self.path else ""
        return f"{where}: {what}{self.message}"


class ConfigError(Exception):
    """The configuration cannot be used; `problems` lists every error found, in file order."""

    def __init__(self, source: str, problems: Sequence[Problem], warnings: Sequence[Problem] = ()) -> None:
        self.source = source
        self.problems = list(problems)
        self.warnings = list(warnings)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.problems)
        lines = [f"{self.source}: {count} error{'s' if count != 1 else ''} in the scheduler configuration"]
        lines += [problem.render(self.source) for problem in self.problems]
        return "\n".join(lines)


@dataclass(frozen=True)
class Finding:
    path: YamlPath
    message: str
    line: int | None = None


@dataclass
class Findings:
    """Errors and warnings collected across the whole load.

    A value error at a path that is `shadow`ed is dropped: once a value is reported as, say,
    an unsubstituted placeholder, a second "wrong type" error for the same value is noise.
    """

    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    shadowed: set[YamlPath] = field(default_factory=set)

    def error(self, path: YamlPath, message: str, line: int | None = None) -> None:
        self.errors.append(Finding(path, message, line))

    def value_error(self, path: YamlPath, message: str) -> None:
        """An error about the value at `path` (not its key), unless that value was already reported."""
        if path not in self.shadowed:
            self.errors.append(Finding(path, message))

    def warn(self, path: YamlPath, message: str, line: int | None = None) -> None:
        self.warnings.append(Finding(path, message, line))

    def shadow(self, path: YamlPath) -> None:
        self.shadowed.add(path)
