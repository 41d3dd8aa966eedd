"""Device selectors in Kubernetes' DRA CEL environment (k8s.io/dynamic-resource-allocation/cel)."""

from __future__ import annotations

import pytest

from secondary_scheduler.plugins.dynamicresources.cel_env import (
    Selector,
    SelectorError,
    UnsupportedSelector,
    device_variable,
)

DEVICE = device_variable(
    "gpu.example.com",
    {
        "attributes": {
            "model": {"string": "A100"},
            "index": {"int": 3},
            "driverVersion": {"version": "1.2.3-rc.1"},
            "other.io/healthy": {"bool": True},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    },
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "A100"', True),
        ('device.attributes["gpu.example.com"].index > 2', True),
        ('device.attributes["other.io"].healthy', True),
        ('"missing.io" in device.attributes', False),
        ('device.attributes["missing.io"].size() == 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0', True),
        ('device.capacity["gpu.example.com"].memory == quantity("81920Mi")', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("81Gi"))', False),
        ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
        ('semver("v1.2", true) == semver("1.2.0")', True),
        ('isQuantity("1Gi") && !isQuantity("1x")', True),
        ('false && device.attributes["missing.io"].model == "a"', False),
    ],
)
def test_selector_verdicts(expression: str, expected: bool) -> None:
    assert Selector(expression).matches(DEVICE) is expected


def test_missing_attribute_is_a_runtime_error() -> None:
    with pytest.raises(SelectorError, match="CEL runtime error: no such key"):
        Selector('device.attributes["missing.io"].model == "a"').matches(DEVICE)


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ('ip("10.0.0.1").family() == 4', "'family' is not available"),
        ('isIP(device.attributes["gpu.example.com"].model)', "'isIP' is not available"),
        ('url("https://example.com").getHost() == "example.com"', "'getHost' is not available"),
        ('"%s".format(["a"]) == "a"', "'format' is not available"),
        ('strings.quote("a") == "a"', "'strings.quote' is not available"),
        ("lists.range(2) == [0, 1]", "'lists.range' is not available"),
        ("[2, 1].sort() == [1, 2]", "'sort' is not available"),
        ('{"a": 1}.all(k, v, v > 0)', "two-variable comprehension all"),
    ],
)
def test_functions_this_evaluator_lacks_are_named(expression: str, named: str) -> None:
    with pytest.raises(UnsupportedSelector, match=named):
        Selector(expression).matches(DEVICE)


def test_syntax_errors_are_compile_errors() -> None:
    with pytest.raises(SelectorError, match="CEL compile error"):
        Selector("device.driver ==")
