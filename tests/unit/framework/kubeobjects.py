"""Builders for the Node and Pod JSON the API returns, and a profile like kube-scheduler's default.

Shared by the framework and plugin tests (imported as ``tests.unit.framework.kubeobjects``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from secondary_scheduler.framework import Framework, Handle, NodeTable, PodInfo, ProfileSpec
from secondary_scheduler.plugins.registry import in_tree_registry

Json = dict[str, Any]


def make_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str | int = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Json] = (),
    unschedulable: bool = False,
    images: Sequence[Json] = (),
    allocatable: Mapping[str, str | int] | None = None,
) -> Json:
    spec: Json = {"taints": list(taints)} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(allocatable or {})},
            "images": list(images),
        },
    }


def container(
    name: str = "app",
    *,
    requests: Mapping[str, str | int] | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    ports: Sequence[Json] = (),
    restart_policy: str | None = None,
) -> Json:
    item: Json = {"name": name, "image": image}
    if requests is not None:
        item["resources"] = {"requests": dict(requests)}
    if ports:
        item["ports"] = list(ports)
    if restart_policy:
        item["restartPolicy"] = restart_policy
    return item


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    requests: Mapping[str, str | int] | None = None,
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    containers: Sequence[Json] | None = None,
    **spec_fields: Any,
) -> Json:
    """A pod with one container requesting ``requests`` (or the given ``containers``); extra
    keyword arguments are camelCase ``spec`` fields (tolerations, affinity, nodeSelector...)."""
    spec: Json = {
        "containers": list(containers) if containers is not None else [container(requests=requests)]
    }
    if node_name:
        spec["nodeName"] = node_name
    spec.update(spec_fields)
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": dict(labels or {}),
        },
        "spec": spec,
    }


def pod_info(name: str, **fields: Any) -> PodInfo:
    return PodInfo.from_pod(make_pod(name, **fields))


DEFAULT_PLUGINS: Mapping[str, Sequence[tuple[str, int]]] = {
    "queueSort": [("PrioritySort", 0)],
    "preEnqueue": [("SchedulingGates", 0)],
    "preFilter": [
        ("NodeAffinity", 0),
        ("NodePorts", 0),
        ("NodeResourcesFit", 0),
        ("PodTopologySpread", 0),
        ("InterPodAffinity", 0),
    ],
    "filter": [
        ("NodeUnschedulable", 0),
        ("NodeName", 0),
        ("TaintToleration", 0),
        ("NodeAffinity", 0),
        ("NodePorts", 0),
        ("NodeResourcesFit", 0),
        ("PodTopologySpread", 0),
        ("InterPodAffinity", 0),
    ],
    "postFilter": [("DefaultPreemption", 0)],
    "preScore": [
        ("TaintToleration", 0),
        ("NodeAffinity", 0),
        ("NodeResourcesFit", 0),
        ("PodTopologySpread", 0),
        ("InterPodAffinity", 0),
        ("NodeResourcesBalancedAllocation", 0),
    ],
    "score": [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ],
    "bind": [("DefaultBinder", 0)],
}
"""kube-scheduler 1.34's default profile, restricted to the plugins implemented here."""


def default_profile(**fields: Any) -> ProfileSpec:
    return ProfileSpec(scheduler_name="default-scheduler", plugins=DEFAULT_PLUGINS, **fields)


def default_framework(handle: Handle | None = None, **fields: Any) -> Framework:
    return Framework(default_profile(**fields), in_tree_registry(), handle or Handle())


def table_of(nodes: Sequence[Json], pods: Sequence[Json] = ()) -> NodeTable:
    return NodeTable.from_objects(nodes, pods)
