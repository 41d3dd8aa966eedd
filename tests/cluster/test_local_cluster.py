"""The local control plane works as the rest of the project relies on it to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.podphase import TERMINAL_PHASES
from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster import processes
from secsched_devtools.cluster.loadmodel import pod_usage
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import is_ready
from tests.conftest import CLUSTER_NODES

pytestmark = pytest.mark.cluster


def pod(name: str, scheduler: str = "default-scheduler", cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "app", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}
            ],
        },
    }


async def test_nodes_are_ready_with_capacity_and_labels(api: ApiClient) -> None:
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    assert len(nodes) == CLUSTER_NODES
    for node in nodes:
        assert is_ready(node), node["metadata"]["name"]
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
        assert labels["topology.kubernetes.io/zone"].startswith("zone-")
        assert "node-role.kubernetes.io/worker" in labels
        status = node["status"]
        assert status["capacity"]["cpu"] == "16"
        assert status["allocatable"]["cpu"] == "15900m"  # capacity less the system reservation
    assert len({node["metadata"]["labels"]["topology.kubernetes.io/zone"] for node in nodes}) == 3


async def test_default_scheduler_binds_and_kwok_runs_the_pod(api: ApiClient, namespace: str) -> None:
    await api.create(f"/api/v1/namespaces/{namespace}/pods", pod("hello"))

    async def running() -> dict[str, Any] | None:
        obj = await api.get(f"/api/v1/namespaces/{namespace}/pods/hello")
        return obj if obj["status"].get("phase") == "Running" else None

    obj = await wait_for(running, "pod hello to be Running", timeout=60)
    assert obj["spec"]["nodeName"].startswith("kwok-node-")


async def test_deployment_gets_its_pod(api: ApiClient, namespace: str) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod("x")["spec"]},
        },
    }
    await api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment)

    async def available() -> int:
        obj = await api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
        return int(obj.get("status", {}).get("availableReplicas", 0)) == 2

    await wait_for(available, "deployment web to have 2 available replicas", timeout=90)


async def test_service_account_tokens_work(api: ApiClient, namespace: str) -> None:
    async def default_account() -> dict[str, Any] | None:
        listing = await api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts")
        return next((sa for sa in listing["items"] if sa["metadata"]["name"] == "default"), None)

    await wait_for(default_account, "the default ServiceAccount", timeout=30)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600},
    }
    token = await api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/default/token", request)
    assert token["status"]["token"].count(".") == 2  # a signed JWT


async def test_prometheus_serves_both_series_for_every_node(cluster: LocalCluster, api: ApiClient) -> None:
    for series in ("instance:node_cpu:ratio", "instance:node_memory_utilisation:ratio"):

        async def one_per_node(series: str = series) -> dict[str, float] | None:
            """The series once it matches the nodes the API has (a node another test just added or
            deleted shows, or goes, at the next scrape)."""
            nodes = {node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"]}
            values = cluster.query(series)
            return values if set(values) == nodes else None

        values = await wait_for(one_per_node, f"{series} for every node", timeout=30, interval=0.5)
        assert {f"kwok-node-{i}" for i in range(CLUSTER_NODES)} <= set(values)
        assert all(0.0 <= value <= 1.0 for value in values.values())
    # What upstream load-watcher asks for must answer for every node.
    for promql in (
        "avg_over_time(instance:node_cpu:ratio[15m])",
        "stddev_over_time(instance:node_cpu:ratio[15m])",
        "avg_over_time(instance:node_memory_utilisation:ratio[15m])",
        "stddev_over_time(instance:node_memory_utilisation:ratio[15m])",
    ):
        values = cluster.query(promql)
        # Over 15 minutes, nodes other tests added (and removed) may show too: the cluster's own must.
        assert {f"kwok-node-{i}" for i in range(CLUSTER_NODES)} <= set(values), promql


async def test_changed_base_load_shows_up_in_prometheus(cluster: LocalCluster, api: ApiClient) -> None:
    node, base_cpu, base_memory = "kwok-node-1", 0.83, 0.41
    cluster.set_base_load({"nodes": {node: {"cpu": base_cpu, "memory": base_memory}}})
    factor = float(cluster.load()["podFactor"])

    async def pods_cpu_share() -> float:
        """What the pods on the node add (other tests' pods may still be there, going away)."""
        pods = (await api.list_all("/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"}))["items"]
        capacity = milli_value((await api.get(f"/api/v1/nodes/{node}"))["status"]["capacity"]["cpu"])
        live = [pod for pod in pods if pod.get("status", {}).get("phase") not in TERMINAL_PHASES]
        return sum(pod_usage(pod, factor)[0] for pod in live) / capacity

    async def reached() -> tuple[float, float] | None:
        cpu = cluster.query(f'instance:node_cpu:ratio{{instance="{node}"}}').get(node, 0.0)
        memory = cluster.query(f'instance:node_memory_utilisation:ratio{{instance="{node}"}}').get(node)
        expected = min(1.0, base_cpu + await pods_cpu_share())
        if abs(cpu - expected) < 0.005 and memory is not None and memory >= base_memory:
            return cpu, expected
        return None

    try:
        # Base plus the pods' requests, as the load model says: read once the scrape shows it.
        await wait_for(reached, "the new base load in Prometheus", timeout=30, interval=0.5)
    finally:
        cluster.set_base_load({"nodes": {node: {"cpu": 0.0, "memory": 0.0}}})


def test_bad_load_update_is_refused_and_changes_nothing(cluster: LocalCluster) -> None:
    before = cluster.load()
    with pytest.raises(Exception, match="outside"):
        cluster.set_base_load({"nodes": {"kwok-node-2": {"cpu": 0.2}, "kwok-node-3": {"cpu": 1.5}}})
    assert cluster.load()["nodes"] == before["nodes"]


def test_cli_up_status_down_leaves_no_process_behind(tmp_path: Any) -> None:
    env = {**os.environ, "SECSCHED_STATE_DIR": str(tmp_path)}
    secsched = [sys.executable, "-m", "secondary_scheduler.cli", "cluster"]
    name = f"down-{os.getpid()}"
    subprocess.run([*secsched, "up", "--name", name, "--nodes", "2"], env=env, check=True, timeout=300)
    status = json.loads(
        subprocess.run(
            [*secsched, "status", "--name", name, "--json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    )
    components = status["components"]
    assert {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kwok",
        "kube-scheduler",
        "load-exporter",
        "prometheus",
    } <= set(components)
    assert all(info["running"] for info in components.values())
    records = LocalCluster.attach(name, tmp_path).records.values()
    subprocess.run([*secsched, "down", "--name", name], env=env, check=True, timeout=120)
    assert not [record.name for record in records if processes.is_running(record)]
    assert all(
        not os.path.exists(f"/proc/{record.pid}") or not processes.is_running(record) for record in records
    )
