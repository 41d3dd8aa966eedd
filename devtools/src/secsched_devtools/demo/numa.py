"""The telco scene: a NUMA-pinned CNF, and a node with enough CPUs in total but not in one zone.

A DPDK/SR-IOV CNF runs as a Guaranteed pod on nodes whose kubelet has the Topology Manager
policy single-numa-node: its exclusive CPUs must all come from one NUMA zone, or the kubelet
rejects the pod after the scheduler bound it (TopologyAffinityError) and the CNF never
starts. Two 32-core nodes (2 zones of ~16 cores) form the CNF pool; other Guaranteed pods
already run there:

- node "split": two 10-core pods, one per zone: ~12 cores free in total, ~6 in each zone;
- node "packed": a 15-core and an 8-core pod: ~9 cores free in total, ~8 in its second zone.

The CNF asks for 7 cores. kube-scheduler's default profile scores by free room and picks
"split", where no zone can hold it. NodeResourceTopologyMatch reads the NodeResourceTopology
objects the topology exporter publishes and picks "packed".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.demo.workload import SECONDARY_SCHEDULER

POOL_LABEL = "demo.secsched.io/cnf-pool"
NRT_PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
CNF_CORES = 7
SPLIT_FILLERS = (10, 10)
"""Cores of the pods already on the split node: one per zone."""
PACKED_FILLERS = (15, 8)
"""Cores of the pods already on the packed node: the first zone nearly full, 8 left in the second."""
POOL_CORES = 32

NRT_PROFILE = """\
    plugins:
      filter:
        enabled:
          - name: NodeResourceTopologyMatch
      score:
        enabled:
          - name: NodeResourceTopologyMatch
    pluginConfig:
      - name: NodeResourceTopologyMatch
        args:
          scoringStrategy:
            type: LeastAllocated
"""
"""Profile lines enabling NodeResourceTopologyMatch at filter and score, as scheduler-plugins documents it."""

Progress = Callable[[str], None]


@dataclass
class NumaResult:
    label: str
    split_node: str
    packed_node: str
    node: str = ""
    """Where the CNF was bound ("" if it was not)."""
    zone_free: dict[str, list[int]] | None = None
    """Node -> free millicores per NUMA zone, as the exporter published them when the CNF arrived."""
    message: str = ""
    """The FailedScheduling message, if the CNF was not bound."""

    @property
    def admitted(self) -> bool:
        """Whether a kubelet with single-numa-node would admit the CNF where it was bound."""
        free = (self.zone_free or {}).get(self.node, [])
        return any(milli >= CNF_CORES * 1000 for milli in free)

    def verdict(self) -> str:
        if not self.node:
            return f"not bound: {self.message}"
        role = "split" if self.node == self.split_node else "packed" if self.node == self.packed_node else "?"
        outcome = "kubelet admits it" if self.admitted else "kubelet rejects it: TopologyAffinityError"
        return f"{self.node} ({role}): {outcome}"


def guaranteed_pod(name: str, cores: int, node: str | None = None) -> dict[str, Any]:
    """A Guaranteed pod (requests = limits, whole cores): the kubelet pins its CPUs to one zone."""
    resources = {"cpu": str(cores), "memory": "2Gi"}
    spec: dict[str, Any] = {
        "schedulerName": SECONDARY_SCHEDULER,
        "containers": [
            {
                "name": "dpdk",
                "image": "example.com/cnf/dpdk-app:1",
                "resources": {"requests": resources, "limits": resources},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {POOL_LABEL: "true"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "cnf"}},
        "spec": spec,
    }


def zone_free_cpu(topology: dict[str, Any]) -> list[int]:
    """Free millicores of each NUMA zone of a NodeResourceTopology."""
    free = []
    for zone in topology.get("zones") or []:
        for resource in zone.get("resources") or []:
            if resource.get("name") == "cpu":
                free.append(milli_value(resource.get("available", "0")))
    return free


async def pool_nodes(api: ApiClient) -> tuple[str, str]:
    """The two largest nodes become the CNF pool (labelled): (split, packed)."""
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    large = sorted(
        (node for node in nodes if milli_value(node["status"]["capacity"]["cpu"]) >= POOL_CORES * 1000),
        key=lambda node: node["metadata"]["name"],
    )
    if len(large) < 2:
        raise RuntimeError(f"the telco scene needs two {POOL_CORES}-core nodes; the cluster has {len(large)}")
    split, packed = (node["metadata"]["name"] for node in large[:2])
    for name in (split, packed):
        await api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {POOL_LABEL: "true"}}})
    return split, packed


async def _published(api: ApiClient, nodes: tuple[str, ...]) -> dict[str, list[int]] | None:
    """Each node's free cpu per zone once the exporter has taken the fillers into account."""
    free = {}
    for node in nodes:
        topology = await api.get(f"{NRT_PATH}/{node}")
        free[node] = zone_free_cpu(topology)
    settled = all(max(zones, default=POOL_CORES * 1000) < POOL_CORES * 500 for zones in free.values())
    return free if settled else None


async def run_numa_scene(api: ApiClient, namespace: str, progress: Progress, *, label: str) -> NumaResult:
    split, packed = await pool_nodes(api)
    result = NumaResult(label, split, packed)
    await ensure_namespace(api, namespace)
    pods = f"/api/v1/namespaces/{namespace}/pods"
    for node, fillers in ((split, SPLIT_FILLERS), (packed, PACKED_FILLERS)):
        for index, cores in enumerate(fillers):
            await api.create(pods, guaranteed_pod(f"running-{node}-{index}", cores, node))
            await asyncio.sleep(0.5)  # the exporter admits pods in the order it sees them
    progress(f"{label}: waiting for the topology exporter to publish the running pods' zones")
    result.zone_free = await wait_for(
        lambda: _published(api, (split, packed)), "the NodeResourceTopologies to show the running pods", 60
    )
    await api.create(pods, guaranteed_pod("cnf", CNF_CORES))
    progress(f"{label}: the {CNF_CORES}-core CNF submitted")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pod = await api.get(f"{pods}/cnf")
        result.node = pod["spec"].get("nodeName") or ""
        if result.node:
            return result
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                result.message = condition.get("message", "")
        await asyncio.sleep(0.5)
    return result
