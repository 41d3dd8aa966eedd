"""One node label key as a numpy column, so label selectors run over all nodes at once.

Each distinct value gets an integer code; a node slot holds its value's code, or -1 when
the node has no such label (or the slot is free). Matching ``key In (a, b)`` is then one
``np.isin`` over the codes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from itertools import repeat

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots

MISSING = -1
_UNKNOWN = -2
"""The code given to values no node has, in lookups (never a slot's code)."""
_INTEGER = re.compile(r"^[+-]?\d+$")


def parse_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64), which Gt/Lt apply to label values; None if it fails."""
    if not _INTEGER.match(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


class LabelColumn:
    def __init__(self, key: str, capacity: int) -> None:
        self.key = key
        self.codes: IntArray = np.full(capacity, MISSING, dtype=np.int64)
        self.values: list[str] = []
        self._index: dict[str, int] = {}
        self._numbers: tuple[IntArray, BoolArray] | None = None

    @classmethod
    def build(cls, key: str, labels: Sequence[Mapping[str, str]], active: BoolArray) -> LabelColumn:
        column = cls(key, len(active))
        for slot in np.flatnonzero(active).tolist():
            column.assign(slot, labels[slot].get(key))
        return column

    def is_bloated(self, live_nodes: int) -> bool:
        """Codes of values no node has any more pile up with node churn; past this, rebuild."""
        return len(self.values) > 2 * live_nodes + 64

    def grow(self, capacity: int) -> None:
        extra = np.full(capacity - len(self.codes), MISSING, dtype=np.int64)
        self.codes = np.concatenate([self.codes, extra])

    def assign(self, slot: int, value: str | None) -> None:
        self.codes[slot] = MISSING if value is None else self._code(value)

    def _code(self, value: str) -> int:
        code = self._index.get(value)
        if code is None:
            code = len(self.values)
            self.values.append(value)
            self._index[value] = code
            self._numbers = None
        return code

    def code_of(self, value: str) -> int | None:
        return self._index.get(value)

    def isin(self, slots: Slots, values: Collection[str]) -> BoolArray:
        """Whether each slot's node has this label with one of ``values``."""
        if not values:
            return np.zeros(len(slots), dtype=np.bool_)
        # Unknown values map to a code no slot has; map() over dict.get keeps this loop in C.
        known = np.fromiter(map(self._index.get, values, repeat(_UNKNOWN)), dtype=np.int64, count=len(values))
        if len(known) > 32:  # a lookup table beats np.isin's sorting for many values
            table = np.zeros(len(self.values) + 2, dtype=np.bool_)  # [-2]: unknown, [-1]: no label
            table[known] = True
            table[_UNKNOWN] = False
            return table[self.codes[slots]]
        return np.isin(self.codes[slots], known)

    def numbers(self) -> tuple[IntArray, BoolArray]:
        """Each code's value as an integer, and whether it parses as one (for Gt/Lt)."""
        if self._numbers is None:
            parsed = [parse_int(value) for value in self.values]
            self._numbers = (
                np.array([number or 0 for number in parsed], dtype=np.int64),
                np.array([number is not None for number in parsed], dtype=np.bool_),
            )
        return self._numbers
