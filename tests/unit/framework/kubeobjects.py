"""Builders for the Node and Pod JSON the API returns, and a profile like kube-scheduler's default.

Shared by the framework and plugin tests (imported as ``tests.unit.framework.kubeobjects``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from secondary_scheduler.config import load_config
from secondary_scheduler.framework import Framework, Handle, NodeTable, PodInfo, ProfileSpec
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import in_tree_registry

JSON = dict[str, Any]


def make_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str | int = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[JSON] = (),
    unschedulable: bool = False,
    images: Sequence[JSON] = (),
    allocatable: Mapping[str, str | int] | None = None,
) -> JSON:
    spec: JSON = {"taints": list(taints)} if taints else {}
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
    ports: Sequence[JSON] = (),
    restart_policy: str | None = None,
) -> JSON:
    item: JSON = {"name": name, "image": image}
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
    containers: Sequence[JSON] | None = None,
    **spec_fields: Any,
) -> JSON:
    """A pod with one container requesting ``requests`` (or the given ``containers``); extra
    keyword arguments are camelCase ``spec`` fields (tolerations, affinity, nodeSelector...)."""
    spec: JSON = {
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


def _default_plugins() -> Mapping[str, Sequence[tuple[str, int]]]:
    """kube-scheduler 1.34's default profile as the config loader expands it (every plugin we ship)."""
    text = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: default-scheduler}]\n"
    )
    profile = load_config(text, "<defaults>", catalog=IN_TREE_CATALOG).config.profiles[0]
    return {
        str(point): [(entry.name, entry.weight) for entry in entries]
        for point, entries in profile.plugins.items()
    }


DEFAULT_PLUGINS = _default_plugins()


def default_profile(**fields: Any) -> ProfileSpec:
    return ProfileSpec(scheduler_name="default-scheduler", plugins=DEFAULT_PLUGINS, **fields)


def default_framework(handle: Handle | None = None, **fields: Any) -> Framework:
    return Framework(default_profile(**fields), in_tree_registry(), handle or Handle())


def table_of(nodes: Sequence[JSON], pods: Sequence[JSON] = ()) -> NodeTable:
    return NodeTable.from_objects(nodes, pods)
