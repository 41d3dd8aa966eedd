"""The workloads section's load-variation class, its pure parts: the class and its pods, the
profile (LoadVariationRiskBalancing in TargetLoadPacking's place), the soft measure against the
risk threshold, the rendering, and the load metrics' start and stop that both load classes share."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from bench.__main__ import parser
from bench.context import BenchContext
from bench.measuring import SCHEDULER_NAME
from bench.workloadclasses import (
    BY_NAME,
    CLASS_NAMES,
    LOAD_AWARE,
    LOAD_CLASSES,
    LOAD_VARIATION,
    LOAD_VARIATION_RISK_BALANCING,
    MEASURED,
    RISK_THRESHOLD,
    ROLE_LABEL,
    TARGET_LOAD_PACKING,
    LoadOutcome,
    Node,
    PackingArgs,
    VariationArgs,
    existing_manifests,
    load_class_config,
    load_outcome,
    load_rule,
    measured_manifests,
    nodes_of,
    packing_args,
    starting_load,
    variation_args,
    zones_of,
)
from bench.workloads import WorkloadsSection
from bench.workloads_report import LOAD_SCRAPE_INTERVAL, OPEN_LOOP, SATURATION, WorkloadRecord
from tests.unit.bench.reportparts import load_record, run_info, workload_options

from secondary_scheduler.config.loader import load_config
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secsched_devtools.cluster.localcluster import ClusterError, LocalCluster
from secsched_devtools.cluster.nodes import NodeShape, plan_nodes
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM
from secsched_devtools.repo import example_config

JSON = dict[str, Any]
PROMETHEUS = "http://127.0.0.1:9090"
LVRB = LOAD_VARIATION_RISK_BALANCING


def _config(plugin: str = LVRB, seed: str | None = None) -> str:
    return load_class_config(
        seed if seed is not None else example_config(),
        plugin,
        SCHEDULER_NAME,
        5000.0,
        5000,
        "/tmp/admin.kubeconfig",
        PROMETHEUS,
    )


def _profile(text: str) -> JSON:
    [profile] = yaml.safe_load(text)["profiles"]
    return dict(profile)


# -- the class and its pods ----------------------------------------------------------------------
def test_load_variation_is_a_default_class_right_after_load_aware_and_parses() -> None:
    assert CLASS_NAMES.index(LOAD_VARIATION) == CLASS_NAMES.index(LOAD_AWARE) + 1
    assert LOAD_VARIATION in parser().parse_args([]).workload_classes
    assert parser().parse_args(["--workload-classes", LOAD_VARIATION]).workload_classes == (LOAD_VARIATION,)
    assert LOAD_CLASSES == {LOAD_AWARE: TARGET_LOAD_PACKING, LOAD_VARIATION: LVRB}
    what = BY_NAME[LOAD_VARIATION].what
    assert LVRB in what and "margin 1" in what and "stddev 0" in what


def test_its_pods_and_loads_are_the_load_aware_class_approach() -> None:
    nodes = nodes_of(plan_nodes(30, NodeShape(cpu="16", memory="64Gi", pods=110), 3))
    zones = zones_of(nodes)
    assert measured_manifests(LOAD_VARIATION, "o1", 20, SCHEDULER_NAME, zones, seed=4) == measured_manifests(
        "basic", "o1", 20, SCHEDULER_NAME, zones, seed=4
    )
    assert existing_manifests(LOAD_VARIATION, 20, nodes, SCHEDULER_NAME, seed=3) == existing_manifests(
        LOAD_AWARE, 20, nodes, SCHEDULER_NAME, seed=3
    )
    load = starting_load(nodes, seed=100)
    assert all(level["noise"] == 0.0 for level in load["nodes"].values())  # stddev 0: see starting_load


# -- both schedulers' configuration -----------------------------------------------------------------
def test_the_config_is_the_load_aware_profile_with_lvrb_in_target_load_packings_place() -> None:
    text = _config()
    packing, variation = _profile(_config(TARGET_LOAD_PACKING)), _profile(text)
    assert {**variation, "plugins": None, "pluginConfig": None} == {
        **packing,
        "plugins": None,
        "pluginConfig": None,
    }
    assert variation["plugins"] == {
        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}], "enabled": [{"name": LVRB}]}
    }
    assert variation["pluginConfig"] == [
        {
            "name": LVRB,
            "args": {
                "safeVarianceMargin": 1.0,  # upstream's defaults, written out
                "safeVarianceSensitivity": 1.0,
                "metricProvider": {"type": "Prometheus", "address": PROMETHEUS},  # as TargetLoadPacking's
            },
        }
    ]
    assert TARGET_LOAD_PACKING not in text
    assert yaml.safe_load(text)["clientConnection"] == {
        "kubeconfig": "/tmp/admin.kubeconfig",
        "qps": 5000.0,
        "burst": 5000,
    }
    # our scheduler reads it: LVRB scores beside the defaults but BalancedAllocation
    [ours] = load_config(text, catalog=IN_TREE_CATALOG).config.profiles
    names = [entry.name for entry in ours.plugins[ExtensionPoint.SCORE]]
    assert LVRB in names and "NodeResourcesFit" in names
    assert TARGET_LOAD_PACKING not in names and "NodeResourcesBalancedAllocation" not in names
    assert variation_args(text) == VariationArgs(margin=1.0, sensitivity=1.0, threshold=RISK_THRESHOLD)
    assert load_rule(text, LVRB) == variation_args(text)
    tlp = _config(TARGET_LOAD_PACKING)
    assert load_rule(tlp, TARGET_LOAD_PACKING) == packing_args(tlp) == PackingArgs(70, 1.0, 2000)


def test_the_swap_keeps_weights_and_the_metric_source_and_configures_lvrb_once() -> None:
    seed = yaml.safe_load(example_config())
    [profile] = seed["profiles"]
    profile["plugins"]["score"]["enabled"] = [{"name": TARGET_LOAD_PACKING, "weight": 3}, {"name": LVRB}]
    [packing] = profile["pluginConfig"]
    packing["args"] = {"targetUtilization": 60, "watcherAddress": "http://load-watcher:2020"}
    profile["pluginConfig"].append({"name": LVRB, "args": {"safeVarianceMargin": 3}})
    swapped = _profile(_config(LVRB, yaml.safe_dump(seed)))
    assert swapped["plugins"]["score"]["enabled"] == [{"name": LVRB, "weight": 3}]
    assert swapped["pluginConfig"] == [
        {
            "name": LVRB,
            "args": {
                "safeVarianceMargin": 1.0,
                "safeVarianceSensitivity": 1.0,
                "watcherAddress": "http://load-watcher:2020",
            },
        }
    ]
    bare = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- {}\n"
    with pytest.raises(ValueError, match="does not enable TargetLoadPacking"):
        _config(LVRB, bare)
    assert variation_args(bare) == VariationArgs()


# -- the soft measure --------------------------------------------------------------------------------
def test_spread_is_lvrbs_margin_times_the_rooted_stddev_bounded() -> None:
    assert VariationArgs().spread(0.0) == 0.0
    assert VariationArgs().spread(0.1) == pytest.approx(10.0)
    assert VariationArgs(margin=1.5).spread(0.1) == pytest.approx(15.0)
    assert VariationArgs(sensitivity=2).spread(0.09) == pytest.approx(30.0)
    assert VariationArgs(margin=20).spread(0.1) == 100.0  # bounded to the whole node
    assert VariationArgs(sensitivity=0).spread(0.5) == 0.0  # Go's Pow(0.5, +Inf)
    assert VariationArgs(sensitivity=0).spread(1.0) == 100.0
    assert PackingArgs().spread(0.5) == 0.0  # TargetLoadPacking reads the average alone


def _pod(name: str, node: str, cpu: str) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {ROLE_LABEL: MEASURED}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]},
    }


def test_load_outcome_reads_mean_plus_stddev_against_the_risk_threshold_on_allocatable() -> None:
    nodes = [
        Node(name, capacity={"cpu": "16"}, allocatable={"cpu": "10"})
        for name in ("noisy", "edge", "hot", "risky", "cool")
    ]
    load = {
        "default": {"cpu": 0.0, "noise": 0.0},
        "nodes": {
            "noisy": {"cpu": 0.60, "noise": 0.05},  # 65 % before, + 1/10 = 75 %: over
            "edge": {"cpu": 0.65},  # + 600m/10 CPUs = 71 %: over (TargetLoadPacking: 68.75 % of 16)
            "hot": {"cpu": 0.72},  # over before any pod
            "risky": {"cpu": 0.50, "noise": 0.25},  # 50 + 25: over before any pod, by its stddev
            "cool": {"cpu": 0.10},
        },
    }
    pods = [
        _pod("m0", "noisy", "1"),
        _pod("m1", "edge", "600m"),
        _pod("m2", "hot", "100m"),
        _pod("m3", "risky", "100m"),
        _pod("m4", "cool", "2"),
    ]
    assert load_outcome(pods, nodes, load, VariationArgs()) == LoadOutcome(pods=5, over_target=4, hot_start=2)
    # the same pods by TargetLoadPacking's reading at the same threshold: capacity, no stddev
    assert load_outcome(pods, nodes, load, PackingArgs(target=70, multiplier=1.0)) == LoadOutcome(
        pods=5, over_target=1, hot_start=1
    )


# -- the report --------------------------------------------------------------------------------------
def _render(classes: tuple[str, ...], records: list[WorkloadRecord]) -> str:
    options = workload_options(classes)
    section = WorkloadsSection(options)
    section.records = records
    return section.render(run_info(options))


def test_the_report_has_a_paragraph_and_table_for_each_load_class() -> None:
    text = _render(
        (LOAD_AWARE, LOAD_VARIATION),
        [
            load_record(LOAD_AWARE, UPSTREAM, SATURATION, 100.0, 5, 1),
            load_record(LOAD_AWARE, OURS, SATURATION, 150.0, 2, 2),
            load_record(LOAD_VARIATION, OURS, SATURATION, 120.0, 3, 3),
            load_record(LOAD_VARIATION, UPSTREAM, SATURATION, 80.0, 4, 4),
            load_record(LOAD_VARIATION, OURS, OPEN_LOOP, math.nan, 1, 5),
        ],
    )
    assert "| `load-variation` | 100 | 30 / 60 | 120.0 | 80.0 | **1.50×** |" in text
    aware, variation = text.index("### The `load-aware` class"), text.index("### The `load-variation` class")
    assert aware < variation
    part = text[variation : text.index("###", variation + 4)]
    assert "safeVarianceMargin 1 and safeVarianceSensitivity 1" in part
    assert f"above {RISK_THRESHOLD} %" in part and f"scraping every {LOAD_SCRAPE_INTERVAL}" in part
    assert "stddev is 0" in part and "| over risk |" in part
    assert "| 100 | 3 | saturation | ours | 60/60 | 3 | 0 |" in part
    assert "| 100 | 5 | open-loop 50/s | ours | 60/60 | 1 | 0 |" in part
    assert "| 100 | 1 |" not in part  # the load-aware runs are in their own table
    assert "| over target |" in text[aware:variation]
    assert "- The `load-aware` and `load-variation` classes:" in text
    alone = _render((LOAD_VARIATION,), [])
    assert "### The `load-variation` class" in alone and "### The `load-aware` class" not in alone


# -- the load metrics, started and stopped around each load class -----------------------------------
class _Cluster:
    """What the section asks of the cluster around a load class."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def start_load_metrics(self, *args: Any) -> None:
        self.calls.append(("start", args))
        if self.fail:
            raise ClusterError("prometheus did not come up")

    def stop_load_metrics(self) -> list[str]:
        self.calls.append(("stop", ()))
        return []


