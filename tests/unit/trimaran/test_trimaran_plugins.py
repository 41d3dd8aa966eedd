"""The framework plugins: same integers as the scoring functions, plus our staleness and fallback rules."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.framework.interface import PreScorePlugin, ScorePlugin
from secondary_scheduler.plugins.registry import in_tree_registry
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing import scoring as lvrb
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.lowriskovercommitment import scoring as lroc
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.nodeusage import SnapshotIndex
from secondary_scheduler.plugins.trimaran.notes import MetricsNote, read_note
from secondary_scheduler.plugins.trimaran.providers.static import StaticProvider
from secondary_scheduler.plugins.trimaran.resourcestats import pod_requests
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.targetloadpacking import scoring as tlp
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

TRIMARAN = ("TargetLoadPacking", "LoadVariationRiskBalancing", "LowRiskOverCommitment")

NOW = 1_700_000_000
PROMETHEUS = {"metricProvider": {"type": "Prometheus", "address": "http://prom:9090"}}
PROMETHEUS_LABEL = "Prometheus http://prom:9090"

MakeSnapshot = Callable[..., WatcherMetrics]


class Cluster:
    """Plugins of one handle over one NodeTable, with metrics served from a fixed snapshot."""

    def __init__(self, snapshot: WatcherMetrics | None, now: float = NOW) -> None:
        self.registry = CollectorRegistry()
        self.now = now
        self.services = TrimaranServices(
            registry=self.registry,
            clock=lambda: self.now,
            provider_factory=lambda _: StaticProvider(snapshot),
        )
        self.handle = Handle()
        self.handle.register_service(SERVICE, self.services)

    def plugin(self, name: str, args: Mapping[str, Any] | None = None) -> ScorePlugin:
        plugin_class = in_tree_registry()[name]
        plugin = plugin_class(validated_args(plugin_class, dict(args or {})), self.handle)
        assert isinstance(plugin, ScorePlugin)
        return plugin

    def gauge(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


@pytest.fixture
async def cluster_factory() -> AsyncIterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(snapshot: WatcherMetrics | None, now: float = NOW) -> Cluster:
        made.append(Cluster(snapshot, now))
        return made[-1]

    yield make
    for cluster in made:
        await cluster.services.stop()


def run(
    plugin: ScorePlugin, pod: dict[str, Any], table: NodeTable, slots: Sequence[int]
) -> tuple[list[int], CycleState]:
    """PreScore (if any) and Score of ``slots``, as the framework calls them."""
    state = CycleState()
    info = PodInfo.from_pod(pod)
    nodes = np.array(slots, dtype=np.intp)
    if isinstance(plugin, PreScorePlugin):
        assert plugin.pre_score(state, info, table, nodes).is_success
    return plugin.score(state, info, table, nodes).tolist(), state


def note_of(state: CycleState, plugin: str) -> MetricsNote:
    note = read_note(state, plugin)
    assert note is not None
    return note


def random_cluster(
    seed: int, make_snapshot: MakeSnapshot, without_metrics: int = 1
) -> tuple[list, list, WatcherMetrics]:
    """Nodes of mixed sizes (capacity above allocatable), bound pods, and metrics for all but some nodes."""
    rng = random.Random(seed)
    nodes, pods, rows = [], [], {}
    for index in range(12):
        cores = rng.choice([2, 4, 8, 16])
        name = f"node-{index}"
        nodes.append(
            {
                "metadata": {"name": name},
                "status": {
                    "capacity": {"cpu": str(cores), "memory": f"{cores * 4}Gi"},
                    "allocatable": {"cpu": f"{cores * 1000 - 100}m", "memory": f"{cores * 4 * 1024 - 512}Mi"},
                },
            }
        )
        for pod_index in range(rng.randint(0, 4)):
            request = rng.choice([100, 250, 500, 1000])
            resources: dict[str, Any] = {"requests": {"cpu": f"{request}m", "memory": f"{request}Mi"}}
            if rng.random() < 0.5:
                resources["limits"] = {"cpu": f"{request * rng.randint(1, 4)}m", "memory": f"{request * 2}Mi"}
            pods.append(
                {
                    "metadata": {
                        "name": f"{name}-p{pod_index}",
                        "namespace": "default",
                        "uid": f"{name}-{pod_index}",
                    },
                    "spec": {"nodeName": name, "containers": [{"name": "c", "resources": resources}]},
                }
            )
        if index >= without_metrics:
            rows[name] = [
                ("CPU", "AVG", rng.uniform(0, 95)),
                ("CPU", "STD", rng.uniform(0, 20)),
                ("Memory", "AVG", rng.uniform(0, 95)),
                ("Memory", "STD", rng.uniform(0, 20)),
            ]
    return nodes, pods, make_snapshot(rows, window_end=NOW)


PENDING = {
    "metadata": {"name": "pending", "namespace": "default"},
    "spec": {
        "containers": [
            {
                "name": "a",
                "resources": {"requests": {"cpu": "300m", "memory": "256Mi"}, "limits": {"cpu": "1"}},
            },
            {"name": "b", "resources": {"requests": {"cpu": "200m", "memory": "128Mi"}}},
        ]
    },
}


@pytest.mark.parametrize("parity", [True, False])
async def test_wrappers_give_the_scoring_functions_integers(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot, parity: bool
) -> None:
    """Over a NodeTable, for a shuffled subset of candidates; parity mode also for a node without metrics."""
    nodes, pods, snapshot = random_cluster(7, make_snapshot, without_metrics=1 if parity else 0)
    cluster = cluster_factory(snapshot)
    args = {"parityMode": parity, **PROMETHEUS}
    plugins = {name: cluster.plugin(name, args) for name in TRIMARAN}
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    slots = [table.slot_of(node["metadata"]["name"]) for node in nodes]
    random.Random(1).shuffle(slots)
    chosen = [slot for slot in slots[:9] if slot is not None]
    chosen_nodes = [table.objects[slot] for slot in chosen]
    pods_by_node = {
        name: [p for p in pods if p["spec"]["nodeName"] == name]
        for name in (n["metadata"]["name"] for n in nodes)
    }

    tlp_args = TargetLoadPackingArgs.model_validate(args)
    expected_tlp = tlp.score_nodes(
        tlp.build_node_arrays(chosen_nodes, snapshot, {}), tlp.predict_pod_cpu(PENDING, tlp_args), tlp_args
    )
    lvrb_args = LoadVariationRiskBalancingArgs.model_validate(args)
    expected_lvrb = lvrb.score_nodes(
        lvrb.build_node_arrays(chosen_nodes, snapshot), pod_requests(PENDING), lvrb_args
    )
    lroc_args = LowRiskOverCommitmentArgs.model_validate(args)
    expected_lroc = lroc.score_nodes(
        lroc.build_node_arrays(chosen_nodes, pods_by_node, snapshot), lroc.prescore(PENDING), lroc_args
    )

    assert run(plugins["TargetLoadPacking"], PENDING, table, chosen)[0] == expected_tlp.tolist()
    assert run(plugins["LoadVariationRiskBalancing"], PENDING, table, chosen)[0] == expected_lvrb.tolist()
    assert run(plugins["LowRiskOverCommitment"], PENDING, table, chosen)[0] == expected_lroc.tolist()
    assert len(set(expected_tlp.tolist())) > 3  # the vectors are not trivially constant


async def test_lroc_totals_follow_pods_added_and_removed(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot
) -> None:
    """The per-node totals cache sees the table change between cycles (an assumed pod, a deletion)."""
    nodes, pods, snapshot = random_cluster(3, make_snapshot, without_metrics=0)
    cluster = cluster_factory(snapshot)
    plugin = cluster.plugin("LowRiskOverCommitment", PROMETHEUS)
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    slots = list(table.active_slots())
    run(plugin, PENDING, table, slots)

    assumed = {**PENDING, "metadata": {"name": "assumed", "namespace": "default"}}
    table.add_pod(PodInfo.from_pod(assumed), "node-0")
    removed = pods[0]
    table.remove_pod(f"default/{removed['metadata']['name']}")
    remaining = [*pods[1:], {**assumed, "spec": {**assumed["spec"], "nodeName": "node-0"}}]
    by_node = {
        node["metadata"]["name"]: [
            pod for pod in remaining if pod["spec"]["nodeName"] == node["metadata"]["name"]
        ]
        for node in nodes
    }
    args = LowRiskOverCommitmentArgs.model_validate(PROMETHEUS)
    expected = lroc.score_nodes(
        lroc.build_node_arrays(nodes, by_node, snapshot), lroc.prescore(PENDING), args
    )
    assert run(plugin, PENDING, table, slots)[0] == expected.tolist()


def _fallback_cluster() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two 4-core nodes, each half requested: node-a has metrics (10 % cpu), node-b none."""
    nodes = [
        {
            "metadata": {"name": name},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi"},
                "allocatable": {"cpu": "4", "memory": "8Gi"},
            },
        }
        for name in ("node-a", "node-b")
    ]
    pods = [
        {
            "metadata": {"name": f"busy-{name}", "namespace": "default"},
            "spec": {
                "nodeName": name,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}],
            },
        }
        for name in ("node-a", "node-b")
    ]
    return nodes, pods


