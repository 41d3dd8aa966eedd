"""Maths the Trimaran plugins share, written to give upstream's floats bit for bit.

Upstream is Go: every formula here keeps its operation order, and rounding is Go's
``math.Round`` (halves away from zero), not Python's banker's rounding. Arrays hold one
entry per candidate node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.kube.quantity import int_value, milli_value
from secondary_scheduler.plugins.trimaran.incbeta import betainc
from secondary_scheduler.plugins.trimaran.watchermetrics import ResourceDataArrays

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
"""A v1 object (Pod, Node) as the API server returns it, decoded from JSON."""

MEGA_FACTOR = 1.0 / 1024.0 / 1024.0
"""Bytes to MiB, the memory unit of ResourceStats (a power of two, so scaling is exact)."""

MIN_SCORE = 0
MAX_SCORE = 100


def go_round(value: float) -> float:
    """Go's math.Round: nearest integer, halves away from zero (exact: no ``x + 0.5`` carry)."""
    fraction, whole = math.modf(value)
    if abs(fraction) >= 0.5:
        return whole + math.copysign(1.0, value)
    return whole


def go_round_array(values: FloatArray) -> FloatArray:
    """``go_round`` element-wise."""
    fraction, whole = np.modf(values)
    step = np.where(np.abs(fraction) >= 0.5, np.copysign(1.0, values), 0.0)
    return np.asarray(whole + step, dtype=np.float64)


def to_scores(values: FloatArray) -> IntArray:
    """Round float scores like upstream's ``int64(math.Round(x))`` and keep them in the framework's range."""
    return np.clip(go_round_array(values), MIN_SCORE, MAX_SCORE).astype(np.int64)


def safe_divide(numerator: FloatArray, denominator: FloatArray, where: BoolArray) -> FloatArray:
    """``numerator / denominator`` where ``where`` holds, else 0, without division warnings elsewhere."""
    out = np.zeros(np.broadcast_shapes(np.shape(numerator), np.shape(denominator)), dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=where)
    return out


@dataclass(frozen=True)
class Resources:
    """CPU and memory of a pod or a node in the scheduler's integer units."""

    milli_cpu: int = 0
    memory: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.milli_cpu + other.milli_cpu, self.memory + other.memory)


def resources_of(resource_list: Mapping[str, Any] | None) -> Resources:
    """The cpu (millicores, rounded up) and memory (bytes, rounded up) of a ResourceList; missing is 0."""
    if not resource_list:
        return Resources()
    cpu = resource_list.get("cpu")
    memory = resource_list.get("memory")
    return Resources(
        milli_cpu=milli_value(cpu) if cpu is not None else 0,
        memory=int_value(memory) if memory is not None else 0,
    )


def _effective_resources(pod: KubeObject, select: Callable[[Mapping[str, Any]], Any]) -> Resources:
    """Trimaran's GetEffectiveResource: sum of containers, at least any init container, plus overhead."""
    spec = pod.get("spec") or {}
    total = Resources()
    for container in spec.get("containers") or []:
        total += resources_of(select(container.get("resources") or {}))
    for container in spec.get("initContainers") or []:
        init = resources_of(select(container.get("resources") or {}))
        total = Resources(max(total.milli_cpu, init.milli_cpu), max(total.memory, init.memory))
    return total + resources_of(spec.get("overhead"))


def pod_requests(pod: KubeObject) -> Resources:
    """The pod's effective requests (Trimaran's GetResourceRequested); no defaults for missing ones."""
    return _effective_resources(pod, lambda resources: resources.get("requests"))


def pod_limits(pod: KubeObject) -> Resources:
    """The pod's effective limits (Trimaran's GetResourceLimits); a container without a limit adds 0."""
    return _effective_resources(pod, lambda resources: resources.get("limits"))


def set_max_limits(requests: Resources, limits: Resources) -> Resources:
    """Limits raised to at least the requests, per resource (Trimaran's SetMaxLimits)."""
    return Resources(max(limits.milli_cpu, requests.milli_cpu), max(limits.memory, requests.memory))


def allocatable(nodes: Sequence[KubeObject]) -> tuple[IntArray, IntArray]:
    """Each node's allocatable cpu (millicores) and memory (bytes); missing is 0."""
    lists = [resources_of((node.get("status") or {}).get("allocatable")) for node in nodes]
    return (
        np.array([item.milli_cpu for item in lists], dtype=np.int64),
        np.array([item.memory for item in lists], dtype=np.int64),
    )


