"""LowRiskOverCommitment: place pods where overcommitted limits are least likely to bite.

Per resource, the risk blends a limit risk (how far the node's total limits exceed its
capacity) and a load risk (the chance, under a Beta distribution fitted to the measured
load, that usage outgrows what is already requested). The node scores
``(1 - max risk) * 100``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.resourcestats import (
    BoolArray,
    FloatArray,
    IntArray,
    KubeObject,
    Resources,
    allocatable,
    beta_cdf,
    compute_probability,
    create_resource_stats,
    get_mu_sigma,
    node_names,
    pod_limits,
    pod_requests,
    safe_divide,
    set_max_limits,
    to_scores,
)
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    CPU,
    MEMORY,
    ResourceDataArrays,
    WatcherMetrics,
    node_metrics_list,
    resource_data_arrays,
)

MAX_VARIANCE_ALLOWANCE = 0.99
"""Fraction of a Beta's largest possible variance a fit may use, keeping its parameters finite."""


@dataclass(frozen=True)
class PodResources:
    """The pod's effective requests, and limits raised to at least those (upstream's PreScore state)."""

    requests: Resources
    limits: Resources

    @property
    def best_effort(self) -> bool:
        """No cpu or memory requested or limited: the plugin leaves such pods alone (score 0)."""
        return self.requests == Resources() and self.limits == Resources()


def prescore(pod: KubeObject) -> PodResources:
    """PreScore: the pod's requests and limits, computed once per scheduling cycle."""
    requests = pod_requests(pod)
    return PodResources(requests=requests, limits=set_max_limits(requests, pod_limits(pod)))


@dataclass(frozen=True)
class ResourceArrays:
    """One resource on every node: allocatable, totals of the pods already there, and measurements."""

    capacity: IntArray
    requests: IntArray
    """Sum of the node's pods' requests (pending pod excluded), not yet capped at capacity."""
    limits: IntArray
    """Sum of the node's pods' limits, each at least its request (pending pod excluded)."""
    usage: ResourceDataArrays


@dataclass(frozen=True)
class NodeArrays:
    """Per-node inputs of the score, one entry per candidate node; independent of the pod."""

    has_metrics: BoolArray
    cpu: ResourceArrays
    memory: ResourceArrays


def build_node_arrays(
    nodes: Sequence[KubeObject],
    pods_by_node: Mapping[str, Sequence[KubeObject]],
    snapshot: WatcherMetrics | None,
) -> NodeArrays:
    """Arrays for ``score_nodes`` from raw inputs.

    ``nodes``: v1 Node dicts (``metadata.name``, ``status.allocatable``), in the order the
    scores should come back. ``pods_by_node``: node name -> the v1 Pod dicts the scheduler
    counts on that node (its NodeInfo pods), without the pod being scheduled.
    ``snapshot``: the latest metrics, None before the first fetch.
    """
    names = node_names(nodes)
    totals = [_node_totals(pods_by_node.get(name, ())) for name in names]
    cpu_capacity, memory_capacity = allocatable(nodes)
    return NodeArrays(
        has_metrics=np.array([m is not None for m in node_metrics_list(snapshot, names)], dtype=np.bool_),
        cpu=ResourceArrays(
            capacity=cpu_capacity,
            requests=np.array([req.milli_cpu for req, _ in totals], dtype=np.int64),
            limits=np.array([lim.milli_cpu for _, lim in totals], dtype=np.int64),
            usage=resource_data_arrays(snapshot, names, CPU),
        ),
        memory=ResourceArrays(
            capacity=memory_capacity,
            requests=np.array([req.memory for req, _ in totals], dtype=np.int64),
            limits=np.array([lim.memory for _, lim in totals], dtype=np.int64),
            usage=resource_data_arrays(snapshot, names, MEMORY),
        ),
    )


def _node_totals(pods: Sequence[KubeObject]) -> tuple[Resources, Resources]:
    """Summed requests and (raised) limits of the pods on a node."""
    requests, limits = Resources(), Resources()
    for pod in pods:
        resources = prescore(pod)
        requests += resources.requests
        limits += resources.limits
    return requests, limits


def _max_variance(mu: FloatArray) -> FloatArray:
    """The largest variance a Beta distribution with mean ``mu`` can have (0 at the ends)."""
    return np.where((mu > 0) & (mu < 1), mu * (1 - mu), 0.0)


def compute_risk(
    resource: str,
    capacity: IntArray,
    request: IntArray,
    limit: IntArray,
    request_minus_pod: IntArray,
    limit_minus_pod: IntArray,
    usage: ResourceDataArrays,
    smoothing_window_size: int,
    weight: float,
) -> FloatArray:
    """Upstream's computeRisk for one resource ("cpu" or "memory") on every node, in [0, 1].

    Amounts are integer millicores or bytes; ``request`` and ``request_minus_pod`` are
    already capped at capacity, limits are not.
    """
    risk_limit = limit_risk(capacity, request, limit)
    risk_load = load_risk(
        resource, capacity, request_minus_pod, limit_minus_pod, usage, smoothing_window_size
    )
    return blend_risks(risk_limit, risk_load, weight)


