"""Kubernetes' CEL extension libraries for device selectors, as 1.34's base environment has them.

Implemented from their Go sources: cel-go's ``ext.Strings`` (version 2, less ``format`` and
``strings.quote``), Kubernetes' lists library (``isSorted``, ``sum``, ``min``, ``max``,
``indexOf``, ``lastIndexOf``), cel-go's ``ext.Sets`` and Kubernetes' regex library (``find``,
``findAll``, evaluated with RE2 as upstream does). ``indexOf``/``lastIndexOf`` serve both
libraries: a string target is ext.Strings', a list target the lists library's.

``library_cost`` says what upstream's runtime cost tracker charges each call
(``k8s.io/apiserver/pkg/cel/library/cost.go``'s ``CallCost``; ``ext/sets.go``'s trackers);
functions neither names (``charAt``) cost cel-go's default of 1.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from functools import reduce
from typing import Any

import celpy.celtypes as ct
import re2

TRAVERSAL_FACTOR = 0.1
"""cel-go's and apiserver's string traversal cost factor (a tenth per character)."""
REGEX_LENGTH_FACTOR = 0.25
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    map(chr, range(0x2000, 0x200B))
)
"""Go's unicode.IsSpace, which strings.TrimSpace trims (Python's strip() trims more)."""


class LibraryError(ValueError):
    """An error a library function returns in upstream's words (reported without celpy's prefix)."""


def _no_overload() -> TypeError:
    return TypeError("no such overload")


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _no_overload()
    return str(value)


def _integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _no_overload()
    return int(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _no_overload()
    return list(value)


def _out_of_range(index: int) -> LibraryError:
    return LibraryError(f"index out of range: {index}")


# -- ext.Strings ------------------------------------------------------------------------------


def _char_at(text: Any, index: Any) -> ct.StringType:
    text, index = _string(text), _integer(index)
    if not 0 <= index <= len(text):
        raise _out_of_range(index)
    return ct.StringType(text[index] if index < len(text) else "")


def _string_index_of(text: str, sub: str, offset: int) -> int:
    if sub == "":
        return offset
    if offset < 0:
        raise _out_of_range(offset)
    if offset >= len(text):
        return -1
    return text.find(sub, offset)


def _string_last_index_of(text: str, sub: str, offset: int | None) -> int:
    if offset is None:
        if sub == "":
            return len(text)
        if len(text.encode()) < len(sub.encode()):  # upstream compares byte lengths here
            return -1
        offset = len(text) - 1
    if sub == "":
        return offset
    if offset < 0:
        raise _out_of_range(offset)
    if offset >= len(text):
        return -1
    return text.rfind(sub, 0, offset + len(sub))


def _index_of(target: Any, item: Any, *offset: Any) -> ct.IntType:
    if isinstance(target, list) and not offset:
        return ct.IntType(next((i for i, element in enumerate(target) if _equal(element, item)), -1))
    start = _integer(offset[0]) if len(offset) == 1 else 0
    if len(offset) > 1:
        raise _no_overload()
    return ct.IntType(_string_index_of(_string(target), _string(item), start))


def _last_index_of(target: Any, item: Any, *offset: Any) -> ct.IntType:
    if isinstance(target, list) and not offset:
        found = (i for i in range(len(target) - 1, -1, -1) if _equal(target[i], item))
        return ct.IntType(next(found, -1))
    if len(offset) > 1:
        raise _no_overload()
    start = _integer(offset[0]) if offset else None
    return ct.IntType(_string_last_index_of(_string(target), _string(item), start))


def _ascii_case(convert: Callable[[str], str]) -> Callable[[Any], ct.StringType]:
    def change(text: Any) -> ct.StringType:
        return ct.StringType("".join(convert(c) if c < "\x80" else c for c in _string(text)))

    return change


def _replace(text: Any, old: Any, new: Any, *limit: Any) -> ct.StringType:
    if len(limit) > 1:
        raise _no_overload()
    count = _integer(limit[0]) if limit else -1
    return ct.StringType(_string(text).replace(_string(old), _string(new), count if count >= 0 else -1))


def _split(text: Any, separator: Any, *limit: Any) -> ct.ListType:
    text, separator = _string(text), _string(separator)
    if len(limit) > 1:
        raise _no_overload()
    count = _integer(limit[0]) if limit else -1
    if count == 0:
        return ct.ListType()
    if separator == "":  # Go explodes the string into its characters, the last holding the rest
        parts = list(text) if count < 0 or count >= len(text) else [*text[: count - 1], text[count - 1 :]]
    else:
        parts = text.split(separator, count - 1 if count > 0 else -1)
    return ct.ListType([ct.StringType(part) for part in parts])


def _substring(text: Any, start: Any, *end: Any) -> ct.StringType:
    text, begin = _string(text), _integer(start)
    if len(end) > 1:
        raise _no_overload()
    if not end:
        if not 0 <= begin <= len(text):
            raise _out_of_range(begin)
        return ct.StringType(text[begin:])
    stop = _integer(end[0])
    if begin > stop:
        raise LibraryError(f"invalid substring range. start: {begin}, end: {stop}")
    for index in (begin, stop):
        if not 0 <= index <= len(text):
            raise _out_of_range(index)
    return ct.StringType(text[begin:stop])


def _trim(text: Any) -> ct.StringType:
    return ct.StringType(_string(text).strip(_GO_SPACE))


def _join(items: Any, *separator: Any) -> ct.StringType:
    if len(separator) > 1:
        raise _no_overload()
    joiner = _string(separator[0]) if separator else ""
    return ct.StringType(joiner.join(_string(item) for item in _list(items)))


# -- Kubernetes' lists library ----------------------------------------------------------------


_NUMBERS = (ct.IntType, ct.UintType, ct.DoubleType)


def _plain(number: Any) -> int | float:
    return float(number) if isinstance(number, ct.DoubleType) else int(number)


def _equal(a: Any, b: Any) -> bool:
    """CEL's runtime equality: numbers compare across types, other values of different types differ."""
    if isinstance(a, _NUMBERS) and isinstance(b, _NUMBERS):
        return _plain(a) == _plain(b)  # Python compares ints with floats exactly, as cel-go does
    try:
        return bool(a == b)
    except TypeError:
        return False


