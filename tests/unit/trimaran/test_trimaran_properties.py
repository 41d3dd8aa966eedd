"""Properties every input must keep: score range, LVRB monotone in load, TLP peaking at the target."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing import scoring as lvrb
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.lowriskovercommitment import scoring as lroc
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.resourcestats import Resources
from secondary_scheduler.plugins.trimaran.targetloadpacking import scoring as tlp
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.trimaran.watchermetrics import ResourceDataArrays

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None)

millis = st.integers(min_value=0, max_value=64_000)
memory_bytes = st.integers(min_value=0, max_value=2**38)
percent = st.floats(min_value=-10, max_value=150, allow_nan=False)
usage_row = st.tuples(percent, percent, st.booleans())

UsageRow = tuple[float, float, bool]
ResourceRow = tuple[int, int, int, UsageRow]


def _usage(rows: list[UsageRow]) -> ResourceDataArrays:
    return ResourceDataArrays(
        avg=np.array([r[0] for r in rows], dtype=np.float64),
        stdev=np.array([r[1] for r in rows], dtype=np.float64),
        valid=np.array([r[2] for r in rows], dtype=np.bool_),
    )


def _in_range(scores: np.ndarray) -> bool:
    return scores.dtype == np.int64 and bool(np.all((scores >= 0) & (scores <= 100)))


@PROPERTY_SETTINGS
@given(
    nodes=st.lists(st.tuples(millis, st.one_of(st.just(np.nan), percent), millis), min_size=1, max_size=16),
    pod_millis=millis,
    target=st.integers(min_value=1, max_value=100),
)
def test_tlp_scores_stay_in_range(nodes: list[tuple[int, float, int]], pod_millis: int, target: int) -> None:
    arrays = tlp.NodeArrays(
        capacity_millis=np.array([n[0] for n in nodes], dtype=np.int64),
        cpu_percent=np.array([n[1] for n in nodes], dtype=np.float64),
        missing_millis=np.array([n[2] for n in nodes], dtype=np.int64),
    )
    args = TargetLoadPackingArgs.model_validate({"targetUtilization": target})
    assert _in_range(tlp.score_nodes(arrays, pod_millis, args))


@PROPERTY_SETTINGS
@given(
    nodes=st.lists(st.tuples(millis, memory_bytes, usage_row, usage_row), min_size=1, max_size=16),
    pod=st.tuples(millis, memory_bytes),
    margin=st.floats(min_value=0, max_value=5),
    sensitivity=st.floats(min_value=0, max_value=5),
)
def test_lvrb_scores_stay_in_range(
    nodes: list[tuple[int, int, UsageRow, UsageRow]],
    pod: tuple[int, int],
    margin: float,
    sensitivity: float,
) -> None:
    arrays = lvrb.NodeArrays(
        cpu_capacity=np.array([n[0] for n in nodes], dtype=np.int64),
        memory_capacity=np.array([n[1] for n in nodes], dtype=np.int64),
        cpu=_usage([n[2] for n in nodes]),
        memory=_usage([n[3] for n in nodes]),
    )
    args = LoadVariationRiskBalancingArgs.model_validate(
        {"safeVarianceMargin": margin, "safeVarianceSensitivity": sensitivity}
    )
    assert _in_range(lvrb.score_nodes(arrays, Resources(*pod), args))


@PROPERTY_SETTINGS
@given(
    capacity=millis,
    request=millis,
    sigma=percent,
    loads=st.lists(percent, min_size=2, max_size=16),
    memory=usage_row,
    sensitivity=st.floats(min_value=0, max_value=5),
)
def test_lvrb_score_does_not_rise_with_load(
    capacity: int,
    request: int,
    sigma: float,
    loads: list[float],
    memory: UsageRow,
    sensitivity: float,
) -> None:
    count = len(loads)
    arrays = lvrb.NodeArrays(
        cpu_capacity=np.full(count, capacity, dtype=np.int64),
        memory_capacity=np.full(count, 2**30, dtype=np.int64),
        cpu=_usage([(load, sigma, True) for load in sorted(loads)]),
        memory=_usage([memory] * count),
    )
    args = LoadVariationRiskBalancingArgs.model_validate({"safeVarianceSensitivity": sensitivity})
    scores = lvrb.score_nodes(arrays, Resources(request, 2**20), args)
    assert np.all(np.diff(scores) <= 0)


def _resource(rows: list[ResourceRow]) -> lroc.ResourceArrays:
    return lroc.ResourceArrays(
        capacity=np.array([r[0] for r in rows], dtype=np.int64),
        requests=np.array([r[1] for r in rows], dtype=np.int64),
        limits=np.array([r[1] + r[2] for r in rows], dtype=np.int64),
        usage=_usage([r[3] for r in rows]),
    )


@PROPERTY_SETTINGS
@given(
    nodes=st.lists(
        st.tuples(
            st.booleans(),
            st.tuples(millis, millis, millis, usage_row),
            st.tuples(millis, millis, millis, usage_row),
        ),
        min_size=1,
        max_size=16,
    ),
    pod=st.tuples(millis, millis, millis, millis),
    window=st.integers(min_value=1, max_value=20),
    weights=st.tuples(st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1)),
)
def test_lroc_scores_stay_in_range(
    nodes: list[tuple[bool, ResourceRow, ResourceRow]],
    pod: tuple[int, int, int, int],
    window: int,
    weights: tuple[float, float],
) -> None:
    arrays = lroc.NodeArrays(
        has_metrics=np.array([n[0] for n in nodes], dtype=np.bool_),
        cpu=_resource([n[1] for n in nodes]),
        memory=_resource([n[2] for n in nodes]),
    )
    cpu_request, cpu_extra, memory_request, memory_extra = pod
    resources = lroc.PodResources(
        requests=Resources(cpu_request, memory_request),
        limits=Resources(cpu_request + cpu_extra, memory_request + memory_extra),
    )
    args = LowRiskOverCommitmentArgs.model_validate(
        {"smoothingWindowSize": window, "riskLimitWeights": {"cpu": weights[0], "memory": weights[1]}}
    )
    assert _in_range(lroc.score_nodes(arrays, resources, args))


@PROPERTY_SETTINGS
@given(target=st.integers(min_value=1, max_value=99), scale=st.integers(min_value=1, max_value=1000))
def test_tlp_scores_100_at_the_target(target: int, scale: int) -> None:
    arrays = tlp.NodeArrays(
        capacity_millis=np.array([100 * scale], dtype=np.int64),
        cpu_percent=np.array([0.0]),
        missing_millis=np.array([0], dtype=np.int64),
    )
    args = TargetLoadPackingArgs.model_validate({"targetUtilization": target})
    assert tlp.predicted_percent(arrays, target * scale).tolist() == [float(target)]
    assert tlp.score_nodes(arrays, target * scale, args).tolist() == [100]


@PROPERTY_SETTINGS
@given(
    target=st.integers(min_value=1, max_value=99),
    predicted=st.lists(st.floats(min_value=0, max_value=120, allow_nan=False), min_size=2, max_size=32),
)
def test_tlp_score_rises_to_the_target_and_falls_after(target: int, predicted: list[float]) -> None:
    values = np.array(sorted(predicted), dtype=np.float64)
    scores = tlp.score_predicted(values, target)
    assert np.all(np.diff(scores[values <= target]) >= 0)
    assert np.all(np.diff(scores[values >= target]) <= 0)
    assert np.all(scores <= 100)
