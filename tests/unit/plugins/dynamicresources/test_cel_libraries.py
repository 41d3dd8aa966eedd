"""Kubernetes' CEL extension libraries in device selectors, against their Go semantics.

Expected values follow cel-go's ext/strings.go and ext/sets.go and apiserver's
pkg/cel/library/lists.go, regex.go and cost.go (1.34).
"""

from __future__ import annotations

import pytest

from secondary_scheduler.plugins.dynamicresources import cel_env
from secondary_scheduler.plugins.dynamicresources.cel_env import Selector, SelectorError, device_variable
from secondary_scheduler.plugins.dynamicresources.cel_libraries import library_cost
from secondary_scheduler.plugins.dynamicresources.limitation import ENABLED_WARNING

DEVICE = device_variable(
    "gpu.example.com",
    {"attributes": {"model": {"string": "NVIDIA A100-SXM4"}, "index": {"int": 3}}},
)


def _true(expression: str) -> None:
    assert Selector(expression).matches(DEVICE) is True, expression


@pytest.mark.parametrize(
    "expression",
    [
        # ext.Strings: code-point indices, Go's edge cases.
        '"héllo".charAt(1) == "é"',
        '"abc".charAt(3) == ""',
        '"hello".indexOf("l") == 2',
        '"hello".indexOf("") == 0',
        '"hello".indexOf("l", 3) == 3',
        '"hello".indexOf("", 4) == 4',
        '"hello".indexOf("l", 5) == -1',
        '"héllo".indexOf("llo") == 2',
        '"hello".lastIndexOf("l") == 3',
        '"hello".lastIndexOf("") == 5',
        '"hello".lastIndexOf("l", 2) == 2',
        '"hello".lastIndexOf("hello!") == -1',
        '"hello".lastIndexOf("lo", 4) == 3',
        '"ÀbC-1".lowerAscii() == "Àbc-1"',
        '"àbc".upperAscii() == "àBC"',
        '"aaa".replace("a", "b") == "bbb"',
        '"aaa".replace("a", "b", 2) == "bba"',
        '"aaa".replace("a", "b", 0) == "aaa"',
        '"aaa".replace("a", "b", -1) == "bbb"',
        '"ab".replace("", "-") == "-a-b-"',
        '"a,b,c".split(",") == ["a", "b", "c"]',
        '"a,b,c".split(",", 2) == ["a", "b,c"]',
        '"a,b,c".split(",", 0) == []',
        '"a,b,c".split(",", -1) == ["a", "b", "c"]',
        '"abc".split("") == ["a", "b", "c"]',
        '"abc".split("", 2) == ["a", "bc"]',
        '"".split(",") == [""]',
        '"héllo".substring(1) == "éllo"',
        '"hello".substring(1, 3) == "el"',
        '"hello".substring(5) == ""',
        '"\\t hi \\n".trim() == "hi"',
        '["a", "b"].join() == "ab"',
        '["a", "b"].join(", ") == "a, b"',
        '[].join("-") == ""',
        'device.attributes["gpu.example.com"].model.lowerAscii().startsWith("nvidia")',
        'device.attributes["gpu.example.com"].model.split(" ")[1].substring(0, 4) == "A100"',
        # Kubernetes' lists library.
        "[1, 2, 2, 3].isSorted()",
        "![3, 1].isSorted()",
        '["a", "b"].isSorted()',
        "[].isSorted()",
        "[1, 2, 3].sum() == 6",
        "[1.5, 2.5].sum() == 4.0",
        "[].sum() == 0",
        "[3, 1, 2].min() == 1",
        "[3, 1, 2].max() == 3",
        '["b", "a"].min() == "a"',
        "[1, 2, 1].indexOf(1) == 0",
        "[1, 2, 1].lastIndexOf(1) == 2",
        "[1, 2].indexOf(5) == -1",
        '[quantity("1Gi"), quantity("2Gi")].max() == quantity("2Gi")',
        # ext.Sets: list elements compared by equality, duplicates irrelevant.
        "sets.contains([1, 2, 3], [3, 1])",
        "sets.contains([1], [])",
        "!sets.contains([1, 2], [4])",
        "sets.equivalent([1, 2, 2], [2, 1])",
        "!sets.equivalent([1, 2], [1])",
        "sets.intersects([1, 2], [2, 5])",
        "!sets.intersects([1, 2], [])",
        "sets.contains([1.0], [1])",
        # Kubernetes' regex library (RE2).
        '"abc 123".find("[0-9]+") == "123"',
        '"abc".find("[0-9]+") == ""',
        '"1 22 333".findAll("[0-9]+") == ["1", "22", "333"]',
        '"1 22 333".findAll("[0-9]+", 2) == ["1", "22"]',
        '"1 22 333".findAll("[0-9]+", 0) == []',
        '"abc".findAll("b*") == ["", "b", ""]',
    ],
)
def test_library_functions_as_upstream_evaluates_them(expression: str) -> None:
    _true(expression)


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ('"abc".charAt(4) == ""', "CEL runtime error: index out of range: 4"),
        ('"abc".charAt(-1) == ""', "CEL runtime error: index out of range: -1"),
        ('"abc".indexOf("a", -1) == 0', "CEL runtime error: index out of range: -1"),
        ('"abc".lastIndexOf("a", -1) == 0', "CEL runtime error: index out of range: -1"),
        ('"abc".substring(4) == ""', "CEL runtime error: index out of range: 4"),
        ('"abc".substring(0, 4) == ""', "CEL runtime error: index out of range: 4"),
        ('"abc".substring(2, 1) == ""', "CEL runtime error: invalid substring range. start: 2, end: 1"),
        ("[].min() == 0", "CEL runtime error: min called on empty list"),
        ("[].max() == 0", "CEL runtime error: max called on empty list"),
        ('"abc".find("(") == ""', "CEL runtime error: Illegal regex: "),
        ('"abc".findAll("[") == []', "CEL runtime error: Illegal regex: "),
        ("[[1], [2]].isSorted()", "CEL runtime error: no such overload"),
        ('["a"].sum() == "a"', "CEL runtime error: no such overload"),
        ('(1).charAt(0) == "1"', "CEL runtime error: no such overload"),
        ("sets.contains(1, [1])", "CEL runtime error: no such overload"),
    ],
)
def test_library_errors_fail_the_selector(expression: str, error: str) -> None:
    with pytest.raises(SelectorError) as raised:
        Selector(expression).matches(DEVICE)
    assert str(raised.value).startswith(error), str(raised.value)


