"""Node selectors (``v1.NodeSelector``) evaluated over many nodes at once.

Terms are ORed, a term's requirements ANDed. Operators: In, NotIn, Exists, DoesNotExist,
and Gt/Lt, which compare the label value as an integer (a node whose value is not an
integer does not match). ``matchFields`` supports ``metadata.name`` with In/NotIn and one
value. An empty term, or one that does not parse, matches no node, as in kube-scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.labelcolumn import parse_int

if TYPE_CHECKING:
    from secondary_scheduler.framework.nodetable import NodeTable

NODE_NAME_FIELD = "metadata.name"


class InvalidRequirement(ValueError):
    """A requirement that kube-scheduler would fail to parse; its term then matches nothing."""


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> LabelRequirement:
        requirement = cls(str(raw.get("key", "")), str(raw.get("operator", "")), _values(raw))
        count = len(requirement.values)
        valid = {
            "In": count > 0,
            "NotIn": count > 0,
            "Exists": count == 0,
            "DoesNotExist": count == 0,
            "Gt": count == 1 and parse_int(requirement.values[0]) is not None,
            "Lt": count == 1 and parse_int(requirement.values[0]) is not None,
        }
        if not valid.get(requirement.operator, False):
            raise InvalidRequirement(f"{requirement.key} {requirement.operator} {list(requirement.values)}")
        return requirement

    def mask(self, table: NodeTable, slots: Slots) -> BoolArray:
        column = table.label_column(self.key)
        codes = column.codes[slots]
        if self.operator == "In":
            return column.isin(slots, self.values)
        if self.operator == "NotIn":
            return ~column.isin(slots, self.values)
        if self.operator == "Exists":
            return codes >= 0
        if self.operator == "DoesNotExist":
            return codes < 0
        return self._compare(codes, *column.numbers())

    def matches(self, labels: Mapping[str, str]) -> bool:
        """The same test on one node's labels (queueing hints see single Node objects)."""
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        number = parse_int(value) if value is not None else None
        bound = parse_int(self.values[0])
        if number is None or bound is None:
            return False
        return number > bound if self.operator == "Gt" else number < bound

    def _compare(self, codes: IntArray, numbers: IntArray, numeric: BoolArray) -> BoolArray:
        """Gt/Lt: the node's label value, read as an integer, against the requirement's one."""
        if not len(numbers):  # no node has this label
            return np.zeros(len(codes), dtype=np.bool_)
        bound = parse_int(self.values[0])
        assert bound is not None  # checked by parse
        present = codes >= 0
        safe = np.where(present, codes, 0)
        value = numbers[safe]
        beyond = value > bound if self.operator == "Gt" else value < bound
        return present & numeric[safe] & beyond


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    key: str
    operator: str
    value: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> FieldRequirement:
        operator = str(raw.get("operator", ""))
        values = _values(raw)
        if operator not in ("In", "NotIn") or len(values) != 1:
            raise InvalidRequirement(f"field {raw.get('key')} {operator} {list(values)}")
        return cls(str(raw.get("key", "")), operator, values[0])

    def mask(self, table: NodeTable, slots: Slots) -> BoolArray:
        if self.key == NODE_NAME_FIELD:
            slot = table.slot_of(self.value)
            equal = slots == (-1 if slot is None else slot)
        else:  # a field nodes do not have reads as ""
            equal = np.full(len(slots), self.value == "", dtype=np.bool_)
        return equal if self.operator == "In" else ~equal

    def matches(self, name: str) -> bool:
        equal = (name if self.key == NODE_NAME_FIELD else "") == self.value
        return equal if self.operator == "In" else not equal


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    expressions: tuple[LabelRequirement, ...]
    fields: tuple[FieldRequirement, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> NodeSelectorTerm | None:
        """The term, or None when it is empty or does not parse (it then matches nothing)."""
        raw = raw or {}
        try:
            expressions = tuple(LabelRequirement.parse(item) for item in raw.get("matchExpressions") or ())
            fields = tuple(FieldRequirement.parse(item) for item in raw.get("matchFields") or ())
        except InvalidRequirement:
            return None
        if not expressions and not fields:
            return None
        return cls(expressions, fields)

    def mask(self, table: NodeTable, slots: Slots) -> BoolArray:
        result = np.ones(len(slots), dtype=np.bool_)
        for expression in self.expressions:
            result &= expression.mask(table, slots)
        for field in self.fields:
            result &= field.mask(table, slots)
        return result

    def matches(self, node: Mapping[str, Any]) -> bool:
        metadata = node.get("metadata") or {}
        labels = metadata.get("labels") or {}
        return all(expression.matches(labels) for expression in self.expressions) and all(
            field.matches(str(metadata.get("name", ""))) for field in self.fields
        )


@dataclass(frozen=True, slots=True)
class NodeSelector:
    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> NodeSelector:
        parsed = (NodeSelectorTerm.parse(term) for term in raw.get("nodeSelectorTerms") or ())
        return cls(tuple(term for term in parsed if term is not None))

    def mask(self, table: NodeTable, slots: Slots) -> BoolArray:
        result = np.zeros(len(slots), dtype=np.bool_)
        for term in self.terms:
            result |= term.mask(table, slots)
        return result

    def matches(self, node: Mapping[str, Any]) -> bool:
        return any(term.matches(node) for term in self.terms)


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


def parse_preferred_terms(raw: Sequence[Mapping[str, Any]] | None) -> tuple[PreferredTerm, ...]:
    """Weighted preferences; zero weights and empty or invalid terms are dropped, as they never count."""
    terms = []
    for item in raw or ():
        weight = int(item.get("weight") or 0)
        term = NodeSelectorTerm.parse(item.get("preference"))
        if weight and term is not None:
            terms.append(PreferredTerm(weight, term))
    return tuple(terms)


def preferred_score(terms: Sequence[PreferredTerm], table: NodeTable, slots: Slots) -> IntArray:
    """Sum of the weights of the terms each node matches."""
    score = np.zeros(len(slots), dtype=np.int64)
    for preferred in terms:
        score += np.where(preferred.term.mask(table, slots), preferred.weight, 0)
    return score


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's hard node constraints: ``spec.nodeSelector`` AND required node affinity terms."""

    node_selector: tuple[LabelRequirement, ...] = ()
    required: NodeSelector | None = None

    @classmethod
    def parse(cls, spec: Mapping[str, Any]) -> RequiredNodeAffinity:
        node_selector = tuple(
            LabelRequirement(key, "In", (str(value),))
            for key, value in sorted((spec.get("nodeSelector") or {}).items())
        )
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        raw_required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        required = NodeSelector.parse(raw_required) if raw_required is not None else None
        return cls(node_selector, required)

    @property
    def is_empty(self) -> bool:
        return not self.node_selector and self.required is None

    def mask(self, table: NodeTable, slots: Slots) -> BoolArray:
        result = np.ones(len(slots), dtype=np.bool_)
        for requirement in self.node_selector:
            result &= requirement.mask(table, slots)
        if self.required is not None:
            result &= self.required.mask(table, slots)
        return result

    def matches(self, node: Mapping[str, Any]) -> bool:
        """Whether one Node object satisfies the pod's hard constraints."""
        labels = (node.get("metadata") or {}).get("labels") or {}
        if not all(requirement.matches(labels) for requirement in self.node_selector):
            return False
        return self.required is None or self.required.matches(node)


def _values(raw: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(value) for value in raw.get("values") or ())
