"""NodeResourceTopology objects, nodes and pods for the NodeResourceTopologyMatch unit tests."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def zone(numa: int, costs: dict[int, int] | None = None, **available: str) -> JSON:
    """A NUMA zone ``node-<numa>`` with these available quantities (cpu=..., memory=...)."""
    return {
        "name": f"node-{numa}",
        "type": "Node",
        "costs": [{"name": f"node-{other}", "value": value} for other, value in (costs or {}).items()],
        "resources": [
            {"name": name.replace("_", "-"), "capacity": q, "allocatable": q, "available": q}
            for name, q in available.items()
        ],
    }


def nrt(node: str, zones: list[JSON], policy: str = "single-numa-node", scope: str = "container") -> JSON:
    attributes = [
        {"name": "topologyManagerPolicy", "value": policy},
        {"name": "topologyManagerScope", "value": scope},
    ]
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "zones": zones,
        "attributes": attributes,
    }


def node(name: str, cpu: str = "16", memory: str = "64Gi", **extra: str) -> JSON:
    allocatable = {
        "cpu": cpu,
        "memory": memory,
        "pods": "110",
        **{k.replace("_", "-"): v for k, v in extra.items()},
    }
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def container(name: str, cpu: str | None, memory: str | None, guaranteed: bool = True, **extra: str) -> JSON:
    requests = {
        k.replace("_", "-"): v for k, v in {"cpu": cpu, "memory": memory, **extra}.items() if v is not None
    }
    resources: JSON = {"requests": requests}
    if guaranteed:
        resources["limits"] = dict(requests)
    return {"name": name, "image": "pause", "resources": resources}


def pod(
    name: str, *containers: JSON, init: tuple[JSON, ...] = (), namespace: str = "ns", uid: str = ""
) -> JSON:
    spec: JSON = {"containers": list(containers), "schedulerName": "secondary-scheduler"}
    if init:
        spec["initContainers"] = list(init)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"},
        "spec": spec,
    }


def guaranteed(name: str, cpu: str, memory: str = "1Gi", **extra: str) -> JSON:
    return pod(name, container("app", cpu, memory, True, **extra))
