"""Label selectors (``metav1.LabelSelector``) over pod or namespace labels.

A missing (null) selector selects nothing, an empty one (``{}``) everything, as
``LabelSelectorAsSelector`` has it. A selector with an invalid requirement (unknown operator,
In without values) selects nothing instead of failing the whole pod.

Selectors are matched against every pod of a namespace in some plugins, so the common
``key = value`` requirements are checked as one dict-view comparison, in C.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    """In, NotIn, Exists or DoesNotExist."""
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        return value is None  # DoesNotExist


_OPERATORS = {"In": True, "NotIn": True, "Exists": False, "DoesNotExist": False}
"""Operator -> whether it takes values."""


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    selects_nothing: bool = False
    _equal: Mapping[str, str] = field(init=False, repr=False, compare=False, hash=False)
    """The requirements of the form ``key In (one value)``, as a dict."""
    _others: tuple[Requirement, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        single = [item for item in self.requirements if item.operator == "In" and len(item.values) == 1]
        equal: dict[str, str] = {}
        others = [item for item in self.requirements if item not in single]
        for item in single:
            (value,) = item.values
            if equal.setdefault(item.key, value) != value:  # key = a and key = b: nothing matches
                others.append(item)
        object.__setattr__(self, "_equal", equal)
        object.__setattr__(self, "_others", tuple(others))

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector:
        if raw is None:
            return NOTHING
        requirements = [
            Requirement(key, "In", frozenset([str(value)]))
            for key, value in sorted((raw.get("matchLabels") or {}).items())
        ]
        for expression in raw.get("matchExpressions") or ():
            operator = expression.get("operator", "")
            values = frozenset(str(value) for value in expression.get("values") or ())
            takes_values = _OPERATORS.get(operator)
            if takes_values is None or takes_values != bool(values):
                return NOTHING
            requirements.append(Requirement(str(expression.get("key", "")), operator, values))
        return cls(tuple(requirements))

    @property
    def is_empty(self) -> bool:
        """Selects everything (``{}``): some callers treat it specially (spreading counts no pods)."""
        return not self.requirements and not self.selects_nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.selects_nothing or not self._equal.items() <= labels.items():
            return False
        return all(requirement.matches(labels) for requirement in self._others)

    def and_labels(self, labels: Mapping[str, str]) -> LabelSelector:
        """This selector plus key=value requirements (matchLabelKeys); nothing stays nothing."""
        if self.selects_nothing or not labels:
            return self
        equal = tuple(Requirement(key, "In", frozenset([value])) for key, value in sorted(labels.items()))
        return LabelSelector(equal + self.requirements)


NOTHING = LabelSelector(selects_nothing=True)
