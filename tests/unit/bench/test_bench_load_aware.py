"""The workloads section's load-aware class, its pure parts: the class and its pods, the nodes'
load, both schedulers' configuration, the soft measure against TargetLoadPacking's target, the
rendering, and the bench cluster's options (no Prometheus, no NUMA topology exporter)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from bench import runner
from bench.__main__ import parser
from bench.context import BenchOptions
from bench.machine import Machine
from bench.measuring import SCHEDULER_NAME
from bench.workloadclasses import (
    BY_NAME,
    CLASS_NAMES,
    EXISTING,
    LOAD_AWARE,
    LOAD_LEVELS,
    MEASURED,
    ROLE_LABEL,
    TARGET_LOAD_PACKING,
    LoadOutcome,
    Node,
    PackingArgs,
    check_placement,
    existing_manifests,
    load_class_config,
    load_outcome,
    measured_manifests,
    nodes_of,
    packing_args,
    predicted_cpu,
    starting_load,
    zones_of,
)
from bench.workloads import WorkloadsSection
from bench.workloads_report import LOAD_SCRAPE_INTERVAL, OPEN_LOOP, SATURATION
from tests.unit.bench.reportparts import load_record, run_info, workload_options

from secondary_scheduler.config.loader import load_config
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secsched_devtools.cluster.loadmodel import LoadModel
from secsched_devtools.cluster.localcluster import ClusterOptions
from secsched_devtools.cluster.nodes import NodeShape, plan_nodes
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM
from secsched_devtools.repo import example_config

JSON = dict[str, Any]
PROMETHEUS = "http://127.0.0.1:9090"


def _nodes(count: int = 12) -> list[Node]:
    return nodes_of(plan_nodes(count, NodeShape(cpu="16", memory="64Gi", pods=110), 3))


def _config(seed: str | None = None) -> str:
    return load_class_config(
        seed if seed is not None else example_config(),
        TARGET_LOAD_PACKING,
        SCHEDULER_NAME,
        5000.0,
        5000,
        "/tmp/admin.kubeconfig",
        PROMETHEUS,
    )


def _plugin_args(document: JSON, name: str) -> JSON:
    [profile] = document["profiles"]
    [entry] = [entry for entry in profile["pluginConfig"] if entry["name"] == name]
    return dict(entry["args"])


# -- the class and its pods ----------------------------------------------------------------------
def test_load_aware_is_a_default_class_after_pvc_and_parses() -> None:
    assert CLASS_NAMES.index(LOAD_AWARE) == CLASS_NAMES.index("pvc") + 1
    assert LOAD_AWARE in parser().parse_args([]).workload_classes
    assert parser().parse_args(["--workload-classes", LOAD_AWARE]).workload_classes == (LOAD_AWARE,)
    assert "TargetLoadPacking" in BY_NAME[LOAD_AWARE].what and "target 70 %" in BY_NAME[LOAD_AWARE].what


def test_its_pods_are_the_basic_ones_and_its_pre_existing_pods_are_balanced() -> None:
    nodes = _nodes(30)
    zones = zones_of(nodes)
    assert measured_manifests(LOAD_AWARE, "o1", 20, SCHEDULER_NAME, zones, seed=4) == measured_manifests(
        "basic", "o1", 20, SCHEDULER_NAME, zones, seed=4
    )
    existing = existing_manifests(LOAD_AWARE, 20, nodes, SCHEDULER_NAME, seed=3)
    assert len(existing) == 20 and all(pod["metadata"]["labels"][ROLE_LABEL] == EXISTING for pod in existing)
    assert max(Counter(pod["spec"]["nodeName"] for pod in existing).values()) == 1
    assert check_placement(existing, nodes) == []


# -- the nodes' load -------------------------------------------------------------------------------
def test_starting_load_is_a_fixed_level_per_node_without_noise_or_pod_load() -> None:
    nodes = _nodes(1200)
    load = starting_load(nodes, seed=1000)
    assert load == starting_load(nodes, seed=1000) != starting_load(nodes, seed=5000)
    assert load["podFactor"] == 0.0 and load["default"] == {"cpu": 0.0, "memory": 0.0, "noise": 0.0}
    levels = load["nodes"]
    assert set(levels) == {node.name for node in nodes}
    assert {value["cpu"] for value in levels.values()} <= set(LOAD_LEVELS)
    assert all(
        value["noise"] == 0.0 and value["memory"] == round(value["cpu"] * 0.6, 2) for value in levels.values()
    )
    hot = sum(value["cpu"] > 0.70 for value in levels.values())
    assert 0.10 < hot / len(nodes) < 0.25  # about one in six above the target
    model = LoadModel()
    model.update(load)  # the exporter takes it as is
    assert model.pod_factor == 0.0 and model.nodes[nodes[0].name].cpu == levels[nodes[0].name]["cpu"]


# -- both schedulers' configuration -----------------------------------------------------------------
def test_the_config_is_seed_000s_profile_as_deploy_ships_it_under_the_bench_name() -> None:
    text = _config()
    document = yaml.safe_load(text)
    assert document["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert document["clientConnection"] == {
        "kubeconfig": "/tmp/admin.kubeconfig",
        "qps": 5000.0,
        "burst": 5000,
    }
    [profile] = document["profiles"]
    [seed] = yaml.safe_load(example_config())["profiles"]
    assert profile == {**seed, "schedulerName": SCHEDULER_NAME, "pluginConfig": profile["pluginConfig"]}
    score = profile["plugins"]["score"]
    assert score == {
        "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
        "enabled": [{"name": TARGET_LOAD_PACKING}],
    }
    assert _plugin_args(document, TARGET_LOAD_PACKING) == {
        "defaultRequests": {"cpu": "2000m"},
        "defaultRequestsMultiplier": "1",
        "targetUtilization": 70,  # what the class's sentence and the report say
        "metricProvider": {"type": "Prometheus", "address": PROMETHEUS},
    }
    assert packing_args(text) == PackingArgs(target=70, multiplier=1.0, default_cpu=2000)
    # our scheduler reads it: TargetLoadPacking scores beside the defaults but BalancedAllocation
    [ours] = load_config(text, catalog=IN_TREE_CATALOG).config.profiles
    names = [entry.name for entry in ours.plugins[ExtensionPoint.SCORE]]
    assert TARGET_LOAD_PACKING in names and "NodeResourcesFit" in names
    assert "NodeResourcesBalancedAllocation" not in names


def _with(seed: str, plugin: str, args: JSON | None = None) -> str:
    document = yaml.safe_load(seed)
    [profile] = document["profiles"]
    profile["plugins"]["score"]["enabled"].append({"name": plugin})
    if args is not None:
        profile["pluginConfig"].append({"name": plugin, "args": args})
    return str(yaml.safe_dump(document))


def test_the_config_refuses_a_second_trimaran_plugin_on_its_own_load_watcher() -> None:
    seed = example_config()
    for args in (None, {"metricProvider": {"type": "Prometheus", "address": "${PROM_URL}"}}):
        with pytest.raises(ValueError, match="TargetLoadPacking and LoadVariationRiskBalancing"):
            _config(_with(seed, "LoadVariationRiskBalancing", args))
    served = _with(seed, "LoadVariationRiskBalancing", {"watcherAddress": "http://load-watcher:2020"})
    assert "LoadVariationRiskBalancing" in _config(served)  # a load-watcher service is fine
    bare = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- {}\n"
    with pytest.raises(ValueError, match="TargetLoadPacking"):
        _config(bare)
    assert packing_args(bare) == PackingArgs()


# -- the soft measure --------------------------------------------------------------------------------
def _pod(name: str, node: str, *, role: str | None = MEASURED, **resources: Any) -> JSON:
    labels = {ROLE_LABEL: role} if role else {}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "app", "resources": resources}]},
    }


def test_predicted_cpu_is_target_load_packings() -> None:
    args = PackingArgs(target=70, multiplier=1.5, default_cpu=2000)
    assert predicted_cpu(_pod("a", "n", limits={"cpu": "1"}, requests={"cpu": "100m"}), args) == 1000
    assert predicted_cpu(_pod("b", "n", requests={"cpu": "333m"}), args) == 500  # 499.5, half away
    assert predicted_cpu(_pod("c", "n"), args) == 2000
    with_overhead = _pod("d", "n", requests={"cpu": "100m"})
    with_overhead["spec"]["overhead"] = {"cpu": "50m"}
    assert predicted_cpu(with_overhead, args) == 200


def test_load_outcome_counts_measured_pods_on_nodes_that_end_above_the_target() -> None:
    nodes = _nodes(4)
    warm, cool, hot, idle = (node.name for node in nodes)
    load = {
        "default": {"cpu": 0.0},
        "nodes": {warm: {"cpu": 0.65}, cool: {"cpu": 0.10}, hot: {"cpu": 0.90}, idle: {"cpu": 0.30}},
    }
    pods = [
        _pod("m0", warm, requests={"cpu": "1"}),  # 65 % + 2 x 1/16 = 77.5 %: both over
        _pod("m1", warm, requests={"cpu": "1"}),
        _pod("m2", cool, requests={"cpu": "1"}),  # 16.25 %
        _pod("m3", hot, requests={"cpu": "1"}),  # over, and was before
        _pod("m4", "", requests={"cpu": "1"}),  # not bound
        _pod("x0", idle, role=EXISTING, requests={"cpu": "12"}),  # pre-existing pods add no load here
        _pod("w0", cool, role=None, requests={"cpu": "12"}),  # nor warm-up pods
    ]
    args = PackingArgs(target=70, multiplier=1.0)
    assert load_outcome(pods, nodes, load, args) == LoadOutcome(pods=4, over_target=3, hot_start=1)
    assert load_outcome(pods[2:3], nodes, load, args) == LoadOutcome(pods=1, over_target=0, hot_start=0)


# -- the report --------------------------------------------------------------------------------------
def test_the_report_describes_the_class_and_where_its_pods_went() -> None:
    options = workload_options(("basic", LOAD_AWARE))
    section = WorkloadsSection(options)
    section.records = [
        load_record(LOAD_AWARE, UPSTREAM, SATURATION, 100.0, 5, 1),
        load_record(LOAD_AWARE, OURS, SATURATION, 150.0, 2, 2),
        load_record(LOAD_AWARE, UPSTREAM, OPEN_LOOP, math.nan, 1, 3),
        load_record(LOAD_AWARE, OURS, OPEN_LOOP, math.nan, None, 4),
    ]
    text = section.render(run_info(options))
    assert "| `load-aware` | 100 | 30 / 60 | 150.0 | 100.0 | **1.50×** |" in text
    assert "### The `load-aware` class" in text and f"scraping every {LOAD_SCRAPE_INTERVAL}" in text
    assert "| 100 | 2 | saturation | ours | 60/60 | 2 | 0 |" in text
    assert "| 100 | 3 | open-loop 50/s | upstream | 60/60 | 1 | 0 |" in text
    assert "| 100 | 4 | open-loop 50/s | ours | 60/60 | – | – |" in text
    assert "- The `load-aware` and `load-variation` classes:" in text  # the method
    assert "### The `load-aware` class" not in WorkloadsSection(workload_options(("basic",))).render(
        run_info(workload_options(("basic",)))
    )


# -- the bench's cluster -----------------------------------------------------------------------------
def test_the_bench_cluster_runs_neither_prometheus_nor_the_topology_exporter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert ClusterOptions().topology_exporter and ClusterOptions().prometheus  # `secsched cluster up`
    seen: list[ClusterOptions] = []

    @contextmanager
    def cluster(options: ClusterOptions) -> Iterator[object]:
        seen.append(options)
        yield object()

    async def measure(*args: object) -> None:
        return None

    monkeypatch.setattr(runner, "LocalCluster", cluster)
    monkeypatch.setattr(runner, "_measure", measure)
    monkeypatch.setattr(runner, "wait_for_low_load", lambda *args: (0.1, True))
    monkeypatch.setattr(runner, "component_versions", dict)
    monkeypatch.setattr(
        runner, "machine", lambda: Machine(cpus=2, cpu_model="x", memory_gib=8.0, kernel="6", python="3.12")
    )
    options = workload_options((LOAD_AWARE,))
    options = BenchOptions(**{**options.__dict__, "workdir": tmp_path})
    runner.run(
        options,
        [],
        None,
        max_load=0,
        load_timeout=0,
        cluster_name="bench-test",
        node_lease_seconds=1800,
        control_plane_gogc=400,
        command="python -m bench",
    )
    [used] = seen
    assert used.name == "bench-test" and not used.prometheus and not used.topology_exporter
    assert used.control_plane_gogc == 400
