"""NodeResourceTopologyMatch on the local cluster: ours and upstream's binary on the same objects.

Two worlds of two tainted 16-cpu nodes each (one per scheduler), both with 2 NUMA zones
of 7950m cpu from the cluster's topology exporter. Pods bound straight to the nodes make
node `a` split (2950m free in each zone, 5900m in total) and node `b` lopsided (950m and
3950m, 4900m in total), so a Guaranteed 3-cpu pod fits `a` by node totals but only `b` by
NUMA zone. Each case is run by our scheduler and by kube-scheduler with scheduler-plugins
v0.34.7; their placements and their NodeResourceTopologyMatch scores (upstream's -v=10
"Plugin scored node" lines, ours from the plugin run on the same Node and
NodeResourceTopology objects, read back from the API server) must agree; `secsched score`
over a snapshot of the cluster explains the NUMA decisions in its notes.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.pluginapi import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.plugins.noderesourcetopology import fingerprint
from secondary_scheduler.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import NodeShape, create_nodes, is_ready, node_manifest
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, SchedulerRun, start_scheduler

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
NRTS = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
WORLD = "secsched.io/numa-world"
TAINT = {"key": "secsched.io/numa-test", "value": "true", "effect": "NoSchedule"}
STRATEGIES = ("LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes")
SCORED = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="NodeResourceTopologyMatch" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)'
)
PREBOUND = {"a": ("5", "5"), "b": ("7", "4")}
"""Per node role: the cpus of the Guaranteed pods bound there before the cases."""


def profile_name(who: str, strategy: str) -> str:
    return f"nrt-{who}-{strategy.lower()}"


def config(who: str) -> str:
    """One profile per scoring strategy, NodeResourceTopologyMatch at filter, score and reserve."""
    profiles = []
    for strategy in STRATEGIES:
        profiles.append(
            {
                "schedulerName": profile_name(who, strategy),
                "plugins": {
                    "filter": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
                    "score": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
                    "reserve": {"enabled": [{"name": "NodeResourceTopologyMatch"}]},
                },
                "pluginConfig": [
                    {"name": "NodeResourceTopologyMatch", "args": {"scoringStrategy": {"type": strategy}}}
                ],
            }
        )
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"qps": 100, "burst": 200},
            "profiles": profiles,
        },
        sort_keys=False,
    )


def world_nodes(who: str) -> dict[str, str]:
    return {role: f"numa-{who}-{role}" for role in ("a", "b")}


def guaranteed(
    name: str, cpu: str, who: str, scheduler: str = "", node: str = "", memory: str = "1Gi"
) -> JSON:
    resources = {"cpu": cpu, "memory": memory}
    spec: JSON = {
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": resources, "limits": dict(resources)},
            }
        ],
        "tolerations": [{**TAINT, "operator": "Equal"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": WORLD, "operator": "In", "values": [who]}]}
                    ]
                }
            }
        },
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def zones_available(api: ApiClient, node: str) -> list[str]:
    nrt = await api.get(f"{NRTS}/{node}")
    return [
        next(item["available"] for item in zone["resources"] if item["name"] == "cpu")
        for zone in nrt["zones"]
    ]


async def settled(api: ApiClient, nodes: list[str]) -> None:
    """Until each node's NodeResourceTopology signs exactly the pods running there (exporter caught up)."""

    async def check() -> bool:
        pods = (await api.list_all("/api/v1/pods"))["items"]
        for node in nodes:
            running = [
                (pod["metadata"]["namespace"], pod["metadata"]["name"])
                for pod in pods
                if pod["spec"].get("nodeName") == node
                and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            ]
            try:
                nrt = await api.get(f"{NRTS}/{node}")
            except ApiError:
                return False
            published = {a["name"]: a["value"] for a in nrt.get("attributes") or []}
            if published.get(fingerprint.ATTRIBUTE) != fingerprint.sign(running):
                return False
        return True

    await wait_for(
        check, f"the topology exporter to account for the pods on {nodes}", timeout=30, interval=0.3
    )


@pytest.fixture(scope="module")
async def worlds(cluster: LocalCluster) -> AsyncIterator[dict[str, dict[str, str]]]:
    """Both worlds' nodes, tainted, labelled and Ready; deleted afterwards (their NRTs go with them)."""
    manifests = []
    names = {who: world_nodes(who) for who in ("ours", "upstream")}
    for who, nodes in names.items():
        for name in nodes.values():
            manifest = node_manifest(name, NodeShape(numa_zones=2), "zone-a")
            manifest["metadata"]["labels"][WORLD] = who
            manifest["spec"]["taints"] = [TAINT]
            manifests.append(manifest)
    async with cluster.api() as api:
        await create_nodes(api, manifests)

        async def ready() -> bool:
            nodes = (await api.list_all("/api/v1/nodes"))["items"]
            wanted = {m["metadata"]["name"] for m in manifests}
            return wanted <= {n["metadata"]["name"] for n in nodes if is_ready(n)}

        await wait_for(ready, "the NUMA test nodes to be Ready", timeout=60, interval=0.3)
        try:
            yield names
        finally:
            for manifest in manifests:
                try:
                    await api.delete(f"/api/v1/nodes/{manifest['metadata']['name']}")
                except ApiError as error:
                    if not error.not_found:
                        raise


