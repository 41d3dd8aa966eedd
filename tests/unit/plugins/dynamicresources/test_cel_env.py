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


def test_functions_this_evaluator_lacks_are_named() -> None:
    with pytest.raises(UnsupportedSelector, match="'lowerAscii' is not available"):
        Selector('device.attributes["gpu.example.com"].model.lowerAscii() == "a100"').matches(DEVICE)


def test_syntax_errors_are_compile_errors() -> None:
    with pytest.raises(SelectorError, match="CEL compile error"):
        Selector("device.driver ==")
