"""The files ``secsched score`` reads: a cluster snapshot and a pod, checked before anything runs.

Every problem is reported as ``FILE: FIELD: what is wrong: how to fix it``, so a snapshot
put together by hand (or cut from ``kubectl get -o yaml``) can be corrected without
reading a traceback.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from secondary_scheduler.apischema import check_kind, unknown_fields
from secondary_scheduler.apivalidation import (
    Problem,
    check_node,
    check_object,
    check_pod,
    qualified_name_problem,
)
from secondary_scheduler.cli.errors import InputError as CliInputError
from secondary_scheduler.cli.errors import read_input, where
from secondary_scheduler.config.suggest import allowed_fields, suggest_field
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.kube.quantity import parse_quantity
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    AVERAGE,
    CPU,
    LATEST,
    MEMORY,
    STD,
    WatcherMetrics,
)
from secondary_scheduler.safeyaml import (
    MAX_MANIFEST_BYTES,
    MAX_SNAPSHOT_BYTES,
    Document,
    YamlLimitError,
    describe_error,
    load_document,
    safe_load,
)

SNAPSHOT_KEYS = ("nodes", "pods", "objects", "metrics", "recentlyScheduled", "now")
RECENT_KEYS = ("pod", "timestamp")
METRIC_TYPES = (CPU, MEMORY, "Bandwidth", "Storage", "Energy", "Unknown")
"""load-watcher's metric types (pkg/watcher/watcher.go): Trimaran reads CPU and Memory."""
METRIC_OPERATORS = (AVERAGE, STD, LATEST, "Unknown", "")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HUGE_PAGES_PREFIX = "hugepages-"
MAX_PROBLEMS_SHOWN = 20
MAX_METRIC_VALUE = 1000.0
"""Metric values are percentages of a node's capacity; anything past 10x capacity is not a measurement."""
MAX_UNIX_SECONDS = 10**11
_METRICS_SHAPE = (
    "a load-watcher WatcherMetrics object: {timestamp, window: {duration, start, end}, source, "
    "data: {NodeMetricsMap: {<node>: {metrics: [{name, type, operator, rollup, value}]}}}}"
)


class InputError(CliInputError):
    """A file ``secsched score`` cannot use; the message names the file, the field and the fix."""

    def __init__(self, path: str, field: str, problem: str, more: Sequence[str] = ()) -> None:
        super().__init__(path, problem, line=line_of(path, field), field=field or None, more=more)


def _raise_problems(path: str, problems: Sequence[Problem]) -> None:
    """Every API-validation problem, one `error:` line each (at most 20)."""
    if not problems:
        return
    lines = [
        f"{where(path, line_of(path, field), field or None)}: {problem}: {fix}"
        for field, problem, fix in problems
    ]
    shown = lines[:MAX_PROBLEMS_SHOWN]
    if len(lines) > len(shown):
        shown.append(f"{path}: ... and {len(lines) - len(shown)} more problems")
    field, problem, fix = problems[0]
    raise InputError(path, field, f"{problem}: {fix}", shown[1:])


@dataclass(frozen=True)
class RecentPod:
    """A pod placed shortly before the snapshot, with its bind time (Unix seconds)."""

    pod: JSON
    node: str
    timestamp: float


@dataclass(frozen=True)
class ClusterSnapshot:
    nodes: list[JSON]
    pods: list[JSON]
    metrics: WatcherMetrics | None
    recently_scheduled: list[RecentPod]
    now: float
    objects: list[JSON] = dataclasses.field(default_factory=list)
    """Other v1 objects of any kind (PVs, StorageClasses, PDBs...): what plugins read from informers."""
    """The time the cycle runs at; defaults to the metrics' timestamp (a snapshot is explained as of then)."""


_DOCUMENTS: dict[str, Document] = {}
"""The YAML documents read so far, by path: so problems found later can name their line."""
KEEP_LINES_BYTES = 8 * 1024 * 1024
"""Larger documents are not kept as YAML nodes (memory): their problems name no line."""


def read_document(path: str, limit: int = MAX_MANIFEST_BYTES, what: str = "file") -> Any:
    """A YAML or JSON file's content (JSON is YAML), read within secondary_scheduler.safeyaml's limits."""
    text = read_input(path, what, limit)
    if text.lstrip().startswith(("{", "[")):
        try:
            return orjson.loads(text)  # fast for big snapshots; YAML below names the line of an error
        except orjson.JSONDecodeError:
            pass
    try:
        if len(text) > KEEP_LINES_BYTES:
            return safe_load(text, max_bytes=limit, what=f"the {what}")
        document = load_document(text, max_bytes=limit, what=f"the {what}")
    except yaml.YAMLError as error:
        line, problem = describe_error(error)
        fix = "" if isinstance(error, YamlLimitError) else f"give a YAML or JSON {what}"
        raise CliInputError(path, problem, line=line, fix=fix) from error
    _DOCUMENTS[path] = document
    return document.data