def limit_risk(capacity: IntArray, request: IntArray, limit: IntArray) -> FloatArray:
    """computeRisk's limit risk: how far the limits, the pending pod's included, exceed capacity."""
    overcommitted = limit > capacity
    return safe_divide(
        (limit - capacity).astype(np.float64), (limit - request).astype(np.float64), overcommitted
    )


def load_risk(
    resource: str,
    capacity: IntArray,
    request_minus_pod: IntArray,
    limit_minus_pod: IntArray,
    usage: ResourceDataArrays,
    smoothing_window_size: int,
) -> FloatArray:
    """computeRisk's load risk: the chance, under a Beta fitted to the node's measured load, that
    usage outgrows what its pods request. It does not depend on the pending pod (upstream's risk
    reads the node's totals without it), so a node's stays the same until its pods or its metrics
    change (``LoadRiskCache``). Element-wise: a node's value is the same whatever nodes come with it.
    """
    capacity_f = capacity.astype(np.float64)
    mu, sigma = get_mu_sigma(create_resource_stats(capacity, 0, usage, resource))
    sigma = sigma * math.sqrt(smoothing_window_size)
    sigma = np.minimum(sigma, np.sqrt(_max_variance(mu) * MAX_VARIANCE_ALLOWANCE))
    threshold = np.clip(safe_divide(request_minus_pod.astype(np.float64), capacity_f, capacity != 0), 0, 1)
    fit = compute_probability(mu, sigma, threshold)

    # Condition on usage staying under the limits already on the node, when those fit in capacity.
    conditioned = (limit_minus_pod < capacity) & (request_minus_pod <= limit_minus_pod)
    limit_threshold = safe_divide(limit_minus_pod.astype(np.float64), capacity_f, conditioned)
    nothing_allowed = conditioned & (limit_threshold == 0)
    limit_probability = beta_cdf(limit_threshold, fit.alpha, fit.beta)
    rescale = conditioned & ~nothing_allowed & fit.fitted & (limit_probability > 0)
    rescaled = np.clip(safe_divide(fit.probability, limit_probability, rescale), 0, 1)
    probability = np.where(nothing_allowed, 1.0, np.where(rescale, rescaled, fit.probability))

    return np.where(usage.valid, 1 - probability, 0.0)


def blend_risks(risk_limit: FloatArray, risk_load: FloatArray, weight: float) -> FloatArray:
    """computeRisk's answer: the two risks weighted (``riskLimitWeights``), in [0, 1]."""
    return np.clip(weight * risk_limit + (1 - weight) * risk_load, 0, 1)


@dataclass(frozen=True)
class LoadRisks:
    """``load_risk`` of cpu and memory, one entry per node of a NodeArrays."""

    cpu: FloatArray
    memory: FloatArray


def load_risks(arrays: NodeArrays, args: LowRiskOverCommitmentArgs) -> LoadRisks:
    """Both resources' load risks of ``arrays``' nodes (what ``score_nodes`` computes without them)."""
    return LoadRisks(
        cpu=_load_risk("cpu", arrays.cpu, args),
        memory=_load_risk("memory", arrays.memory, args),
    )


def score_nodes(
    arrays: NodeArrays,
    pod: PodResources,
    args: LowRiskOverCommitmentArgs,
    risks: LoadRisks | None = None,
) -> IntArray:
    """LowRiskOverCommitment's Score for every node; 0 for a best-effort pod or a node without metrics.

    ``pod`` is ``prescore`` of the pod being scheduled; ``risks``, when given, are ``load_risks``
    of ``arrays`` made earlier (the plugin keeps them per node while nothing they read changes).
    """
    if pod.best_effort:
        return np.zeros(arrays.has_metrics.shape, dtype=np.int64)
    if risks is None:
        risks = load_risks(arrays, args)
    cpu, memory = arrays.cpu, arrays.memory
    risk_cpu = _resource_risk("cpu", cpu, pod.requests.milli_cpu, pod.limits.milli_cpu, risks.cpu, args)
    risk_memory = _resource_risk("memory", memory, pod.requests.memory, pod.limits.memory, risks.memory, args)
    scores = to_scores((1 - np.maximum(risk_cpu, risk_memory)) * 100)
    return np.where(arrays.has_metrics, scores, 0).astype(np.int64)


def _load_risk(name: str, resource: ResourceArrays, args: LowRiskOverCommitmentArgs) -> FloatArray:
    return load_risk(
        name,
        capacity=resource.capacity,
        request_minus_pod=np.minimum(resource.requests, resource.capacity),
        limit_minus_pod=resource.limits,
        usage=resource.usage,
        smoothing_window_size=args.smoothing_window_size,
    )


def _resource_risk(
    name: str,
    resource: ResourceArrays,
    pod_request: int,
    pod_limit: int,
    risk_load: FloatArray,
    args: LowRiskOverCommitmentArgs,
) -> FloatArray:
    """``compute_risk`` with the pending pod added to the node's totals; requests capped at capacity."""
    risk_limit = limit_risk(
        resource.capacity,
        request=np.minimum(resource.requests + pod_request, resource.capacity),
        limit=resource.limits + pod_limit,
    )
    return blend_risks(risk_limit, risk_load, args.risk_limit_weights[name])