@pytest.fixture(scope="module")
def schedulers(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SchedulerRun]]:
    directory = tmp_path_factory.mktemp("nrt-schedulers")
    runs: dict[str, SchedulerRun] = {}
    try:
        runs["ours"] = start_scheduler(OURS, config("ours"), cluster.kubeconfig, directory, name="ours")
        runs["upstream"] = start_scheduler(
            UPSTREAM,
            config("upstream"),
            cluster.kubeconfig,
            directory,
            name="upstream",
            extra_args=("--v=10",),
        )
        yield runs
    finally:
        for run in runs.values():
            run.stop()


@pytest.fixture(scope="module")
async def prebound(cluster: LocalCluster, worlds: dict[str, dict[str, str]]) -> AsyncIterator[str]:
    """A namespace with the pods bound straight to the nodes that split `a` and unbalance `b`."""
    namespace = "nrt-prebound"
    async with cluster.api() as api:
        try:
            await api.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
        except ApiError as error:
            if not error.conflict:
                raise
        for who, nodes in worlds.items():
            for role, cpus in PREBOUND.items():
                for index, cpu in enumerate(cpus):
                    # one after the other, so the exporter admits them in this order (as a kubelet would)
                    pod = guaranteed(f"{who}-{role}-{index}", cpu, who, node=nodes[role])
                    await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)
                    await settled(api, [nodes[role]])
        try:
            yield namespace
        finally:
            await api.delete(f"/api/v1/namespaces/{namespace}")


async def test_the_exporter_publishes_zones_and_follows_bound_pods(
    api: ApiClient, worlds: dict[str, dict[str, str]], prebound: str
) -> None:
    nrt = await api.get(f"{NRTS}/{worlds['ours']['a']}")
    attributes = {item["name"]: item["value"] for item in nrt["attributes"]}
    assert attributes["topologyManagerPolicy"] == "single-numa-node"
    assert attributes["topologyManagerScope"] == "container"
    assert [zone["name"] for zone in nrt["zones"]] == ["node-0", "node-1"]
    assert nrt["metadata"]["ownerReferences"][0]["kind"] == "Node"
    cpu = [next(i for i in zone["resources"] if i["name"] == "cpu") for zone in nrt["zones"]]
    assert [(item["capacity"], item["allocatable"]) for item in cpu] == [("8", "7950m"), ("8", "7950m")]
    for who in ("ours", "upstream"):
        assert await zones_available(api, worlds[who]["a"]) == ["2950m", "2950m"]
        assert await zones_available(api, worlds[who]["b"]) == ["950m", "3950m"]


async def test_a_guaranteed_pod_avoids_the_node_whose_free_cpus_are_split(
    api: ApiClient,
    worlds: dict[str, dict[str, str]],
    prebound: str,
    namespace: str,
    schedulers: dict[str, SchedulerRun],
) -> None:
    placed: dict[str, str] = {}
    for who in ("ours", "upstream"):
        pod = guaranteed(f"numa-{who}", "3", who, scheduler=profile_name(who, "LeastAllocated"))
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    async def bound() -> dict[str, str] | None:
        pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
        nodes = {pod["metadata"]["name"]: pod["spec"].get("nodeName") for pod in pods}
        return nodes if all(nodes.values()) and len(nodes) == 2 else None

    nodes = await wait_for(bound, "both NUMA pods to be bound", timeout=30, interval=0.3)
    for who in ("ours", "upstream"):
        placed[who] = next(role for role, name in worlds[who].items() if name == nodes[f"numa-{who}"])
    print(
        f"\nGuaranteed 3-cpu pod placed: ours -> node {placed['ours']}, upstream -> node {placed['upstream']}"
    )
    assert placed == {"ours": "b", "upstream": "b"}
    for who in ("ours", "upstream"):
        await settled(api, [worlds[who]["b"]])
        assert await zones_available(api, worlds[who]["b"]) == ["950m", "950m"]

    # now no zone anywhere has 3 cpus: both refuse with upstream's reason
    for who in ("ours", "upstream"):
        pod = guaranteed(f"numa-{who}-2", "3", who, scheduler=profile_name(who, "LeastAllocated"))
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    async def refused() -> dict[str, str] | None:
        events = (await api.list_all(f"/api/v1/namespaces/{namespace}/events"))["items"]
        found = {
            event["involvedObject"]["name"]: event["message"]
            for event in events
            if event.get("reason") == "FailedScheduling" and event["involvedObject"]["name"].endswith("-2")
        }
        return found if len(found) == 2 else None

    messages = await wait_for(refused, "both to report FailedScheduling", timeout=30, interval=0.5)
    print(f"refusals: {messages}")
    for message in messages.values():
        assert "2 node(s) had untolerated taint" in message or "cannot align container" in message
        assert "cannot align container" in message