def _comparable(value: Any) -> Any:
    """CEL orders scalars (numbers, strings, bytes, bools, times, quantities, versions), not lists or maps."""
    if isinstance(value, list | dict) or value is None:
        raise _no_overload()
    return value


def _is_sorted(items: Any) -> ct.BoolType:
    values = [_comparable(item) for item in _list(items)]
    return ct.BoolType(all(not previous > current for previous, current in itertools.pairwise(values)))


_SUMMABLE = (ct.IntType, ct.UintType, ct.DoubleType, ct.DurationType)


def _sum(items: Any) -> Any:
    values = _list(items)
    if not values:
        return ct.IntType(0)
    if not all(isinstance(value, _SUMMABLE) for value in values):
        raise _no_overload()
    return reduce(lambda total, value: total + value, values)


def _extreme(name: str, prefer: Callable[[Any, Any], bool]) -> Callable[[Any], Any]:
    def pick(items: Any) -> Any:
        values = [_comparable(item) for item in _list(items)]
        if not values:
            raise LibraryError(f"{name} called on empty list")
        return reduce(lambda best, value: value if prefer(best, value) else best, values)

    return pick


# -- ext.Sets ---------------------------------------------------------------------------------


def _contains_all(haystack: list[Any], needles: list[Any]) -> bool:
    return all(any(_equal(have, need) for have in haystack) for need in needles)


def _sets_contains(a: Any, b: Any) -> ct.BoolType:
    return ct.BoolType(_contains_all(_list(a), _list(b)))


def _sets_equivalent(a: Any, b: Any) -> ct.BoolType:
    left, right = _list(a), _list(b)
    return ct.BoolType(_contains_all(left, right) and _contains_all(right, left))