def _context(cluster: _Cluster, workdir: Path) -> BenchContext:
    context = BenchContext(
        workload_options((LOAD_VARIATION,), workdir), cast(LocalCluster, cluster), 100, cast(ApiClient, None)
    )
    context.idle_cpus = 0.2

    async def measure_idle(seconds: int = 6) -> float:
        context.idle_cpus = 0.5  # busier with Prometheus
        return 0.5

    context.measure_idle = measure_idle  # type: ignore[method-assign]
    return context


async def test_each_load_class_starts_the_load_metrics_and_stops_them_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    node_objects = plan_nodes(100, NodeShape(cpu="16", memory="64Gi", pods=110), 3)
    seen: list[tuple[str, Any]] = []

    async def measure_class(self: WorkloadsSection, context: BenchContext, *args: Any) -> int:
        seen.append((args[2], args[-1]))  # the class and its node loads
        if args[-1] is not None:  # measured with Prometheus up, and its cost in the idle baseline
            assert context.idle_cpus == 0.5 and cluster.calls[-1][0] == "start"
        return 7

    monkeypatch.setattr(WorkloadsSection, "_measure_class", measure_class)
    for klass in (LOAD_AWARE, LOAD_VARIATION, "basic"):
        cluster = _Cluster()
        context = _context(cluster, tmp_path)
        section = WorkloadsSection(context.options)
        assert await section._class(context, node_objects, 0, klass, 3) == 7
        load = starting_load(nodes_of(node_objects), seed=100)
        if klass == "basic":
            assert cluster.calls == [] and seen[-1] == ("basic", None)
            continue
        assert cluster.calls == [("start", (100, load, LOAD_SCRAPE_INTERVAL)), ("stop", ())]
        assert seen[-1] == (klass, load) and context.idle_cpus == 0.2  # the idle cluster's again
    cluster = _Cluster(fail=True)
    context = _context(cluster, tmp_path)
    section = WorkloadsSection(context.options)
    assert await section._class(context, node_objects, 0, LOAD_VARIATION, 3) == 3
    [skipped] = section.skipped
    assert skipped.klass == LOAD_VARIATION and "did not start: prometheus did not come up" in skipped.reason
    assert [name for name, _ in cluster.calls] == ["start"]  # start_load_metrics cleans up after itself