def line_of(path: str, field: str) -> int | None:
    """The line of `field` (`spec.containers[0].resources`) in the YAML file at `path`, if known.

    Keys may hold dots (`metadata.labels.example.com/tier`), so the field is matched against
    the document's actual keys, longest first, rather than split blindly.
    """
    document = _DOCUMENTS.get(path)
    if document is None or not field:
        return None
    parts: list[str | int] = []
    data, rest = document.data, field
    while rest:
        index = re.match(r"\[(\d+)\]\.?", rest)
        if index is not None and isinstance(data, list):
            position = int(index.group(1))
            if position >= len(data):
                break
            parts.append(position)
            data, rest = data[position], rest[index.end() :]
            continue
        if not isinstance(data, dict):
            break
        key = next(
            (
                candidate
                for candidate in sorted((k for k in data if isinstance(k, str)), key=len, reverse=True)
                if rest == candidate or rest.startswith((f"{candidate}.", f"{candidate}["))
            ),
            None,
        )
        if key is None:
            break
        parts.append(key)
        data, rest = data[key], rest[len(key) :].lstrip(".")
    return document.line(*parts)


def load_pod(path: str) -> JSON:
    """The pod to schedule: a v1 Pod, checked as the API server would check it."""
    document = read_document(path, what="pod")
    if not isinstance(document, dict):
        raise InputError(path, "", "expected a v1 Pod (a mapping with metadata and spec)")
    _raise_problems(path, _strict(document, "", "Pod") or check_pod(document))
    _raise_problems(path, container_resource_problems(document, ""))
    return document


def _strict(obj: JSON, at: str, kind: str) -> list[Problem]:
    """What the API server's strict decoding refuses in `obj`, a v1 `kind` (read as one when it
    names no kind, as items cut from a list often do): the wrong kind or version, unknown fields."""
    if obj.get("kind") is not None or obj.get("apiVersion") is not None:
        wrong = check_kind(obj, at, (kind,))
        if wrong:
            return wrong
    return unknown_fields(obj, at, ("v1", kind))


def container_resource_problems(pod: JSON, at: str) -> list[Problem]:
    """The API server's rules for container resource names and extended resources
    (pkg/apis/core/validation: validateContainerResourceName, validateResourceRequirements)."""
    problems: list[Problem] = []
    prefix = f"{at}." if at else ""
    spec = pod.get("spec") or {}
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or []):
            resources = (container or {}).get("resources") or {}
            where_ = f"{prefix}spec.{field}[{index}].resources"
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            for part, listed in (("limits", limits), ("requests", requests)):
                for name in listed:
                    problem = _container_resource_name_problem(str(name))
                    if problem:
                        problems.append(
                            (
                                f"{where_}.{part}.{name}",
                                f"Invalid value: {json.dumps(str(name))}: {problem}",
                                "use cpu, memory, ephemeral-storage, hugepages-<size>, or a "
                                f"domain-qualified extended resource such as example.com/{name}",
                            )
                        )
            for name, quantity in requests.items():
                if _overcommit_allowed(str(name)) or _container_resource_name_problem(str(name)):
                    continue
                limit = limits.get(name)
                if limit is None:
                    problems.append(
                        (
                            f"{where_}.limits",
                            f"Required value: Limit must be set for non overcommitable resources ({name})",
                            f"add limits.{name}: {quantity}, equal to the request",
                        )
                    )
                elif parse_quantity(str(limit)) != parse_quantity(str(quantity)):
                    problems.append(
                        (
                            f"{where_}.requests",
                            f"Invalid value: {json.dumps(str(quantity))}: "
                            f"must be equal to {name} limit of {limit}",
                            "an extended resource cannot be overcommitted: give the same request and limit",
                        )
                    )
    return problems


def _container_resource_name_problem(name: str) -> str | None:
    if "/" not in name:
        if name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGE_PAGES_PREFIX):
            return None
        return "must be a standard resource for containers"
    if "kubernetes.io/" in name:  # native: the API server's own names
        return None
    if name.startswith("requests.") or qualified_name_problem(f"requests.{name}"):
        return "doesn't follow extended resource name standard"
    return None