POD_1_CPU = {
    "metadata": {"name": "one-cpu", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
}


async def test_a_node_without_metrics_is_estimated_from_requests(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot
) -> None:
    nodes, pods = _fallback_cluster()
    snapshot = make_snapshot({"node-a": [("CPU", "AVG", 10), ("Memory", "AVG", 20)]}, window_end=NOW)
    cluster = cluster_factory(snapshot)
    plugin = cluster.plugin("TargetLoadPacking", PROMETHEUS)
    parity = cluster.plugin("LoadVariationRiskBalancing", {**PROMETHEUS, "parityMode": True})
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    slots = [table.slot_of("node-a"), table.slot_of("node-b")]
    scores, state = run(plugin, POD_1_CPU, table, slots)
    # node-b: 2 of 4 cores requested -> 50 %; with the pod's 1500m predicted: 87.5 % -> 40 * 12.5 / 60 = 8.
    assert scores[1] == 8
    assert scores[0] == tlp.score_predicted(np.array([10 + 37.5]), 40).tolist()[0]
    note = note_of(state, "TargetLoadPacking")
    assert note.estimated == {"cpu": ("node-b",)} and note.unmeasured == ()
    assert any("estimated from requests" in line and "node-b" in line for line in note.lines())
    assert (
        cluster.gauge(
            "secsched_trimaran_estimated_scores_total", plugin="TargetLoadPacking", source=PROMETHEUS_LABEL
        )
        == 1
    )
    parity_scores, parity_state = run(parity, POD_1_CPU, table, slots)
    assert parity_scores[1] == 0
    assert note_of(parity_state, "LoadVariationRiskBalancing").unmeasured == ("node-b",)


async def test_fallback_can_be_turned_off(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot
) -> None:
    nodes, pods = _fallback_cluster()
    cluster = cluster_factory(make_snapshot({"node-a": [("CPU", "AVG", 10)]}, window_end=NOW))
    plugin = cluster.plugin("TargetLoadPacking", {**PROMETHEUS, "fallbackToRequests": False})
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    scores, state = run(plugin, POD_1_CPU, table, [table.slot_of("node-b")])
    assert scores == [0]
    assert any("fallbackToRequests: false" in line for line in note_of(state, "TargetLoadPacking").lines())


async def test_lroc_scores_a_node_without_metrics_on_its_limit_risk(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot
) -> None:
    """Estimating load as requests leaves no load risk: the score is (1 - w * limit risk) * 100."""
    nodes, pods = _fallback_cluster()
    overcommitted = {
        "metadata": {"name": "bursty", "namespace": "default"},
        "spec": {
            "nodeName": "node-b",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}}}],
        },
    }
    cluster = cluster_factory(make_snapshot({"node-a": [("CPU", "AVG", 10)]}, window_end=NOW))
    plugin = cluster.plugin("LowRiskOverCommitment", PROMETHEUS)
    parity = cluster.plugin(
        "LowRiskOverCommitment", {**PROMETHEUS, "parityMode": True, "smoothingWindowSize": 4}
    )
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, [*pods, overcommitted])
    pending = {
        **POD_1_CPU,
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}}]
        },
    }
    # node-b cpu: requests 2 + 1 + 0.5 = 3.5 cores, limits 2 + 4 + 1 = 7 on 4: limit risk (7 - 4) / (7 - 3.5).
    expected = round((1 - 0.5 * (3 / 3.5)) * 100)
    assert run(plugin, pending, table, [table.slot_of("node-b")])[0] == [expected]
    assert run(parity, pending, table, [table.slot_of("node-b")])[0] == [0]


