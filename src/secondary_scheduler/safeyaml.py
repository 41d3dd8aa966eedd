"""YAML that cannot hurt the reader: bounded size, alias expansion and nesting, Go's number rules.

Every file and object this program reads as YAML (scheduler configs, the operator's ConfigMaps,
CRs, kubeconfigs, `score` snapshots and pods) may come from someone else. PyYAML shares aliased
nodes while composing, but everything that walks the result afterwards (our line-tracking
walker, validation, JSON dumps) expands them: a 700-byte "billion laughs" document of nested
anchors becomes billions of values. So composition here counts the values the document expands
to and stops at the limits Kubernetes itself applies (sigs.k8s.io/yaml's decoder refuses
"excessive aliasing" by the same ratio), before anything expands. Nesting depth is bounded
too, so a `[[[[...` document cannot exhaust the stack, and the text's size is checked before
parsing starts.

Scalars are read as Kubernetes reads them (go-yaml through JSON): `1e3` is a number, and a
number JSON cannot carry (`.inf`, `.nan`, `1e309`) is an error rather than a float that later
code compares, multiplies or prints as "inf".
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml
from yaml.error import Mark

MIB = 1024 * 1024
MAX_MANIFEST_BYTES = 3 * MIB
"""A Kubernetes object or kubeconfig: the API server refuses request bodies over 3 MiB."""
MAX_CONFIG_BYTES = 1 * MIB
"""A KubeSchedulerConfiguration: it lives in a ConfigMap, which holds at most 1 MiB."""
MAX_SNAPSHOT_BYTES = 64 * MIB
"""A `secsched score` snapshot: room for thousands of nodes and tens of thousands of pods."""
MAX_DEPTH = 100
"""Nesting levels; Kubernetes objects need about 15 (a pod's affinity terms), CRD schemas ~40."""

# go-yaml v2's "excessive aliasing" rule (decode.go, allowedAliasRatio), which every Kubernetes
# component applies through sigs.k8s.io/yaml: small documents may expand mostly through aliases,
# large ones hardly at all, so alias-driven values stay around 400,000 at most.
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000

_GO_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_YAML11_FLOAT_NO_DOT = re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$")


class YamlLimitError(yaml.MarkedYAMLError):
    """The document is too large, too deeply nested, expands too far, or holds a number JSON cannot."""

    def __init__(self, problem: str, mark: Mark | None = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def allowed_alias_ratio(decoded: int) -> float:
    """The share of `decoded` values that may come from alias expansion (go-yaml's rule)."""
    if decoded <= _ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_HIGH:
        return 0.10
    span = _ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_LOW) / span


class _Bounds(yaml.composer.Composer, yaml.constructor.SafeConstructor):
    """Counts, while composing, how many values the document expands to (a mixin over a Composer).

    `max_values` caps the expanded count outright (a scheduler config has a few hundred values;
    a cap far above that keeps the line-tracking walker cheap); the alias ratio applies always.
    """

    if TYPE_CHECKING:  # the Parser's (pure Python or libyaml's)

        def peek_event(self) -> Any: ...

        def check_event(self, *choices: Any) -> bool: ...

    def _init_bounds(self, max_values: int | None, max_depth: int) -> None:
        self.max_values = max_values
        self.max_depth = max_depth
        self._depth = 0
        self._decoded = 0
        self._aliased = 0
        self._sizes: dict[int, int] = {}
        self._open: list[int] = [0]

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:
                    raise YamlLimitError(
                        f"the alias *{event.anchor} refers to a node that contains it (a recursive "
                        "structure, which Kubernetes' YAML reader refuses): write the value out instead",
                        event.start_mark,
                    )
                self._count(size, aliased=True, mark=event.start_mark)
            return cast(yaml.Node, super().compose_node(parent, index))
        start = self.peek_event().start_mark
        self._depth += 1
        if self._depth > self.max_depth:
            raise YamlLimitError(
                f"nested more than {self.max_depth} levels deep: no Kubernetes object is; "
                "check the brackets and indentation",
                start,
            )
        self._open.append(0)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = self._open.pop() + 1
        self._sizes[id(node)] = size
        self._open[-1] += size
        self._count(1, aliased=False, mark=start)
        return cast(yaml.Node, node)

    def _count(self, size: int, *, aliased: bool, mark: Mark) -> None:
        """Count `size` more values: 1 for a node, an anchor's expanded size for an alias."""
        self._decoded += size
        if aliased:
            self._open[-1] += size
            self._aliased += size
        if self.max_values is not None and self._decoded > self.max_values:
            raise YamlLimitError(
                f"the document expands to more than {self.max_values:,} values (aliases included): "
                "that is far more than this kind of file holds; check for anchors (&name) reused "
                "through aliases (*name) and write the values out",
                mark,
            )
        if (
            self._aliased > 100
            and self._decoded > 1000
            and self._aliased / self._decoded > allowed_alias_ratio(self._decoded)
        ):
            raise YamlLimitError(
                f"YAML aliases (*name) expand this document to more than {self._decoded:,} values, "
                "mostly copies of anchored (&name) nodes (Kubernetes refuses such documents as "
                "'excessive aliasing'): write the values out instead of nesting aliases",
                mark,
            )

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value = super().construct_yaml_float(node)
        if math.isnan(value) or math.isinf(value):
            written = str(node.value)
            lowered = written.lower().lstrip("+-")
            why = (
                "is out of range for a number (at most about 1.8e308)"
                if lowered not in (".inf", ".nan")
                else "is not a number JSON can carry, so Kubernetes refuses it"
            )
            raise YamlLimitError(f"`{written}` {why}: write a finite number", node.start_mark)
        return float(value)


class BoundedLoader(_Bounds, yaml.SafeLoader):
    """PyYAML's pure-Python SafeLoader, bounded: its error messages are the ones the config tests know."""

    def __init__(self, stream: str, *, max_values: int | None = None, max_depth: int = MAX_DEPTH) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._init_bounds(max_values, max_depth)


_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None) or yaml.parser.Parser
"""libyaml's parser when PyYAML was built with it (the pinned wheels are), else the pure-Python one
(which then needs the pure-Python reader and scanner too: see _loader_for)."""


