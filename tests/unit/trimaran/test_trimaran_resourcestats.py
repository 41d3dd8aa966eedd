"""Shared Trimaran maths against upstream's resourcestats and beta tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from secondary_scheduler.plugins.trimaran.resourcestats import (
    Resources,
    ResourceStats,
    allocatable,
    beta_cdf,
    compute_probability,
    create_resource_stats,
    get_mu_sigma,
    go_round,
    go_round_array,
    pod_limits,
    pod_requests,
    set_max_limits,
    to_scores,
)
from secondary_scheduler.plugins.trimaran.watchermetrics import CPU, MEMORY, Metric, resource_data_arrays

MakePod = Callable[..., dict[str, Any]]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (74.5, 75.0),
        (0.5, 1.0),
        (2.5, 3.0),
        (-2.5, -3.0),
        (57.49999999999999, 57.0),
        (0.49999999999999994, 0.0),  # floor(x + 0.5) would give 1 here
        (4503599627370497.0, 4503599627370497.0),  # 2**52 + 1: x + 0.5 would round up
        (33.3, 33.0),
    ],
)
def test_go_round_matches_go_math_round(value: float, expected: float) -> None:
    assert go_round(value) == expected
    assert go_round_array(np.array([value]))[0] == expected


def test_to_scores_rounds_halves_up_and_clips() -> None:
    assert to_scores(np.array([74.5, 57.49999999999999, -3.0, 140.0])).tolist() == [75, 57, 0, 100]


def _pod_with(
    make_pod: MakePod,
    init: tuple[int, int],
    containers: list[tuple[int, int]],
    overhead_milli: int,
    *,
    init_limit: tuple[int, int] | None = None,
    container_limits: list[tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """Upstream's getPodWithContainersAndOverhead (+ getPodWithLimits): limits default to the requests."""

    def resources(cpu: int, memory: int) -> dict[str, str]:
        return {"cpu": f"{cpu}m", "memory": str(memory)}

    limits = container_limits or containers
    init_resources = {"requests": resources(*init)}
    if init_limit is not None:
        init_resources["limits"] = resources(*init_limit)
    return make_pod(
        containers=[
            {"requests": resources(*req), "limits": resources(*lim)}
            for req, lim in zip(containers, limits, strict=True)
        ],
        init_containers=[init_resources],
        overhead={"cpu": f"{overhead_milli}m"},
    )


@pytest.mark.parametrize(
    ("init", "containers", "overhead", "expected"),
    [
        ((100, 512), [(1000, 2048), (500, 1024)], 10, Resources(1510, 3072)),
        ((2000, 4096), [(1000, 2048), (500, 1024)], 10, Resources(2010, 4096)),
        ((0, 0), [(0, 0), (0, 200 * 2**20), (1000, 400 * 2**20)], 0, Resources(1000, 600 * 2**20)),
    ],
)
def test_pod_requests(
    make_pod: MakePod,
    init: tuple[int, int],
    containers: list[tuple[int, int]],
    overhead: int,
    expected: Resources,
) -> None:
    assert pod_requests(_pod_with(make_pod, init, containers, overhead)) == expected


@pytest.mark.parametrize(
    ("requests", "overhead", "limits", "expected"),
    [
        ([(1000, 2048), (500, 1024)], 10, [(1000, 2048), (500, 1024)], Resources(2010, 4096)),
        ([(1000, 2048), (500, 1024)], 10, [(1000, 4096), (2500, 2048)], Resources(3510, 6144)),
        ([(1000, 2048), (500, 1024), (0, 0)], 0, [(0, 0), (0, 2048), (1000, 0)], Resources(2000, 4096)),
    ],
)
def test_pod_limits_take_the_init_container_maximum(
    make_pod: MakePod,
    requests: list[tuple[int, int]],
    overhead: int,
    limits: list[tuple[int, int]],
    expected: Resources,
) -> None:
    pod = _pod_with(
        make_pod, (100, 512), requests, overhead, init_limit=(2000, 4096), container_limits=limits
    )
    assert pod_limits(pod) == expected


def test_missing_resources_count_as_zero(make_pod: MakePod) -> None:
    pod = make_pod(containers=[{}, {"requests": {"cpu": "250m"}}, {"limits": {"memory": "1Mi"}}])
    assert pod_requests(pod) == Resources(250, 0)
    assert pod_limits(pod) == Resources(0, 2**20)
    assert pod_requests({"spec": {}}) == Resources()


def test_set_max_limits_raises_each_resource_separately() -> None:
    assert set_max_limits(Resources(500, 100), Resources(300, 200)) == Resources(500, 200)
    assert set_max_limits(Resources(500, 100), Resources()) == Resources(500, 100)