async def test_stale_metrics_are_not_trusted_unless_in_parity_mode(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot, caplog: pytest.LogCaptureFixture
) -> None:
    nodes, pods = _fallback_cluster()
    snapshot = make_snapshot(
        {name: [("CPU", "AVG", 90)] for name in ("node-a", "node-b")}, window_end=NOW - 400
    )
    cluster = cluster_factory(snapshot, now=NOW)
    ours = cluster.plugin("TargetLoadPacking", {**PROMETHEUS, "metricsStalenessLimit": "5m"})
    upstream = cluster.plugin("TargetLoadPacking", {**PROMETHEUS, "parityMode": True})
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    slots = [table.slot_of("node-a"), table.slot_of("node-b")]
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            scores, state = run(ours, POD_1_CPU, table, slots)
    assert scores == [8, 8]  # from requests (50 %), not the stale 90 %
    note = note_of(state, "TargetLoadPacking")
    assert note.stale and note.window == "15m" and note.age_seconds == 400
    assert any("older than metricsStalenessLimit (300s)" in line for line in note.lines())
    assert len([r for r in caplog.records if "metricsStalenessLimit" in r.message]) == 1
    assert cluster.gauge("secsched_trimaran_metrics_age_seconds", source=PROMETHEUS_LABEL) == 400
    assert run(upstream, POD_1_CPU, table, slots)[0] == [0, 0]  # 90 % + the pod: over 100 %


