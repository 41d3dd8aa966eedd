"""Micro-benchmark: Score per pod at N nodes, LoadAwarePacking against TargetLoadPacking (ours).

Both plugins score every node of an in-memory NodeTable from one Prometheus-shaped snapshot
(15-minute mean and stddev per node), the way the scheduler calls them; after each pod the
pod is placed on the best node (assumed), so both carry a growing set of pods not yet in the
metrics, as in a burst. Only the Score call is timed. Run from the repository root:

    .venv/bin/python -m bench.loadaware_score --nodes 5000 --pods 300 --repeats 5

On a shared machine the load moves both figures by tens of percent from one minute to the next:
``--repeats`` runs both plugins that many times in one process, alternating which goes first,
prints every run and then each plugin's median of its runs' medians and the ratio per run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.framework.interface import ScorePlugin
from secondary_scheduler.plugins.registry import in_tree_registry
from secondary_scheduler.plugins.trimaran.providers.static import StaticProvider
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

NOW = 1_700_000_000
PROVIDER = {"metricProvider": {"type": "Prometheus", "address": "http://prom:9090"}}
ARGS: dict[str, dict[str, Any]] = {
    "TargetLoadPacking": {**PROVIDER, "targetUtilization": 70, "defaultRequestsMultiplier": "1"},
    "LoadAwarePacking": {**PROVIDER, "targetUtilization": 70},
}


def cluster(nodes: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], WatcherMetrics]:
    rng = random.Random(seed)
    node_objects, pods, metrics = [], [], {}
    for index in range(nodes):
        name = f"node-{index}"
        cores = rng.choice([16, 32, 64])
        resources = {"cpu": str(cores), "memory": f"{cores * 4}Gi"}
        node_objects.append(
            {"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": resources}}
        )
        mean = rng.uniform(5, 80)
        metrics[name] = {
            "metrics": [
                {"name": "c", "type": "CPU", "operator": "AVG", "rollup": "15m", "value": mean},
                {"name": "c", "type": "CPU", "operator": "STD", "rollup": "15m", "value": rng.uniform(0, 8)},
                {"name": "m", "type": "Memory", "operator": "AVG", "rollup": "15m", "value": mean * 0.6},
            ]
        }
        for pod_index in range(2):
            pods.append(vm(f"{name}-{pod_index}", rng.choice(["small", "medium", "large"]), name))
    snapshot = WatcherMetrics.parse(
        {
            "timestamp": NOW,
            "window": {"duration": "15m", "start": NOW - 900, "end": NOW},
            "source": "Prometheus",
            "data": {"NodeMetricsMap": metrics},
        }
    )
    return node_objects, pods, snapshot


def vm(name: str, flavor: str, node: str = "") -> dict[str, Any]:
    vcpus = {"small": 1, "medium": 2, "large": 4}[flavor]
    pod: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "vms", "uid": name, "labels": {"kubevirt.io/size": flavor}},
        "spec": {
            "containers": [
                {
                    "name": "compute",
                    "resources": {
                        "requests": {"cpu": f"{vcpus * 100}m", "memory": f"{vcpus * 2}Gi"},
                        "limits": {"cpu": str(vcpus)},
                    },
                }
            ]
        },
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2023-01-01T00:00:00Z"}
            ]
        }
    return pod


async def measure(plugin_name: str, nodes: int, pods: int, seed: int) -> list[float]:
    """Seconds per Score call, one per pod."""
    node_objects, bound, snapshot = cluster(nodes, seed)
    table = NodeTable.from_objects(node_objects, bound)
    registry = CollectorRegistry()
    services = TrimaranServices(
        registry=registry, clock=lambda: float(NOW + 5), provider_factory=lambda _: StaticProvider(snapshot)
    )
    handle = Handle(metrics_registry=registry)
    handle.register_service(SERVICE, services)
    plugin_class = in_tree_registry()[plugin_name]
    plugin = plugin_class(validated_args(plugin_class, ARGS[plugin_name]), handle)
    assert isinstance(plugin, ScorePlugin)
    await services.start()
    slots = table.active_slots()
    rng = random.Random(seed + 1)
    timings = []
    for index in range(pods + 20):  # the first 20 warm caches up and are not counted
        info = PodInfo.from_pod(vm(f"new-{index}", rng.choice(["small", "medium", "large"])))
        state = CycleState()
        start = time.perf_counter()
        scores = plugin.score(state, info, table, slots)
        elapsed = time.perf_counter() - start
        if index >= 20:
            timings.append(elapsed)
        table.add_pod(info, table.names[int(slots[int(np.argmax(scores))])])
    await services.stop()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=1, help="runs of both plugins, alternating")
    options = parser.parse_args()
    if options.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {options.repeats}")
    print(f"Score per pod at {options.nodes} nodes, {options.pods} pods (each assumed on its best node)")
    print("| run | plugin | median µs | p90 µs | mean µs |")
    print("| ---: | :--- | ---: | ---: | ---: |")
    medians: dict[str, list[float]] = {name: [] for name in ARGS}
    for run in range(1, options.repeats + 1):
        names = list(ARGS) if run % 2 else list(reversed(ARGS))
        for name in names:
            timings = asyncio.run(measure(name, options.nodes, options.pods, options.seed))
            micros = sorted(t * 1e6 for t in timings)
            p90, mean = micros[int(0.9 * (len(micros) - 1))], statistics.fmean(micros)
            medians[name].append(statistics.median(micros))
            print(f"| {run} | {name} | {medians[name][-1]:.0f} | {p90:.0f} | {mean:.0f} |")
    ours, theirs = medians["LoadAwarePacking"], medians["TargetLoadPacking"]
    ratios = [mine / other for mine, other in zip(ours, theirs, strict=True)]
    print(
        f"median of the runs' medians: TargetLoadPacking {statistics.median(theirs):.0f} µs, "
        f"LoadAwarePacking {statistics.median(ours):.0f} µs; LoadAwarePacking / TargetLoadPacking per run: "
        f"{', '.join(f'{ratio:.2f}' for ratio in ratios)} (median {statistics.median(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