def secsched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secondary_scheduler.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_scores_equal_upstreams_for_every_strategy(
    cluster: LocalCluster,
    api: ApiClient,
    worlds: dict[str, dict[str, str]],
    prebound: str,
    namespace: str,
    schedulers: dict[str, SchedulerRun],
    tmp_path: Path,
) -> None:
    upstream_nodes = worlds["upstream"]
    role_of = {name: role for role, name in upstream_nodes.items()}
    report: dict[str, dict[str, tuple[int, int]]] = {}

    async def only_prebound() -> bool:
        """Pods an earlier test left on these nodes are gone (their namespace is deleted lazily)."""
        pods = (await api.list_all("/api/v1/pods"))["items"]
        return all(
            pod["metadata"]["namespace"] in (prebound, namespace)
            for pod in pods
            if pod["spec"].get("nodeName") in role_of
        )

    await wait_for(only_prebound, "earlier tests' pods to leave the upstream nodes", timeout=60, interval=0.5)
    for index, strategy in enumerate(STRATEGIES):
        await settled(api, list(upstream_nodes.values()))
        pod = guaranteed(
            f"score-{index}", "1", "upstream", scheduler=profile_name("upstream", strategy), memory="2Gi"
        )
        pod["metadata"]["namespace"] = namespace
        ours = await our_scores(api, list(upstream_nodes.values()), strategy, pod)
        ours = {role_of[node]: score for node, score in ours.items()}
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)
        key = f"{namespace}/score-{index}"

        async def upstream_scores(key: str = key, ours: dict[str, int] = ours) -> dict[str, int] | None:
            found = {
                role_of[m["node"]]: int(m["score"])
                for m in SCORED.finditer(schedulers["upstream"].log.read_text(errors="replace"))
                if m["pod"] == key
            }
            return found if len(found) == len(ours) else None

        theirs = await wait_for(upstream_scores, f"upstream's scores of {key}", timeout=30, interval=0.3)
        report[strategy] = {role: (ours[role], theirs[role]) for role in sorted(ours)}
        await wait_for(partial(_bound, api, key), f"{key} to be bound", timeout=30, interval=0.3)
    print("\nNodeResourceTopologyMatch scores (ours, upstream) per node:")
    for strategy, per_node in report.items():
        print(f"  {strategy}: {per_node}")
    assert all(o == u for per_node in report.values() for o, u in per_node.values()), report


async def our_scores(api: ApiClient, nodes: list[str], strategy: str, pod: JSON) -> dict[str, int]:
    """Our plugin's scores of ``pod`` over the very Node and NodeResourceTopology objects upstream reads."""
    handle = Handle()
    plugin = NodeResourceTopologyMatch.build({"scoringStrategy": {"type": strategy}}, handle)
    handle.informers.fill([await api.get(f"{NRTS}/{node}") for node in nodes])
    table = NodeTable.from_objects([await api.get(f"/api/v1/nodes/{node}") for node in nodes], [])
    slots = table.active_slots()
    scores = plugin.score(CycleState(), PodInfo.from_pod(pod), table, slots)
    return {
        table.names[slot]: int(score) for slot, score in zip(slots.tolist(), scores.tolist(), strict=True)
    }


async def _bound(api: ApiClient, key: str) -> bool:
    namespace, name = key.split("/")
    pod = await api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return bool(pod["spec"].get("nodeName"))


async def test_the_notes_explain_numa_decisions(
    cluster: LocalCluster, worlds: dict[str, dict[str, str]], prebound: str, tmp_path: Path
) -> None:
    config_file = tmp_path / "ours.yaml"
    config_file.write_text(config("ours"))
    snapshot = tmp_path / "snapshot.yaml"
    taken = secsched(
        "snapshot",
        f"--config={config_file}",
        f"--kubeconfig={cluster.kubeconfig}",
        f"--node-selector={WORLD}=ours",
        "--no-metrics",
        "-o",
        str(snapshot),
    )
    assert taken.returncode == 0, taken.stderr
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(
        yaml.safe_dump(guaranteed("why", "2", "ours", scheduler=profile_name("ours", "LeastAllocated")))
    )
    shown = secsched("score", f"--config={config_file}", f"--snapshot={snapshot}", f"--pod={pod_file}")
    assert shown.returncode == 0, shown.stderr
    assert "NUMA" in shown.stdout, shown.stdout
    await asyncio.sleep(0)