async def test_a_missing_series_warns_once_sets_gauges_and_falls_back(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot, caplog: pytest.LogCaptureFixture
) -> None:
    """instance:node_cpu:ratio absent: upstream scores every node 0 silently; we say so once and estimate."""
    nodes, pods = _fallback_cluster()
    snapshot = make_snapshot(
        {name: [("Memory", "AVG", 30), ("Memory", "STD", 5)] for name in ("node-a", "node-b")}, window_end=NOW
    )
    cluster = cluster_factory(snapshot)
    ours = cluster.plugin("TargetLoadPacking", PROMETHEUS)
    lvrb_plugin = cluster.plugin("LoadVariationRiskBalancing", PROMETHEUS)
    upstream = cluster.plugin("TargetLoadPacking", {**PROMETHEUS, "parityMode": True})
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    slots = [table.slot_of("node-a"), table.slot_of("node-b")]
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            scores, state = run(ours, POD_1_CPU, table, slots)
            run(lvrb_plugin, POD_1_CPU, table, slots)
    warnings = [r.message for r in caplog.records if "instance:node_cpu:ratio" in r.message]
    assert len(warnings) == 1 and "recording rule" in warnings[0]
    assert cluster.gauge("secsched_trimaran_series_missing", source=PROMETHEUS_LABEL, resource="cpu") == 1
    assert cluster.gauge("secsched_trimaran_series_missing", source=PROMETHEUS_LABEL, resource="memory") == 0
    assert (
        cluster.gauge("secsched_trimaran_nodes_without_metrics", source=PROMETHEUS_LABEL, resource="cpu") == 2
    )
    assert scores == [8, 8]
    assert note_of(state, "TargetLoadPacking").missing_series == ("cpu",)
    assert run(upstream, POD_1_CPU, table, slots)[0] == [0, 0]


async def test_a_node_without_metrics_warns_once_until_it_recovers(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot, caplog: pytest.LogCaptureFixture
) -> None:
    nodes, pods = _fallback_cluster()
    cluster = cluster_factory(
        make_snapshot({"node-a": [("CPU", "AVG", 10), ("Memory", "AVG", 10)]}, window_end=NOW)
    )
    plugin = cluster.plugin("LoadVariationRiskBalancing", PROMETHEUS)
    await cluster.services.start()
    table = NodeTable.from_objects(nodes, pods)
    with caplog.at_level(logging.WARNING):
        for _ in range(4):
            run(plugin, POD_1_CPU, table, list(table.active_slots()))
    lacking = [r.message for r in caplog.records if "node-b" in r.message]
    assert len(lacking) == 2  # one for cpu, one for memory; not one per cycle
    assert (
        cluster.gauge("secsched_trimaran_nodes_without_metrics", source=PROMETHEUS_LABEL, resource="memory")
        == 1
    )


async def test_before_the_first_fetch_every_node_is_estimated(
    cluster_factory: Callable[..., Cluster],
) -> None:
    nodes, pods = _fallback_cluster()
    cluster = cluster_factory(None)
    plugin = cluster.plugin("TargetLoadPacking", PROMETHEUS)
    table = NodeTable.from_objects(nodes, pods)
    scores, state = run(plugin, POD_1_CPU, table, list(table.active_slots()))
    assert scores == [8, 8]
    assert note_of(state, "TargetLoadPacking").lines()[0] == f"metrics: {PROMETHEUS_LABEL}: no snapshot yet"


