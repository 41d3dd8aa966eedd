"""The load-aware plugins on a real cluster, fed by a real Prometheus.

Each test derives the placement it expects from Trimaran's formulas (written out here
from the spec, not taken from our plugin code) applied to what Prometheus answers, then
checks that the scheduler did exactly that. The cluster is this module's own: its nodes'
load is fixed from the start (no noise unless asked, pods add no load), so the 15-minute
averages Trimaran reads are the loads set here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import single_plugin_config
from secsched_devtools.demo.workload import SIZES, virt_launcher
from tests.cluster.schedulerproc import fixed_load_cluster, place, pod_manifest, running_scheduler

pytestmark = pytest.mark.cluster

# Seed 000's config block verbatim (tests/unit/config checks it against shared/seeds where that is present).
SEED_000 = Path(__file__).resolve().parents[1] / "unit" / "config" / "fixtures" / "seed000_v1beta3.yaml"
CAPACITY_MILLIS = 16000  # every node: 16 cores
TLP_NODES = {"kwok-node-0": 0.10, "kwok-node-1": 0.30, "kwok-node-2": 0.50, "kwok-node-3": 0.65}
LVRB_NODES = {"kwok-node-4": (0.30, 0.0), "kwok-node-5": (0.20, 0.30), "kwok-node-6": (0.42, 0.0)}
LROC_NODES = ("kwok-node-7", "kwok-node-8")
HOT_NODE = "kwok-node-9"


def starting_load() -> dict[str, dict[str, float]]:
    """Each of the ten nodes' load: the TLP, LVRB and LROC tests' own nodes, and one hot node."""
    nodes: dict[str, dict[str, float]] = {
        name: {"cpu": cpu, "memory": 0.2} for name, cpu in TLP_NODES.items()
    }
    nodes |= {name: {"cpu": cpu, "memory": 0.2, "noise": noise} for name, (cpu, noise) in LVRB_NODES.items()}
    nodes |= {name: {"cpu": 0.40, "memory": 0.3} for name in LROC_NODES}
    nodes[HOT_NODE] = {"cpu": 0.95, "memory": 0.5}
    return nodes


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """This module's own cluster, in place of the session's: `api` and `namespace` use it."""
    with fixed_load_cluster("load", starting_load()) as local:
        yield local


def go_round(value: float) -> int:
    """Go's math.Round for the non-negative values scores take: halves away from zero."""
    return math.floor(value + 0.5)


def pinned(name: str, nodes: list[str], cpu: str, **extra: Any) -> dict[str, Any]:
    """A pod for our scheduler that may only go to `nodes` (each test has its own)."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}
                        ]
                    }
                ]
            }
        }
    }
    pod = pod_manifest(name, cpu=cpu, memory="1Gi", affinity=affinity)
    pod["spec"]["containers"][0]["resources"].update(extra)
    return pod


def tlp_score(predicted: float, target: int) -> int:
    if predicted > target:
        return 0 if predicted > 100 else go_round(target * (100 - predicted) / (100 - target))
    return go_round((100 - target) * predicted / target + target)


async def test_target_load_packing_fills_nodes_to_the_target_before_going_over(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    target, pod_millis = 70, 1600  # each pod predicts 10 % of a node
    config = single_plugin_config(
        "TargetLoadPacking",
        cluster.prometheus_url,
        f'          targetUtilization: {target}\n          defaultRequestsMultiplier: "1"\n',
    )
    percent = {
        node: value * 100
        for node, value in cluster.query("avg_over_time(instance:node_cpu:ratio[15m])").items()
        if node in TLP_NODES
    }
    missing = dict.fromkeys(TLP_NODES, 0)
    placements: list[tuple[str, str]] = []
    with running_scheduler(cluster.kubeconfig, tmp_path, config):
        for index in range(8):
            predicted = {
                node: 100
                * (percent[node] / 100 * CAPACITY_MILLIS + pod_millis + missing[node])
                / CAPACITY_MILLIS
                for node in TLP_NODES
            }
            scores = {node: tlp_score(value, target) for node, value in predicted.items()}
            best = max(scores.values())
            expected = {node for node, score in scores.items() if score == best}
            node = await place(api, namespace, pinned(f"tlp-{index}", list(TLP_NODES), "1600m"))
            assert node in expected, (index, node, scores)
            under_target = [n for n, value in predicted.items() if value <= target]
            if under_target:  # packing: never push a node over the target while one can still take it
                assert predicted[node] <= target, (index, node, predicted)
            placements.append((node, f"{predicted[node]:.0f}%"))
            missing[node] += pod_millis  # bound just now: not in the metrics yet, so counted as missing
    # The busiest node under the target is filled first (50 % -> 60 -> 70), then the next.
    assert [node for node, _ in placements[:2]] == ["kwok-node-2", "kwok-node-2"], placements


def lvrb_score(mean: float, stdev: float, request: float, capacity: float) -> float:
    """One resource's score: (1 - (mu + sigma) / 2) * 100 with margin 1 and sensitivity 1."""
    mu = min(max((mean * capacity / 100 + request) / capacity, 0), 1)
    sigma = min(max(stdev * capacity / 100 / capacity, 0), 1)
    return (1 - (mu + sigma) / 2) * 100


