"""LoadAwarePacking on a real cluster, fed by the local cluster's real Prometheus.

The module's own cluster: four nodes whose CPU load is fixed from the start (no noise, pods add
no load), so the 15-minute means the plugin reads are the loads set here. Ours runs as a process
with a LoadAwarePacking-only profile. The tests check the placement real usage calls for (with
pods bound since the window began counted in full), then what it does when the metrics go stale
(Prometheus stopped) and when there are none at all (a scheduler started while it is down): the
documented degradations, seen on /metrics and in the log (docs/loadaware.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import SchedulerRun, single_plugin_config
from tests.cluster.schedulerproc import fixed_load_cluster, place, pod_manifest, running_scheduler

pytestmark = pytest.mark.cluster

LOAD = {"kwok-node-0": 0.60, "kwok-node-1": 0.20, "kwok-node-2": 0.40, "kwok-node-3": 0.95}
NODES = list(LOAD)
STALENESS = 40  # seconds: above the collector's 30-s refresh, so only a source down makes it stale
PLUGIN = 'profile_plugin="LoadAwarePacking"'


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """This module's own cluster, in place of the session's: `api` and `namespace` use it."""
    with fixed_load_cluster(
        "loadaware", {name: {"cpu": cpu, "memory": 0.2} for name, cpu in LOAD.items()}
    ) as local:
        yield local


def config(prometheus_url: str, extra: str = "") -> str:
    return single_plugin_config(
        "LoadAwarePacking",
        prometheus_url,
        f'          targetUtilization: 70\n          metricsStalenessLimit: "{STALENESS}s"\n{extra}',
    )


def vm(name: str, cpu_limit: str) -> dict[str, Any]:
    """A VM launcher pod with a CPU limit (its vCPUs): what ours predicts before learning anything."""
    pod = pod_manifest(name, cpu="100m", memory="1Gi")
    pod["spec"]["containers"][0]["resources"]["limits"] = {"cpu": cpu_limit, "memory": "1Gi"}
    return pod


async def degraded(run: SchedulerRun, reason: str) -> float:
    return await asyncio.to_thread(run.metric, "secsched_loadaware_degraded_nodes", f'reason="{reason}"')


async def warning_on(api: ApiClient, namespace: str, reason: str, pod: str) -> list[tuple[str, str, str]]:
    """(pod, type, note) of the Events with ``reason`` in the namespace, once one regards ``pod``."""

    async def read() -> list[tuple[str, str, str]]:
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        items = (await api.list_all(path))["items"]
        return [
            (event["regarding"]["name"], event["type"], event.get("note", ""))
            for event in items
            if event.get("reason") == reason
        ]

    return await poll_until(
        read,
        lambda found: any(name == pod for name, _, _ in found),
        lambda found: f"no {reason} Event on {pod} yet: {found}",
        60,
        interval=0.2,
    )


async def test_it_places_by_real_usage_and_counts_pods_the_metrics_do_not_show_yet(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    means = cluster.query("avg_over_time(instance:node_cpu:ratio[15m])")
    assert {node: round(means[node], 2) for node in NODES} == LOAD
    with running_scheduler(cluster.kubeconfig, tmp_path, config(cluster.prometheus_url)) as run:
        # Every node requests nothing: requests would tie them. Real usage says kwok-node-1 (20 %):
        # 20 + 25 (the VM's 4-core limit on 16 cores) = 45 % predicted, the lowest under 70 %.
        first = await place(api, namespace, vm("vm-0", "4"))
        # The same again: kwok-node-1 now holds vm-0, which no metric shows yet (pods add no load
        # here, and a live one would take a window to show): counted in full (+ its burst margin),
        # it predicts 75 % there, over the target, so the next VM goes to kwok-node-2 (40 -> 65 %).
        second = await place(api, namespace, vm("vm-1", "4"))
        assert (first, second) == ("kwok-node-1", "kwok-node-2")
        # Set at each cycle: vm-0 was in flight when vm-1 was scored.
        assert await asyncio.to_thread(run.metric, "secsched_loadaware_inflight_pods", PLUGIN) == 1
        for reason in ("stale-held", "no-metrics-estimated", "no-metrics-unscored"):
            assert await degraded(run, reason) == 0, reason
        assert "Traceback" not in run.tail(200)


async def test_stale_then_missing_metrics_degrade_as_documented(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Runs last in the module: it stops Prometheus for good."""
    url = cluster.prometheus_url
    with running_scheduler(cluster.kubeconfig, tmp_path / "stale", config(url)) as run:
        assert await place(api, namespace, vm("fresh", "1")) == "kwok-node-1"
        assert await degraded(run, "stale-held") == 0
        await asyncio.to_thread(cluster.stop_load_metrics)

        async def age() -> float:
            return await asyncio.to_thread(run.metric, "secsched_trimaran_metrics_age_seconds")

        await poll_until(
            age, lambda seconds: seconds > STALENESS, lambda s: f"metrics age still {s:.0f}s", 120
        )
        # Stale: each node's last peak is held and every pod bound since counts in full, so the
        # placement still follows the last real readings (never a silent zero for every node).
        assert await place(api, namespace, vm("stale", "1")) == "kwok-node-1"
        assert await degraded(run, "stale-held") == len(NODES)
        log = run.tail(400)
        assert "are stale; holding each node's last peak" in log, log
        # One Warning Event, on the pod placed first on stale metrics (as kube-scheduler reports: on the pod).
        [(_, kind, note)] = await warning_on(api, namespace, "LoadMetricsStale", "stale")
        assert kind == "Warning" and "metricsStalenessLimit 40s" in note, note

    # No metrics at all: a scheduler started while Prometheus is down scores every node from its
    # pods' CPU requests x the use per request (1.5 before anything is learned), and says so.
    # kwok-node-1 holds the two VMs above (their 100m requests): every other node is lighter.
    # openingCost 0: the other nodes are empty, and the cost of opening one would outweigh the
    # 100m requests (kwok-node-1 would win with every load read as zero too, proving nothing).
    blind = config(url, "          openingCost: 0\n")
    with running_scheduler(cluster.kubeconfig, tmp_path / "missing", blind) as run:
        chosen = await place(api, namespace, vm("blind", "1"))
        assert chosen != "kwok-node-1", chosen
        assert await degraded(run, "no-metrics-estimated") == len(NODES)
        found = await warning_on(api, namespace, "LoadMetricsMissing", "blind")
        [(kind, note)] = [(kind, note) for pod, kind, note in found if pod == "blind"]
        assert kind == "Warning" and f"{len(NODES)} node(s) without a CPU reading" in note, note
        estimated = await asyncio.to_thread(run.metric, "secsched_trimaran_estimated_scores_total")
        assert estimated >= len(NODES)
        assert "Traceback" not in run.tail(400)