class FastBoundedLoader(
    _Bounds,
    yaml.composer.Composer,
    _CParser,
    yaml.constructor.SafeConstructor,
    yaml.resolver.Resolver,
):
    """libyaml's scanner and parser (C, ~10x faster on big snapshots) under the same bounded composer.

    The composer stays Python (ours, counting), ahead of CParser's own in the method order.
    """

    def __init__(self, stream: str, *, max_values: int | None = None, max_depth: int = MAX_DEPTH) -> None:
        _CParser.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._init_bounds(max_values, max_depth)


FAST_PARSE_BYTES = 256 * 1024
"""From this size on, documents are parsed by libyaml (when installed): a multi-MiB snapshot in
pure Python takes seconds per MiB."""

# Go (go-yaml, then JSON) reads `1e3` as a number; YAML 1.1 (PyYAML) needs a dot. Read it as Go does.
for _loader in (BoundedLoader, FastBoundedLoader):
    _loader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML11_FLOAT_NO_DOT, list("-+0123456789"))
    cast(Any, _loader).add_constructor("tag:yaml.org,2002:float", _Bounds.construct_yaml_float)


def _loader_for(text: str, max_values: int | None) -> BoundedLoader | FastBoundedLoader:
    if len(text) >= FAST_PARSE_BYTES and yaml.__with_libyaml__:
        return FastBoundedLoader(text, max_values=max_values)
    return BoundedLoader(text, max_values=max_values)


def human_bytes(size: int) -> str:
    """1048576 -> "1 MiB", 1536 -> "1.5 KiB", 200 -> "200 bytes"."""
    for unit, factor in (("MiB", MIB), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"


def check_size(size: int, limit: int, what: str) -> None:
    """Refuse a document of `size` bytes over `limit` before parsing it."""
    if size > limit:
        raise YamlLimitError(
            f"{what} is {human_bytes(size)}; at most {human_bytes(limit)} is read: is this the right file?"
        )


def read_limited(path: str | Path, limit: int, what: str) -> bytes:
    """A file's bytes, refusing more than `limit` without reading them all (OSError if unreadable)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise YamlLimitError(
            f"{what} is larger than {human_bytes(limit)}, the most that is read: is this the right file?"
        )
    return data


def safe_load(text: str, *, max_bytes: int, what: str = "the document", max_values: int | None = None) -> Any:
    """`yaml.safe_load` within the limits; raises yaml.YAMLError (YamlLimitError for a limit)."""
    check_size(len(text.encode("utf-8", errors="replace")), max_bytes, what)
    loader = _loader_for(text, max_values)
    try:
        return loader.get_single_data()
    except RecursionError as error:  # a limit above should come first; never let this escape
        raise YamlLimitError("nested too deeply to read") from error
    finally:
        loader.dispose()


def safe_load_all(
    text: str, *, max_bytes: int, what: str = "the document", max_values: int | None = None
) -> list[Any]:
    """Every document of a multi-document stream, within the limits (counted per document)."""
    check_size(len(text.encode("utf-8", errors="replace")), max_bytes, what)
    loader = _loader_for(text, max_values)
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
            loader._decoded = loader._aliased = 0
        return documents
    finally:
        loader.dispose()


def describe_error(error: yaml.YAMLError) -> tuple[int | None, str]:
    """(1-based line or None, a readable message) for any PyYAML error, ours included."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        if isinstance(error, YamlLimitError):
            return line, str(error.problem)
        text = ", ".join(str(part) for part in (error.context, error.problem) if part) or "unreadable"
        return line, f"YAML syntax error: {text}"
    if isinstance(error, yaml.reader.ReaderError):
        return None, (
            f"character #x{error.character:04x} at position {error.position} is not allowed in YAML "
            "(a control character or a binary file): is this the right file?"
            if isinstance(error.character, int)
            else f"not valid YAML text: {error.reason}"
        )
    return None, f"not valid YAML: {error}"


class Document:
    """A parsed document that can still say on which line a value was written."""

    def __init__(self, root: yaml.Node | None, data: Any) -> None:
        self.root = root
        self.data = data

    def line(self, *path: str | int) -> int | None:
        """The 1-based line of the value at `path` (or of its nearest ancestor present)."""
        node = self.root
        if node is None:
            return None
        found = node.start_mark.line + 1
        for part in path:
            child: yaml.Node | None = None
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                child = next(
                    (
                        value
                        for key, value in node.value
                        if isinstance(key, yaml.ScalarNode) and key.value == part
                    ),
                    None,
                )
            elif (
                isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value)
            ):
                child = node.value[part]
            if child is None:
                break
            node = child
            found = node.start_mark.line + 1
        return found


def load_document(
    text: str, *, max_bytes: int, what: str = "the document", max_values: int | None = None
) -> Document:
    """`safe_load`, keeping the composed nodes so errors can name lines."""
    check_size(len(text.encode("utf-8", errors="replace")), max_bytes, what)
    loader = _loader_for(text, max_values)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except RecursionError as error:
        raise YamlLimitError("nested too deeply to read") from error
    finally:
        loader.dispose()
    return Document(root, data)
