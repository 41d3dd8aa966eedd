"""Kubernetes resource quantities ("500m", "1Gi", "2e3") as exact numbers.

Scheduling compares quantities in integer units (millicores, bytes), rounding up as
Kubernetes does, so parsing goes through Decimal and never through binary floats.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))((?:[eE][+-]?\d+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Decimal:
    """The exact value of a quantity, in base units (cores, bytes, counts)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Decimal(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Decimal:
    """Cached: every event about a pod parses its requests again, and clusters use few quantities."""
    text = value.strip()
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity (examples: '500m', '2', '1Gi', '512Mi', '1e3')"
        )
    number, suffix = match.group(1), match.group(2) or ""
    try:
        base = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex already rules this out
        raise QuantityError(f"{value!r} is not a number") from error
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    return base * (Decimal(10) ** int(suffix[1:]))


def milli_value(value: str | int | float) -> int:
    """Millis, rounded up (Kubernetes' MilliValue): '100m' -> 100, '0.5' -> 500."""
    return math.ceil(parse_quantity(value) * 1000)


def int_value(value: str | int | float) -> int:
    """Whole units, rounded up (Kubernetes' Value): '1Gi' -> 1073741824, '1500m' -> 2."""
    return math.ceil(parse_quantity(value))


def resource_value(name: str, value: str | int | float) -> int:
    """The unit the scheduler compares a resource in: millicores for cpu, whole units else."""
    return milli_value(value) if name == "cpu" else int_value(value)


def format_cpu(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def format_bytes(count: int) -> str:
    for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if count and count % size == 0:
            return f"{count // size}{suffix}"
    return str(count)