def node_names(nodes: Sequence[KubeObject]) -> list[str]:
    """The nodes' names, which is how load-watcher keys its metrics."""
    return [str((node.get("metadata") or {}).get("name", "")) for node in nodes]


def in_stats_unit(amount: npt.ArrayLike, resource: str) -> FloatArray:
    """Integer cpu millicores or memory bytes in ResourceStats units: millicores, or MiB for memory."""
    values = np.asarray(amount, dtype=np.float64)
    return values * MEGA_FACTOR if resource == "memory" else values


@dataclass(frozen=True)
class ResourceStats:
    """Measured usage of one resource in absolute units (millicores or MiB), one entry per node."""

    used_avg: FloatArray
    used_stdev: FloatArray
    req: FloatArray
    capacity: FloatArray


def create_resource_stats(
    capacity: IntArray, request: int, usage: ResourceDataArrays, resource: str
) -> ResourceStats:
    """Trimaran's CreateResourceStats: capacity and request in stats units, usage as ``pct * cap / 100``.

    ``capacity`` and ``request`` are integer millicores (cpu) or bytes (memory). Entries
    where ``usage.valid`` is false are meaningless; callers mask them.
    """
    cap = in_stats_unit(capacity, resource)
    return ResourceStats(
        used_avg=usage.avg * cap / 100,
        used_stdev=usage.stdev * cap / 100,
        req=np.broadcast_to(in_stats_unit(request, resource), cap.shape),
        capacity=cap,
    )


def get_mu_sigma(stats: ResourceStats) -> tuple[FloatArray, FloatArray]:
    """Trimaran's GetMuSigma: load plus request, and deviation, as fractions of capacity in [0, 1].

    Both are 0 where the capacity is not positive.
    """
    positive = stats.capacity > 0
    mu = np.clip(safe_divide(stats.used_avg + stats.req, stats.capacity, positive), 0.0, 1.0)
    sigma = np.clip(safe_divide(stats.used_stdev, stats.capacity, positive), 0.0, 1.0)
    return mu, sigma


def beta_cdf(x: FloatArray, alpha: FloatArray, beta: FloatArray) -> FloatArray:
    """P(X <= x) for X ~ Beta(alpha, beta), with upstream's guards: bad parameters or results give 0.

    ``betainc`` is our port of the Cephes incbet that upstream reaches through gonum's RegIncBeta.
    """
    invalid = (alpha <= 0) | (beta <= 0) | (x < 0) | (x > 1)
    interior = ~invalid & (x != 0) & (x != 1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        inside = np.asarray(betainc(np.where(interior, alpha, 1.0), np.where(interior, beta, 1.0), x))
    probability = np.where(interior, inside, np.where(~invalid & (x == 1), 1.0, 0.0))
    return np.where(np.isnan(probability) | (probability < 0) | (probability > 1), 0.0, probability)


@dataclass(frozen=True)
class Probability:
    """ComputeProbability's answer per node, with the fitted Beta parameters where a fit was made."""

    probability: FloatArray
    alpha: FloatArray
    beta: FloatArray
    fitted: BoolArray


def compute_probability(mu: FloatArray, sigma: FloatArray, threshold: FloatArray) -> Probability:
    """Probability that utilisation stays at or below ``threshold``, from a Beta fitted to (mu, sigma).

    Degenerate loads are decided without a fit: no load, or a constant load under the
    threshold, surely fits (1); a constant load over it surely does not (0). Moments a Beta
    cannot have give 0.
    """
    certain = (mu == 0) | ((sigma == 0) & (mu <= threshold))
    impossible = ~certain & (sigma == 0)
    second_moment = (sigma * sigma) + (mu * mu)
    variance = second_moment - mu * mu
    max_variance = mu * (1 - mu)
    matchable = ~certain & ~impossible & (mu >= 0) & (mu <= 1) & (variance >= 0) & (variance < max_variance)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.maximum((max_variance / variance) - 1, np.finfo(np.float64).smallest_subnormal)
        alpha = np.where(matchable, mu * spread, 0.0)
        beta = np.where(matchable, (1 - mu) * spread, 0.0)
    fitted_probability = beta_cdf(threshold, alpha, beta)
    probability = np.where(certain, 1.0, np.where(matchable, fitted_probability, 0.0))
    return Probability(probability=probability, alpha=alpha, beta=beta, fitted=matchable)
