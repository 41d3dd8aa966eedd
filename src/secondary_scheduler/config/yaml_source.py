"""YAML to plain Python data, remembering the line of every key and list item.

`yaml.safe_load` forgets where values came from, so error messages could only name a path.
Here the document is composed into PyYAML nodes (which carry marks) and converted by hand,
recording `path -> line` on the way. Duplicate keys, which PyYAML silently collapses and
Kubernetes' strict decoder rejects, are reported instead of hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from secondary_scheduler.config.errors import Findings, YamlPath
from secondary_scheduler.safeyaml import (
    MAX_CONFIG_BYTES,
    BoundedLoader,
    YamlLimitError,
    describe_error,
    human_bytes,
)

_MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_CONFIG_VALUES = 50_000
"""Values a configuration may expand to (aliases included); real ones have a few hundred."""


@dataclass(frozen=True)
class YamlDocument:
    data: Any
    lines: Mapping[YamlPath, int]

    def line_of(self, path: YamlPath) -> int | None:
        """The line of `path`, or of its nearest ancestor that is in the file (for missing keys)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


def parse_yaml(text: str, findings: Findings) -> YamlDocument | None:
    """The single document in `text`, or None after recording why it cannot be read.

    Bounded (see secondary_scheduler.safeyaml): a document over 1 MiB, nested too deeply or
    expanding through aliases past the limits is reported, never expanded.
    """
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONFIG_BYTES:
        findings.error(
            (),
            f"the file is {human_bytes(size)}; a configuration is at most {human_bytes(MAX_CONFIG_BYTES)} "
            "(the most a ConfigMap holds): is this the right file?",
        )
        return None
    try:
        loader = BoundedLoader(_plain_indentation(text, findings), max_values=MAX_CONFIG_VALUES)
    except yaml.YAMLError as error:  # the reader refuses control characters before parsing starts
        findings.error((), describe_error(error)[1])
        return None
    try:
        root = loader.get_single_node()
        if root is None:
            findings.error((), "the file is empty: expected a KubeSchedulerConfiguration", line=1)
            return None
        walker = _Walker(loader, findings)
        data = walker.value(root, ())
    except YamlLimitError as error:
        mark = error.problem_mark
        findings.error((), str(error.problem), line=mark.line + 1 if mark else None)
        return None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        findings.error((), _syntax_message(error), line=mark.line + 1 if mark else None)
        return None
    except yaml.YAMLError as error:
        findings.error((), f"not valid YAML: {error}")
        return None
    finally:
        loader.dispose()
    return YamlDocument(data, walker.lines)


def _plain_indentation(text: str, findings: Findings) -> str:
    """`text` with Unicode spaces in indentation made plain, after reporting them as an error.

    Text copied from web pages often indents with non-breaking spaces (U+00A0), which YAML
    does not count as indentation: keys silently move to other levels. Parsing on as if they
    were spaces lets the same run report the file's other problems.
    """
    lines = text.split("\n")
    odd: list[int] = []
    for number, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if any(char not in " \t" for char in line[:indent]):
            odd.append(number + 1)
            lines[number] = (
                "".join(" " if char not in "\t" else char for char in line[:indent]) + line[indent:]
            )
    if odd:
        lines_are = f"lines {_ranges(odd)} are" if len(odd) > 1 else f"line {odd[0]} is"
        findings.error(
            (),
            f"{lines_are} indented with non-breaking or other Unicode spaces (typical of text copied "
            "from a web page), which YAML does not count as indentation: replace them with plain spaces, "
            "e.g. `sed -i 's/\\xc2\\xa0/ /g' config.yaml`. The other errors were found as if that were done",
            line=odd[0],
        )
    return "\n".join(lines)


def _ranges(numbers: list[int]) -> str:
    """[7, 8, 9, 12] -> "7-9, 12"."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _syntax_message(error: yaml.MarkedYAMLError) -> str:
    text = ", ".join(str(part) for part in (error.context, error.problem) if part) or str(error)
    hint = ""
    if "\\t" in text:
        hint = ": YAML does not allow tabs for indentation; indent with spaces"
    elif "mapping values are not allowed" in text:
        hint = ": a `key: value` line is indented wrongly, or a value contains ': ' and must be quoted"
    elif "expected a single document" in text:
        hint = ": put only the KubeSchedulerConfiguration in this file (remove the other '---' documents)"
    return f"YAML syntax error: {text}{hint}"


class _Walker:
    def __init__(self, loader: yaml.SafeLoader, findings: Findings) -> None:
        self.loader = loader
        self.findings = findings
        self.lines: dict[YamlPath, int] = {}
        self._open: set[int] = set()  # nodes being converted, to stop on recursive aliases

    def value(self, node: yaml.Node, path: YamlPath) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.loader.construct_object(node, deep=True)
        if id(node) in self._open:
            self.findings.error(path, "a YAML alias refers to itself; expand it")
            return None
        self._open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.value(item, (*path, index)) for index, item in enumerate(node.value)]
            return self._mapping(node, path)
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: yaml.Node, path: YamlPath) -> dict[str, Any]:
        assert isinstance(node, yaml.MappingNode)
        explicit = sum(1 for key, _ in node.value if key.tag != _MERGE_TAG)
        self.loader.flatten_mapping(node)
        merged = len(node.value) - explicit  # `<<: *anchor` entries come first and may be overridden
        result: dict[str, Any] = {}
        from_merge: set[str] = set()
        for position, (key_node, value_node) in enumerate(node.value):
            line = key_node.start_mark.line + 1
            key = self.loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                self.findings.error(path, f"key {key!r} is not a string: quote it", line=line)
                continue
            child = (*path, key)
            if key in result and key not in from_merge:
                self.findings.error(
                    child,
                    f"duplicate key `{key}` (first at line {self.lines[child]}): keep only one",
                    line=line,
                )
                continue
            from_merge.discard(key)
            if position < merged:
                from_merge.add(key)
            self.lines[child] = line
            result[key] = self.value(value_node, child)
        return result
