"""The DRA CEL runtime cost limit: cel-go's CostTracker rules, upstream's limit and error."""

from __future__ import annotations

import pytest

from secondary_scheduler.plugins.dynamicresources import cel_env
from secondary_scheduler.plugins.dynamicresources.cel_env import (
    COST_LIMIT,
    Selector,
    SelectorError,
    call_cost,
    device_variable,
)

DEVICE = device_variable("gpu.example.com", {"attributes": {"model": {"string": "A100"}}})
EXCEEDED = "CEL runtime error: operation cancelled: actual cost limit exceeded"


def test_upstreams_limit() -> None:
    assert COST_LIMIT == 1_000_000  # resourceapi.CELSelectorExpressionMaxCost


def test_a_call_over_the_limit_fails_with_upstreams_error() -> None:
    # contains: ceil(len/10) * ceil(len/10) = 1001 * 1001 > 1,000,000, charged before it runs.
    text = "a" * 10_010
    with pytest.raises(SelectorError) as raised:
        Selector(f'"{text}".contains("{text}")').matches(DEVICE)
    assert str(raised.value) == EXCEEDED


def test_at_the_limit_it_still_evaluates() -> None:
    # 1000 * 1000 plus the two literals' zero cost: exactly the limit, not over it.
    text = "a" * 10_000
    assert Selector(f'"{text}".contains("{text}")').matches(DEVICE) is True


def test_short_circuit_does_not_hide_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """cel-go panics out of the evaluation: `true || x` would not swallow it as it swallows errors."""
    monkeypatch.setattr(cel_env, "COST_LIMIT", 100)
    elements = ", ".join(str(i) for i in range(60))
    with pytest.raises(SelectorError, match="actual cost limit exceeded"):
        Selector(f"false || [{elements}].exists(i, i < 0)").matches(DEVICE)


def test_macros_are_charged_per_element(monkeypatch: pytest.MonkeyPatch) -> None:
    # A list literal (10), then per element: the step (1), reading i (1), the comparison (1).
    elements = ", ".join(str(i) for i in range(30))
    expression = f"[{elements}].all(i, i >= 0)"
    monkeypatch.setattr(cel_env, "COST_LIMIT", 10 + 3 * 30)
    assert Selector(expression).matches(DEVICE) is True
    monkeypatch.setattr(cel_env, "COST_LIMIT", 10 + 3 * 30 - 1)
    with pytest.raises(SelectorError, match="actual cost limit exceeded"):
        Selector(expression).matches(DEVICE)


def test_every_evaluation_starts_from_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel_env, "COST_LIMIT", 10)
    selector = Selector('device.driver == "gpu.example.com"')
    assert all(selector.matches(DEVICE) for _ in range(20))


@pytest.mark.parametrize(
    ("name", "args", "cost"),
    [
        ("_==_", (1, 2), 1),
        ("_==_", ("a" * 25, "b" * 64), 3),  # ceil(min(25, 64) * 0.1)
        ("_<_", ("", "abc"), 0),
        ("_+_", ("a" * 11, "b" * 9), 2),
        ("startsWith", ("a" * 31, "a"), 4),
        ("matches", ("a" * 19, "a+b*c?d"), 2 * 2),  # ceil(20 * 0.1) * ceil(7 * 0.25)
        ("_in_", (3, [1, 2, 3, 4, 5]), 5),
        ("_in_", ("k", {"k": 1}), 1),
        ("_&&_", (True, False), 0),
        ("_||_", (True, False), 0),
        ("size", ("abc",), 1),
    ],
)
def test_call_costs_follow_cel_go(name: str, args: tuple[object, ...], cost: int) -> None:
    assert call_cost(name, args) == cost