def _sets_intersects(a: Any, b: Any) -> ct.BoolType:
    left, right = _list(a), _list(b)
    return ct.BoolType(any(_equal(x, y) for x in left for y in right))


# -- Kubernetes' regex library ----------------------------------------------------------------


def _compile(pattern: Any) -> Any:
    try:
        return re2.compile(_string(pattern))
    except re2.error as error:
        raise LibraryError(f"Illegal regex: {error}") from error


def _find(text: Any, pattern: Any) -> ct.StringType:
    match = _compile(pattern).search(_string(text))
    return ct.StringType(match.group(0) if match else "")


def _find_all(text: Any, pattern: Any, *limit: Any) -> ct.ListType:
    if len(limit) > 1:
        raise _no_overload()
    count = _integer(limit[0]) if limit else -1
    found: list[ct.StringType] = []
    previous_end = -1
    for match in _compile(pattern).finditer(_string(text)):
        if count >= 0 and len(found) >= count:
            break
        # Go's FindAll drops an empty match that abuts the previous match.
        if match.start() == match.end() == previous_end:
            continue
        found.append(ct.StringType(match.group(0)))
        previous_end = match.end()
    return ct.ListType(found)


LIBRARY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _ascii_case(str.lower),
    "upperAscii": _ascii_case(str.upper),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _extreme("min", lambda best, value: best > value),
    "max": _extreme("max", lambda best, value: best < value),
    "sets.contains": _sets_contains,
    "sets.equivalent": _sets_equivalent,
    "sets.intersects": _sets_intersects,
    "find": _find,
    "findAll": _find_all,
}

NAMESPACES = frozenset({"sets", "strings", "lists", "math", "base64", "optional", "cel"})
"""Names a selector calls functions under (``sets.contains``), never variables in this environment."""


# -- their runtime costs -------------------------------------------------------------------------


def actual_size(value: Any) -> int:
    """cel-go's actualSize: a string's characters, a bytes' length, a list's or map's elements, else 1."""
    return len(value) if isinstance(value, str | bytes | list | dict) else 1


def regex_cost(text: Any, pattern: Any) -> int:
    """What matching ``pattern`` against ``text`` costs (``matches``, ``find``, ``findAll``)."""
    return math.ceil((1 + actual_size(text)) * TRAVERSAL_FACTOR) * math.ceil(
        actual_size(pattern) * REGEX_LENGTH_FACTOR
    )


def _traversal_cost(value: Any) -> int:
    """apiserver's traversalCost: a string's bytes (truncated), a list's elements' traversals, else 1."""
    if isinstance(value, str):
        return int(len(value.encode()) * TRAVERSAL_FACTOR)
    if isinstance(value, bytes):
        return int(len(value) * TRAVERSAL_FACTOR)
    if isinstance(value, list):
        return sum(_traversal_cost(item) for item in value)
    if isinstance(value, dict):
        return sum(_traversal_cost(k) + _traversal_cost(v) for k, v in value.items())
    return 1


_SETS_COST_FACTOR = {"sets.contains": 1, "sets.intersects": 1, "sets.equivalent": 2}


def library_cost(name: str, args: tuple[Any, ...], result: Any) -> int:
    """Upstream's runtime cost of one call of library function ``name`` (its target first)."""
    if name in ("isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"):
        return _traversal_cost(args[0])
    if name in ("lowerAscii", "upperAscii", "substring", "trim"):
        return math.ceil(actual_size(args[0]) * TRAVERSAL_FACTOR)
    if name in ("replace", "split"):
        return math.ceil(actual_size(args[0]) * 2 * TRAVERSAL_FACTOR)
    if name == "join":
        return math.ceil(actual_size(result) * 2 * TRAVERSAL_FACTOR)
    if name in ("find", "findAll") and len(args) >= 2:
        return regex_cost(args[0], args[1])
    if name in _SETS_COST_FACTOR and len(args) == 2:
        return 1 + int(actual_size(args[0]) * actual_size(args[1]) * _SETS_COST_FACTOR[name])
    return 1
