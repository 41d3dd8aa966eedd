"""The files ``secsched score`` reads: a cluster snapshot and a pod, checked before anything runs.

Every problem is reported as ``FILE: FIELD: what is wrong: how to fix it``, so a snapshot
put together by hand (or cut from ``kubectl get -o yaml``) can be corrected without
reading a traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from secondary_scheduler.kube.quantity import QuantityError, parse_quantity
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

Json = dict[str, Any]
SNAPSHOT_KEYS = ("nodes", "pods", "objects", "metrics", "recentlyScheduled", "now")
_METRICS_SHAPE = (
    "a load-watcher WatcherMetrics object: {timestamp, window: {duration, start, end}, source, "
    "data: {NodeMetricsMap: {<node>: {metrics: [{name, type, operator, rollup, value}]}}}}"
)


class InputError(Exception):
    """A file ``secsched score`` cannot use; the message names the file, the field and the fix."""

    def __init__(self, path: str, field: str, problem: str) -> None:
        where = f"{path}: {field}" if field else path
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class RecentPod:
    """A pod placed shortly before the snapshot, with its bind time (Unix seconds)."""

    pod: Json
    node: str
    timestamp: float


@dataclass(frozen=True)
class ClusterSnapshot:
    nodes: list[Json]
    pods: list[Json]
    metrics: WatcherMetrics | None
    recently_scheduled: list[RecentPod]
    now: float
    objects: list[Json] = dataclasses.field(default_factory=list)
    """Other v1 objects of any kind (PVs, StorageClasses, PDBs...): what plugins read from informers."""
    """The time the cycle runs at; defaults to the metrics' timestamp (a snapshot is explained as of then)."""