def test_an_unknown_function_in_a_library_namespace_is_named() -> None:
    with pytest.raises(SelectorError, match=r"'sets\.union' is not available"):
        Selector("sets.union([1], [2]) == [1, 2]").matches(DEVICE)


@pytest.mark.parametrize(
    ("name", "args", "result", "cost"),
    [
        # lists: traversalCost of the target (a string's bytes x 0.1, truncated; a scalar costs 1).
        ("sum", ([1] * 7,), 7, 7),
        ("isSorted", (["a" * 25, "b" * 25],), True, 4),
        ("indexOf", ("x" * 39, "x"), 0, 3),
        # ceil(size x 0.1); replace and split twice that; join by its result.
        ("lowerAscii", ("a" * 11,), "a" * 11, 2),
        ("substring", ("a" * 30, 1), "a" * 29, 3),
        ("replace", ("a" * 11, "a", "b"), "b" * 11, 3),
        ("split", ("a" * 10, ","), ["a" * 10], 2),
        ("join", (["a"] * 3, "-"), "a-a-a", 1),
        # find/findAll: ceil((1 + len) x 0.1) x ceil(len(regex) x 0.25).
        ("find", ("a" * 19, "a+b+c"), "a", 2 * 2),
        # sets: 1 + |a| x |b| x factor (equivalent twice).
        ("sets.contains", ([1, 2, 3], [1, 2]), True, 7),
        ("sets.equivalent", ([1, 2, 3], [1, 2]), False, 13),
        # functions upstream's cost table does not name: cel-go's default.
        ("charAt", ("abc", 1), "b", 1),
    ],
)
def test_library_costs_are_upstreams(name: str, args: tuple[object, ...], result: object, cost: int) -> None:
    assert library_cost(name, args, result) == cost


def test_library_calls_count_against_the_cost_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # The list literal costs 10, its 1,000 elements nothing more; sum's traversal 1,000.
    expression = f"[{', '.join(['1'] * 1000)}].sum() == 1000"
    monkeypatch.setattr(cel_env, "COST_LIMIT", 10 + 1000 + 1)
    assert Selector(expression).matches(DEVICE) is True
    monkeypatch.setattr(cel_env, "COST_LIMIT", 10 + 1000 - 1)
    with pytest.raises(SelectorError, match="actual cost limit exceeded"):
        Selector(expression).matches(DEVICE)


def test_config_validate_warns_with_exactly_what_is_refused() -> None:
    assert cel_env.REFUSED_LIBRARIES in ENABLED_WARNING
