"""TargetLoadPacking: best-fit packing of measured CPU load towards a target utilisation.

A node scores highest when, with the pod added, its predicted CPU use lands exactly on
``targetUtilization`` percent; below the target the score rises with load (pack nodes),
above it the score falls to 0 at 100 % (do not overload them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.plugins.trimaran.resourcestats import (
    FloatArray,
    IntArray,
    KubeObject,
    go_round,
    node_names,
    resources_of,
    safe_divide,
    to_scores,
)
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    AVERAGE,
    CPU,
    LATEST,
    Metric,
    WatcherMetrics,
    node_metrics_list,
)

METRICS_REPORTING_INTERVAL_SECONDS = 60
"""How long after placement a pod's load may still be absent from the metrics."""


def predict_container_cpu(container: Mapping[str, Any], args: TargetLoadPackingArgs) -> int:
    """Predicted CPU millicores of a container: its limit, else request x multiplier, else the default."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    if "cpu" in limits:
        return milli_value(limits["cpu"])
    requests = resources.get("requests") or {}
    if "cpu" in requests:
        return int(go_round(milli_value(requests["cpu"]) * args.requests_multiplier))
    return args.default_cpu_millis


def predict_pod_cpu(pod: KubeObject, args: TargetLoadPackingArgs) -> int:
    """Predicted CPU millicores of a pod: its regular containers (init containers ignored) plus overhead."""
    spec = pod.get("spec") or {}
    predicted = sum(predict_container_cpu(container, args) for container in spec.get("containers") or [])
    overhead = (spec.get("overhead") or {}).get("cpu")
    return predicted + (milli_value(overhead) if overhead is not None else 0)


def counts_as_missing(seen_at: float, window_end: int) -> bool:
    """Whether a recently placed pod's load is probably not in the metrics yet.

    True when it was seen after the metrics window closed, or less than a reporting
    interval before it. ``seen_at`` is Unix seconds (fractions dropped as Go's Unix() does).
    """
    seen = math.floor(seen_at)
    return seen > window_end or window_end - seen < METRICS_REPORTING_INTERVAL_SECONDS


def missing_utilisation(
    recent_pods: Iterable[tuple[float, KubeObject]],
    window_end: int,
    args: TargetLoadPackingArgs,
    predict: Callable[[KubeObject], int] | None = None,
) -> int:
    """Predicted CPU millicores of one node's recently placed pods the metrics do not show yet.

    ``recent_pods`` are the (time seen, Pod) entries of the recently-scheduled cache for
    the node; ``window_end`` is the metrics snapshot's ``window.end``; ``predict``, if given,
    is ``predict_pod_cpu`` with these args (a caller may cache it).
    """
    if predict is None:
        predict = functools.partial(predict_pod_cpu, args=args)
    return sum(predict(pod) for seen_at, pod in recent_pods if counts_as_missing(seen_at, window_end))


def node_cpu_percent(metrics: Sequence[Metric]) -> float | None:
    """The node's CPU utilisation %: the last CPU metric that is an average or a latest value."""
    percent = None
    for metric in metrics:
        if metric.type == CPU and metric.operator in (AVERAGE, LATEST):
            percent = metric.value
    return percent


@dataclass(frozen=True)
class NodeArrays:
    """Per-node inputs of the score, one entry per candidate node."""

    capacity_millis: IntArray
    """``status.capacity.cpu`` in millicores (capacity, not allocatable, as upstream)."""
    cpu_percent: FloatArray
    """Measured CPU utilisation in percent; NaN where the node has no usable CPU metric."""
    missing_millis: IntArray
    """Predicted CPU of recently placed pods not yet in the metrics."""


def build_node_arrays(
    nodes: Sequence[KubeObject], snapshot: WatcherMetrics | None, missing: Mapping[str, int]
) -> NodeArrays:
    """Arrays for ``score_nodes`` from raw inputs.

    ``nodes``: v1 Node dicts (``metadata.name``, ``status.capacity.cpu``), in the order the
    scores should come back. ``snapshot``: the latest metrics, None before the first fetch.
    ``missing``: node name -> ``missing_utilisation`` of its recently placed pods (absent = 0).
    """
    names = node_names(nodes)
    percents = [None if m is None else node_cpu_percent(m) for m in node_metrics_list(snapshot, names)]
    capacities = [resources_of((node.get("status") or {}).get("capacity")).milli_cpu for node in nodes]
    return NodeArrays(
        capacity_millis=np.array(capacities, dtype=np.int64),
        cpu_percent=np.array([math.nan if p is None else p for p in percents], dtype=np.float64),
        missing_millis=np.array([missing.get(name, 0) for name in names], dtype=np.int64),
    )


def predicted_percent(arrays: NodeArrays, pod_millis: int) -> FloatArray:
    """Each node's predicted CPU use in percent of capacity once the pod runs there (0 without capacity)."""
    capacity = arrays.capacity_millis.astype(np.float64)
    used_millis = (arrays.cpu_percent / 100) * capacity
    load = used_millis + float(pod_millis) + arrays.missing_millis.astype(np.float64)
    return safe_divide(100 * load, capacity, capacity != 0)


def score_predicted(predicted: FloatArray, target: int) -> IntArray:
    """The score for predicted utilisation: rises to 100 at ``target``, falls to 0 at 100 %, 0 beyond."""
    x = float(target)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = (100 - x) * predicted / x + x
        above = x * (100 - predicted) / (100 - x)
    raw = np.where(predicted > x, np.where(predicted > 100, 0.0, above), below)
    return to_scores(raw)


def score_nodes(arrays: NodeArrays, pod_millis: int, args: TargetLoadPackingArgs) -> IntArray:
    """TargetLoadPacking's Score for every node; nodes without a CPU metric score 0.

    ``pod_millis`` is ``predict_pod_cpu`` of the pod being scheduled.
    """
    predicted = predicted_percent(arrays, pod_millis)
    scores = score_predicted(np.nan_to_num(predicted), args.target_utilization)
    return np.where(np.isnan(arrays.cpu_percent), 0, scores).astype(np.int64)