def _overcommit_allowed(name: str) -> bool:
    """Native resources but hugepages may be requested below their limit; extended ones may not."""
    return ("/" not in name or "kubernetes.io/" in name) and not name.startswith(HUGE_PAGES_PREFIX)


def load_snapshot(path: str) -> ClusterSnapshot:
    """The cluster to schedule into: nodes, the pods bound to them, and optionally metrics."""
    document = read_document(path, MAX_SNAPSHOT_BYTES, "snapshot")
    if not isinstance(document, dict):
        raise InputError(path, "", f"expected a mapping with the keys {', '.join(SNAPSHOT_KEYS)}")
    _raise_problems(path, _unknown_keys(document, (), SNAPSHOT_KEYS))
    problems: list[Problem] = []
    nodes = _nodes(document.get("nodes"), path, problems)
    node_names = {node["metadata"]["name"] for node in nodes if _has_name(node)}
    pods = _items(document.get("pods") or [], path, "pods", "v1 Pods bound to the snapshot's nodes")
    for index, pod in enumerate(pods):
        found = _strict(pod, f"pods[{index}]", "Pod") or check_pod(pod, f"pods[{index}]")
        problems += found or container_resource_problems(pod, f"pods[{index}]")
        _check_bound(pod, f"pods[{index}]", node_names, problems)
    objects = _items(
        document.get("objects") or [], path, "objects", "Kubernetes objects (apiVersion, kind, metadata)"
    )
    for index, obj in enumerate(objects):
        problems += check_object(obj, f"objects[{index}]") or check_kind(obj, f"objects[{index}]")
        problems += unknown_fields(obj, f"objects[{index}]")
    _raise_problems(path, problems)
    metrics = _metrics(document.get("metrics"), path)
    now = _number(document.get("now"), path, "now") if document.get("now") is not None else None
    if now is None:
        now = float(metrics.timestamp or metrics.window.end) if metrics is not None else 0.0
    recent = _recent(document.get("recentlyScheduled") or [], path, pods, node_names)
    return ClusterSnapshot(nodes, pods, metrics, recent, now, objects)


def _has_name(obj: JSON) -> bool:
    metadata = obj.get("metadata")
    return isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and bool(metadata["name"])