def test_allocatable_reads_cpu_millis_and_memory_bytes() -> None:
    nodes: list[dict[str, Any]] = [
        {"status": {"allocatable": {"cpu": "3910m", "memory": "1Gi"}}},
        {"status": {}},
    ]
    cpu, memory = allocatable(nodes)
    assert cpu.tolist() == [3910, 0]
    assert memory.tolist() == [2**30, 0]


_UPSTREAM_METRICS = [
    Metric(name="no_name", type=CPU, operator="", value=40),
    Metric(name="cpu_running_avg", type=CPU, operator="AVG", value=40),
    Metric(name="cpu_running_std", type=CPU, operator="STD", value=36),
    Metric(name="mem_running_avg", type=MEMORY, operator="AVG", value=20),
    Metric(name="mem_running_std", type=MEMORY, operator="STD", value=10),
]


@pytest.mark.parametrize(
    ("resource", "metric_type", "pod_request", "expected"),
    [
        ("cpu", CPU, 100, (1000.0, 100.0, 400.0, 360.0)),
        ("memory", MEMORY, 2**20, (1024.0, 1.0, 204.8, 102.4)),
    ],
)
def test_create_resource_stats(
    make_snapshot: Callable[..., Any],
    resource: str,
    metric_type: str,
    pod_request: int,
    expected: tuple[float, float, float, float],
) -> None:
    snapshot = make_snapshot({"node0": [(m.type, m.operator, m.value) for m in _UPSTREAM_METRICS]})
    usage = resource_data_arrays(snapshot, ["node0"], metric_type)
    capacity = np.array([1000 if resource == "cpu" else 2**30], dtype=np.int64)
    stats = create_resource_stats(capacity, pod_request, usage, resource)
    assert usage.valid.tolist() == [True]
    assert (stats.capacity[0], stats.req[0], stats.used_avg[0], stats.used_stdev[0]) == expected


def test_create_resource_stats_without_metrics_of_the_type_is_not_valid(
    make_snapshot: Callable[..., Any],
) -> None:
    snapshot = make_snapshot({"node0": [(m.type, m.operator, m.value) for m in _UPSTREAM_METRICS[3:]]})
    assert resource_data_arrays(snapshot, ["node0"], CPU).valid.tolist() == [False]


@pytest.mark.parametrize(
    ("capacity", "req", "avg", "std", "expected"),
    [
        (1000, 100, 400, 360, (0.5, 0.36)),
        (0, 0, 0, 0, (0.0, 0.0)),
        (1000, 100, 1400, 300, (1.0, 0.3)),
        (1000, 100, 400, 1600, (0.5, 1.0)),
        (1000, 0, -100, 200, (0.0, 0.2)),
    ],
)
def test_get_mu_sigma(
    capacity: float, req: float, avg: float, std: float, expected: tuple[float, float]
) -> None:
    def array(value: float) -> np.ndarray:
        return np.array([value], dtype=np.float64)

    mu, sigma = get_mu_sigma(ResourceStats(array(avg), array(std), array(req), array(capacity)))
    assert (mu[0], sigma[0]) == expected


def test_compute_probability_degenerate_cases_skip_the_fit() -> None:
    mu = np.array([0.0, 0.3, 0.8, 1.0])
    sigma = np.array([0.2, 0.0, 0.0, 0.1])
    threshold = np.array([0.5, 0.5, 0.5, 0.5])
    result = compute_probability(mu, sigma, threshold)
    # no load: fits; constant load under / over the threshold; mean 1 leaves no room for variance
    assert result.probability.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert result.fitted.tolist() == [False, False, False, False]


def test_compute_probability_fits_a_beta_with_the_given_moments() -> None:
    result = compute_probability(np.array([0.5]), np.array([0.1]), np.array([0.5]))
    alpha, beta = result.alpha[0], result.beta[0]
    assert result.fitted.tolist() == [True]
    assert alpha == pytest.approx(12.0) and beta == pytest.approx(12.0)
    assert result.probability[0] == pytest.approx(0.5)


def test_beta_cdf_guards_like_upstream() -> None:
    x = np.array([0.0, 1.0, 1.5, -0.1, 0.5, 0.5])
    alpha = np.array([2.0, 2.0, 2.0, 2.0, 0.0, 2.0])
    beta = np.array([2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    # x at the ends is exact; x outside [0, 1] or a zero parameter gives 0; inside, Beta(2, 2) is symmetric
    assert beta_cdf(x, alpha, beta).tolist() == [0.0, 1.0, 0.0, 0.0, 0.0, 0.5]