def read_document(path: str) -> Any:
    """A YAML or JSON file's content (JSON is YAML)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, "", f"cannot be read ({error})") from error
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or error
        raise InputError(path, "", f"is not valid YAML or JSON{line} ({problem})") from error


def load_pod(path: str) -> Json:
    """The pod to schedule: a v1 Pod."""
    document = read_document(path)
    if not isinstance(document, dict):
        raise InputError(path, "", "expected a v1 Pod (a mapping with metadata and spec)")
    _check_pod(document, path, "")
    return document


def load_snapshot(path: str) -> ClusterSnapshot:
    """The cluster to schedule into: nodes, the pods bound to them, and optionally metrics."""
    document = read_document(path)
    if not isinstance(document, dict):
        raise InputError(path, "", f"expected a mapping with the keys {', '.join(SNAPSHOT_KEYS)}")
    unknown = sorted(set(document) - set(SNAPSHOT_KEYS))
    if unknown:
        raise InputError(path, unknown[0], f"unknown field: a snapshot has only {', '.join(SNAPSHOT_KEYS)}")
    nodes = _nodes(document.get("nodes"), path)
    node_names = {node["metadata"]["name"] for node in nodes}
    pods = _items(document.get("pods") or [], path, "pods", "v1 Pods bound to the snapshot's nodes")
    for index, pod in enumerate(pods):
        _check_pod(pod, path, f"pods[{index}].")
        _check_bound(pod, path, f"pods[{index}]", node_names)
    metrics = _metrics(document.get("metrics"), path)
    now = _number(document.get("now"), path, "now") if document.get("now") is not None else None
    if now is None:
        now = float(metrics.timestamp or metrics.window.end) if metrics is not None else 0.0
    recent = _recent(document.get("recentlyScheduled") or [], path, pods, node_names)
    objects = _objects(document.get("objects") or [], path)
    return ClusterSnapshot(nodes, pods, metrics, recent, now, objects)


def _objects(value: Any, path: str) -> list[Json]:
    """Objects as `kubectl get -o yaml` writes them: apiVersion, kind and a name each."""
    objects = _items(value, path, "objects", "Kubernetes objects (apiVersion, kind, metadata)")
    for index, obj in enumerate(objects):
        for key in ("apiVersion", "kind"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise InputError(
                    path, f"objects[{index}].{key}", "missing: every object needs apiVersion and kind"
                )
        _name(obj, path, f"objects[{index}]")
    return objects


def _items(value: Any, path: str, field: str, what: str) -> list[Json]:
    if not isinstance(value, list):
        raise InputError(path, field, f"expected a list of {what}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(path, f"{field}[{index}]", f"expected a mapping (one of the {what})")
    return value


def _nodes(value: Any, path: str) -> list[Json]:
    if value is None:
        raise InputError(
            path, "nodes", "missing: list the cluster's v1 Nodes (`kubectl get nodes -o yaml`'s items)"
        )
    nodes = _items(value, path, "nodes", "v1 Nodes")
    seen: set[str] = set()
    for index, node in enumerate(nodes):
        name = _name(node, path, f"nodes[{index}]")
        if name in seen:
            raise InputError(path, f"nodes[{index}].metadata.name", f"{name!r} is listed twice: keep one")
        seen.add(name)
        status = node.get("status") or {}
        for part in ("capacity", "allocatable"):
            _check_quantities(status.get(part), path, f"nodes[{index}].status.{part}")
        if not (status.get("allocatable") or {}).get("cpu"):
            raise InputError(
                path,
                f"nodes[{index}].status.allocatable.cpu",
                "missing: give the node's allocatable (and capacity) cpu and memory",
            )
    return nodes


def _name(obj: Json, path: str, field: str) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        where = f"{field}.metadata.name" if field else "metadata.name"
        raise InputError(path, where, "missing: every object needs a name")
    return name


def _check_pod(pod: Json, path: str, prefix: str) -> None:
    _name(pod, path, prefix.rstrip("."))
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
        raise InputError(path, f"{prefix}spec.containers", "missing: a Pod needs spec.containers (a list)")
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or ()):
            resources = (container or {}).get("resources") or {}
            for part in ("requests", "limits"):
                _check_quantities(
                    resources.get(part), path, f"{prefix}spec.{field}[{index}].resources.{part}"
                )
    _check_quantities(spec.get("overhead"), path, f"{prefix}spec.overhead")


def _check_bound(pod: Json, path: str, field: str, node_names: set[str]) -> None:
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise InputError(
            path,
            f"{field}.spec.nodeName",
            "missing: the snapshot's pods are those already on nodes (the pod to schedule goes in --pod)",
        )
    if node not in node_names:
        raise InputError(
            path, f"{field}.spec.nodeName", f"{node!r} is not one of the snapshot's nodes: add it"
        )


def _check_quantities(resources: Any, path: str, field: str) -> None:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        raise InputError(path, field, "expected a mapping of resource name to quantity (cpu: 500m)")
    for name, quantity in resources.items():
        try:
            parse_quantity(quantity)
        except (QuantityError, TypeError) as error:
            raise InputError(path, f"{field}.{name}", str(error)) from error


def _metrics(value: Any, path: str) -> WatcherMetrics | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(path, "metrics", f"expected {_METRICS_SHAPE}")
    try:
        return WatcherMetrics.parse(value)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(["metrics", *(str(part) for part in first["loc"])])
        raise InputError(path, field, f"{first['msg']}: metrics must be {_METRICS_SHAPE}") from error


def _number(value: Any, path: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(path, field, f"expected Unix seconds (a number), got {value!r}")
    return float(value)


def _recent(value: Any, path: str, pods: Sequence[Json], node_names: set[str]) -> list[RecentPod]:
    """``recentlyScheduled``: {pod: "NAMESPACE/NAME" of one of ``pods``, or a v1 Pod; timestamp}."""
    by_key = {_key(pod): pod for pod in pods}
    recent = []
    for index, item in enumerate(_items(value, path, "recentlyScheduled", "{pod, timestamp} entries")):
        field = f"recentlyScheduled[{index}]"
        reference = item.get("pod")
        if isinstance(reference, str):
            key = reference if "/" in reference else f"default/{reference}"
            pod = by_key.get(key)
            if pod is None:
                raise InputError(path, f"{field}.pod", f"{reference!r} is not one of the snapshot's pods")
        elif isinstance(reference, dict):
            pod = reference
            _check_pod(pod, path, f"{field}.pod.")
            _check_bound(pod, path, f"{field}.pod", node_names)
        else:
            raise InputError(path, f"{field}.pod", "expected NAMESPACE/NAME of one of the pods, or a v1 Pod")
        timestamp = _number(item.get("timestamp"), path, f"{field}.timestamp")
        recent.append(RecentPod(pod, str(pod["spec"]["nodeName"]), timestamp))
    return recent


def _key(pod: Json) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"