async def test_load_variation_risk_balancing_evens_out_mean_plus_deviation(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    config = single_plugin_config("LoadVariationRiskBalancing", cluster.prometheus_url)

    def stats(function: str, series: str) -> dict[str, float]:
        values = cluster.query(f"{function}({series}[15m])")
        return {node: values[node] * 100 for node in LVRB_NODES}

    cpu_mean, cpu_std = (
        stats("avg_over_time", "instance:node_cpu:ratio"),
        stats("stddev_over_time", "instance:node_cpu:ratio"),
    )
    memory_mean = stats("avg_over_time", "instance:node_memory_utilisation:ratio")
    memory_std = stats("stddev_over_time", "instance:node_memory_utilisation:ratio")
    memory_capacity = 64 * 1024.0  # MiB
    # LVRB scores the pending pod's request on top of the measured load; with pods adding no
    # load here, every pod faces the same numbers.
    scores = {
        node: min(
            lvrb_score(cpu_mean[node], cpu_std[node], 2000, CAPACITY_MILLIS),
            lvrb_score(memory_mean[node], memory_std[node], 1024, memory_capacity),
        )
        for node in LVRB_NODES
    }
    best = max(scores.values())
    # Prometheus' stddev moves a little between its answer to us and to the scheduler.
    expected = {node for node, score in scores.items() if score >= best - 1.5}
    with running_scheduler(cluster.kubeconfig, tmp_path, config):
        chosen = [await place(api, namespace, pinned(f"lvrb-{i}", list(LVRB_NODES), "2")) for i in range(3)]
    assert set(chosen) <= expected, (chosen, scores)
    # The noisy node has the lowest mean, yet mean plus deviation makes it the riskiest.
    assert cpu_mean["kwok-node-5"] == min(cpu_mean.values())
    assert "kwok-node-5" not in chosen, (chosen, scores)


async def test_low_risk_over_commitment_avoids_nodes_whose_limits_are_overcommitted(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    overcommitted, safe = LROC_NODES
    # Existing pods: the same requests on both nodes, but limits far beyond capacity on one.
    for index, (node, limit) in enumerate(
        ((overcommitted, "14"), (overcommitted, "14"), (safe, "1"), (safe, "1"))
    ):
        existing = pod_manifest(f"existing-{index}", cpu="1", memory="1Gi", nodeName=node)
        existing["spec"]["containers"][0]["resources"]["limits"] = {"cpu": limit, "memory": "1Gi"}
        await api.create(f"/api/v1/namespaces/{namespace}/pods", existing)
    request, limit = 1000, 2000
    # riskLimit = (limit - capacity) / (limit - request) when the node's limits exceed capacity.
    totals = {overcommitted: (2000 + request, 28000 + limit), safe: (2000 + request, 2000 + limit)}
    risk_limit = {
        node: (lim - CAPACITY_MILLIS) / (lim - req) if lim > CAPACITY_MILLIS else 0.0
        for node, (req, lim) in totals.items()
    }
    assert risk_limit[overcommitted] > 0 == risk_limit[safe]
    config = single_plugin_config("LowRiskOverCommitment", cluster.prometheus_url)
    with running_scheduler(cluster.kubeconfig, tmp_path, config):
        # Same measured load on both nodes, so only the limit risk tells them apart.
        node = await place(
            api,
            namespace,
            pinned("lroc-0", list(LROC_NODES), "1", limits={"cpu": "2", "memory": "1Gi"}),
        )
    assert node == safe


async def test_the_seed_config_runs_unchanged_and_places_vms_by_load(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    """shared/seeds/000: the ConfigMap users create today, with only the URL and token filled in."""
    config = (
        SEED_000.read_text()
        .replace("${PROM_URL}", cluster.prometheus_url)
        .replace("${PROM_TOKEN}", "local-no-auth")
    )
    with running_scheduler(cluster.kubeconfig, tmp_path, config) as scheduler:
        nodes = [await place(api, namespace, virt_launcher(f"vm-{index}", SIZES[0])) for index in range(12)]
        log = scheduler.tail(200)
    # targetUtilization 70: the node at 95 % is never chosen while cooler nodes are free;
    # requests alone (LeastAllocated) would have rated it like any other empty node.
    assert HOT_NODE not in nodes, nodes
    assert "Traceback" not in log, log