async def test_tlp_follows_placements_and_table_changes_between_cycles(
    cluster_factory: Callable[..., Cluster], make_snapshot: MakeSnapshot
) -> None:
    """The per-slot column of recently placed pods' CPU: the same scores as the scoring functions
    cycle after cycle, while pods are placed, a node leaves the table and another joins."""
    nodes, pods, snapshot = random_cluster(11, make_snapshot, without_metrics=0)
    cluster = cluster_factory(snapshot)
    plugin = cluster.plugin("TargetLoadPacking", PROMETHEUS)
    await cluster.services.start()
    recent = cluster.services.recently_scheduled
    args = TargetLoadPackingArgs.model_validate(PROMETHEUS)
    table = NodeTable.from_objects(nodes, pods)
    rng = random.Random(5)
    placed: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    late = nodes[-1]  # measured, but joins the table only later
    table.remove_node(late["metadata"]["name"])
    for cycle in range(30):
        if cycle == 10:
            table.remove_node(nodes[2]["metadata"]["name"])
        if cycle == 20:
            table.add_node(late)
        slots = list(table.active_slots())
        rng.shuffle(slots)
        chosen = slots[: rng.randint(1, len(slots))]
        objects = [table.objects[slot] for slot in chosen]
        missing = {
            name: tlp.missing_utilisation(entries, NOW, args) for name, entries in placed.items() if entries
        }
        expected = tlp.score_nodes(tlp.build_node_arrays(objects, snapshot, missing), 450, args)
        scores, state = run(plugin, POD_450M, table, chosen)
        assert scores == expected.tolist(), f"cycle {cycle}"
        shown = {
            table.names[slot]: missing[table.names[slot]] for slot in chosen if missing.get(table.names[slot])
        }
        assert note_of(state, "TargetLoadPacking").recent == shown
        node = rng.choice([n["metadata"]["name"] for n in nodes])
        stamp = NOW + 1 if rng.random() < 0.7 else NOW - 120  # after the window, or long before it
        pod = {
            "metadata": {"name": f"placed-{cycle}", "namespace": "default", "uid": f"placed-{cycle}"},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "c", "resources": {"limits": {"cpu": "300m"}}}],
            },
        }
        recent.record(pod, node, stamp)
        placed.setdefault(node, []).append((stamp, pod))


POD_450M = {
    "metadata": {"name": "pending-450m", "namespace": "default"},
    "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "450m"}}}]},
}


async def test_the_index_a_refresh_prepares_is_the_one_a_cycle_would_build(
    make_snapshot: MakeSnapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built a slice at a time during the refresh (nodes with no metrics or one resource included),
    equal to ``SnapshotIndex.build``; the cycle then uses it rather than parsing the snapshot."""
    rows: dict[str, list[tuple[str, str, float]]] = {
        f"node-{i}": [("CPU", "AVG", i), ("CPU", "STD", 1.5)] for i in range(7)
    }
    rows["node-2"] = []
    rows["node-3"] = [("Memory", "AVG", 40), ("CPU", "Latest", 12)]
    rows["node-4"] = [("Memory", "AVG", 40)]
    snapshot = make_snapshot(rows, window_end=NOW)
    built = SnapshotIndex.build(snapshot)
    prepared = await SnapshotIndex.build_yielding(snapshot, every=2)
    assert prepared.row_of == built.row_of and prepared.missing_series == built.missing_series
    for name in ("cpu_percent", "has_metrics"):
        np.testing.assert_array_equal(getattr(prepared, name), getattr(built, name))
    for resource in ("cpu", "memory"):
        for part in ("avg", "stdev", "valid"):
            np.testing.assert_array_equal(
                getattr(getattr(prepared, resource), part), getattr(getattr(built, resource), part)
            )
    assert not built.has_metrics[built.row_of["node-2"]] and built.has_metrics[built.row_of["node-4"]]

    cluster = Cluster(snapshot)
    plugin = cluster.plugin("TargetLoadPacking", {"parityMode": True, **PROMETHEUS})
    await cluster.services.start()
    nodes = [{"metadata": {"name": name}, "status": {"capacity": {"cpu": "4"}}} for name in rows]
    table = NodeTable.from_objects(nodes, [])

    def parse_in_cycle(cls: type[SnapshotIndex], metrics: WatcherMetrics | None) -> SnapshotIndex:
        raise AssertionError("the snapshot was parsed in a scheduling cycle")

    monkeypatch.setattr(SnapshotIndex, "build", classmethod(parse_in_cycle))
    try:
        scores, _ = run(plugin, POD_450M, table, list(table.active_slots()))
    finally:
        await cluster.services.stop()
    args = TargetLoadPackingArgs.model_validate({"parityMode": True, **PROMETHEUS})
    expected = tlp.score_nodes(tlp.build_node_arrays(nodes, snapshot, {}), 450, args)
    assert scores == expected.tolist()
