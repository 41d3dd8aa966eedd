"""Kubernetes resource quantities ("500m", "1Gi", "2e3") as exact numbers.

Scheduling compares quantities in integer units (millicores, bytes), rounding up as
Kubernetes does, so parsing goes through Decimal and never through binary floats.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, InvalidOperation

QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))((?:[eE][+-]?\d+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")
"""resource.Quantity's grammar: a number and a binary (Ki..Ei) or decimal (n..E, eN) suffix."""
BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
"""A binary suffix's power of 2."""
DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
"""A decimal suffix's power of 10 (an ``eN`` suffix is 10**N)."""


def quantity_parts(text: str) -> tuple[str, int, int] | None:
    """(number, radix, exponent) of a quantity as written (the value is number x radix**exponent),
    or None if ``text`` is not one. The caller decides how far an exponent may go."""
    match = QUANTITY.match(text)
    if match is None:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    if suffix in BINARY_EXPONENTS:
        return number, 2, BINARY_EXPONENTS[suffix]
    if suffix in DECIMAL_EXPONENTS:
        return number, 10, DECIMAL_EXPONENTS[suffix]
    return number, 10, int(suffix[1:])


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
    parts = quantity_parts(value.strip())
    if parts is None:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity (examples: '500m', '2', '1Gi', '512Mi', '1e3')"
        )
    number, radix, exponent = parts
    try:
        base = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex already rules this out
        raise QuantityError(f"{value!r} is not a number") from error
    return base * (Decimal(radix) ** exponent)


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