def _items(value: Any, path: str, field: str, what: str) -> list[JSON]:
    if not isinstance(value, list):
        raise InputError(path, field, f"expected a list of {what}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(path, f"{field}[{index}]", f"expected a mapping (one of the {what})")
    return value


def _nodes(value: Any, path: str, problems: list[Problem]) -> list[JSON]:
    if value is None:
        raise InputError(
            path, "nodes", "missing: list the cluster's v1 Nodes (`kubectl get nodes -o yaml`'s items)"
        )
    nodes = _items(value, path, "nodes", "v1 Nodes")
    seen: set[str] = set()
    for index, node in enumerate(nodes):
        found = _strict(node, f"nodes[{index}]", "Node") or check_node(node, f"nodes[{index}]")
        problems += found
        if found or not _has_name(node):
            continue
        name = node["metadata"]["name"]
        if name in seen:
            problems.append((f"nodes[{index}].metadata.name", f"{name!r} is listed twice", "keep one"))
        seen.add(name)
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        if not allocatable.get("cpu"):
            problems.append(
                (
                    f"nodes[{index}].status.allocatable.cpu",
                    "missing",
                    "give the node's allocatable (and capacity) cpu and memory",
                )
            )
    return nodes


def _check_bound(pod: JSON, field: str, node_names: set[str], problems: list[Problem]) -> None:
    spec = pod.get("spec")
    node = spec.get("nodeName") if isinstance(spec, dict) else None
    if node is not None and not isinstance(node, str):
        return  # check_pod reports the type
    if not node:
        problems.append(
            (
                f"{field}.spec.nodeName",
                "missing",
                "the snapshot's pods are those already on nodes (the pod to schedule goes in --pod)",
            )
        )
    elif node not in node_names:
        problems.append((f"{field}.spec.nodeName", f"{node!r} is not one of the snapshot's nodes", "add it"))


def _metrics(value: Any, path: str) -> WatcherMetrics | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(path, "metrics", f"expected {_METRICS_SHAPE}")
    _raise_problems(path, _metrics_fields(value, ("metrics",)))
    try:
        metrics = WatcherMetrics.parse(value)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(["metrics", *(str(part) for part in first["loc"])])
        raise InputError(path, field, f"{first['msg']}: metrics must be {_METRICS_SHAPE}") from error
    for name, when in (
        ("timestamp", metrics.timestamp),
        ("window.start", metrics.window.start),
        ("window.end", metrics.window.end),
    ):
        if not 0 <= when <= MAX_UNIX_SECONDS:
            raise InputError(path, f"metrics.{name}", f"{when} is not a time: give Unix seconds")
    for node, node_metrics in metrics.data.node_metrics_map.items():
        for index, metric in enumerate(node_metrics.metrics):
            if not (math.isfinite(metric.value) and 0 <= metric.value <= MAX_METRIC_VALUE):
                raise InputError(
                    path,
                    f"metrics.data.NodeMetricsMap.{node}.metrics[{index}].value",
                    f"{metric.value} is not a utilisation: load-watcher values are percentages of the "
                    f"node's capacity, from 0 to {MAX_METRIC_VALUE:g}",
                )
    return metrics


def _metrics_fields(value: Any, at: tuple[str | int, ...]) -> list[Problem]:
    """Unknown keys of a WatcherMetrics document, and metric types and operators load-watcher
    does not write (`Cpu`, `MEAN`): Trimaran would skip such a metric and score on nothing."""
    problems: list[Problem] = []
    if isinstance(value, dict):
        allowed = allowed_fields(WatcherMetrics, at[1:])
        if allowed:
            problems += _unknown_keys(value, at, allowed)
        for key, item in value.items():
            if key in allowed or (not allowed and at[-1] == "NodeMetricsMap"):
                problems += _metrics_fields(item, (*at, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problems += _metrics_fields(item, (*at, index))
        return problems
    if len(at) >= 3 and isinstance(at[-1], int) and at[-2] == "metrics" and isinstance(value, dict):
        for key, known in (("type", METRIC_TYPES), ("operator", METRIC_OPERATORS)):
            given = value.get(key)
            if given is not None and given not in known:
                close = [name for name in known if name and name.lower() == str(given).lower()]
                close = close or difflib.get_close_matches(str(given), [name for name in known if name], n=1)
                fix = f"did you mean `{close[0]}`? Values are case-sensitive" if close else ""
                problems.append(
                    (
                        _render((*at, key)),
                        f"{given!r} is not a load-watcher metric {key}",
                        fix or f"use one of {', '.join(repr(name) for name in known)}",
                    )
                )
    return problems


def _unknown_keys(value: dict[str, Any], at: tuple[str | int, ...], allowed: Sequence[str]) -> list[Problem]:
    """Keys not among `allowed`, each with the config loader's suggestion."""
    return [
        (
            _render((*at, str(key))),
            "unknown field",
            suggest_field(str(key), at, list(allowed), None).text,
        )
        for key in value
        if key not in allowed
    ]


def _render(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _number(value: Any, path: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(path, field, f"expected Unix seconds (a number), got {value!r}")
    if not (math.isfinite(value) and 0 <= value <= MAX_UNIX_SECONDS):
        raise InputError(path, field, f"{value} is not a time: give Unix seconds (e.g. `date +%s`)")
    return float(value)


def _recent(value: Any, path: str, pods: Sequence[JSON], node_names: set[str]) -> list[RecentPod]:
    """``recentlyScheduled``: {pod: "NAMESPACE/NAME" of one of ``pods``, or a v1 Pod; timestamp}."""
    by_key = {_key(pod): pod for pod in pods}
    recent = []
    for index, item in enumerate(_items(value, path, "recentlyScheduled", "{pod, timestamp} entries")):
        field = f"recentlyScheduled[{index}]"
        _raise_problems(path, _unknown_keys(item, ("recentlyScheduled", index), RECENT_KEYS))
        reference = item.get("pod")
        if isinstance(reference, str):
            key = reference if "/" in reference else f"default/{reference}"
            pod = by_key.get(key)
            if pod is None:
                raise InputError(path, f"{field}.pod", f"{reference!r} is not one of the snapshot's pods")
        elif isinstance(reference, dict):
            pod = reference
            problems = check_pod(pod, f"{field}.pod")
            _check_bound(pod, f"{field}.pod", node_names, problems)
            _raise_problems(path, problems)
        else:
            raise InputError(path, f"{field}.pod", "expected NAMESPACE/NAME of one of the pods, or a v1 Pod")
        timestamp = _number(item.get("timestamp"), path, f"{field}.timestamp")
        recent.append(RecentPod(pod, str(pod["spec"]["nodeName"]), timestamp))
    return recent


def _key(pod: JSON) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"
