"""The report's measures on a hand-computed case, its JSON shape, and the command end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli
from secondary_scheduler.replay.cluster import ClusterLoad, NodeShape, StartingCluster
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.report import Measures
from secondary_scheduler.replay.trace import write_trace

EXAMPLES = Path(__file__).parents[3] / "examples" / "replay"


def test_measures_on_a_hand_computed_case() -> None:
    """Two 10-core nodes, target 70 %; minute 0: 80 % and idle; minute 1: 95 % and 50 %."""
    load = ClusterLoad(StartingCluster.generated(2, NodeShape(10_000, 2**30)))
    for key, node in (("a", "node-0000"), ("b", "node-0000"), ("c", "node-0001")):
        load.pod_arrived(key, 0.0, 0.0)
        load.place(key, node)
    measures = Measures(load, target=0.7, interval=60.0)
    load.set_use(["a", "b", "c"], [4.0, 4.0, 0.0], [0.0, 0.0, 0.0])
    measures.tick(0.0)
    load.set_use(["a", "c"], [5.5, 5.0], [0.0, 0.0])
    measures.tick(60.0)
    result = measures.result(
        name="p",
        decisions=4,
        seconds=2.0,
        waits=[30.0],
        unschedulable=1,
        preempted=0,
        sources=(),
        duration=60,
    )
    assert result.node_minutes_over_target == 2.0  # node 0 in both minutes
    assert result.vm_minutes_over_target == 4.0  # its two VMs, two minutes
    assert result.vm_minutes_over_saturation == 2.0  # 95 % in minute 1
    assert result.max_node_cpu == pytest.approx(0.95)
    # Node-minutes: 0.8, 0.0, 0.95, 0.5 (both nodes have pods): p50 0.5, p99 0.95.
    assert result.p50_node_cpu == pytest.approx(0.5, abs=0.0011)  # to the histogram's 0.1 % bins
    assert result.p99_node_cpu == pytest.approx(0.95, abs=0.0011)
    assert result.cpu_spread == pytest.approx((0.4 + 0.225) / 2)
    assert result.mean_nodes_in_use == 2.0
    assert result.decisions_per_second == 2.0
    assert result.waited_pods == 1 and result.mean_wait_seconds == 30.0


def test_the_command_replays_every_profile_and_prints_the_json_report(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl.gz"
    fleet = FleetTrace(FleetOptions(vms=40, days=0.5, seed=3))
    write_trace(trace, fleet.header, fleet.records())
    runner = CliRunner()
    arguments = ["replay", "--trace", str(trace), "--nodes", "6", "--node-shape", "16,64Gi"]
    for name in ("targetloadpacking.yaml", "default.yaml"):
        arguments += ["--config", str(EXAMPLES / name)]
    arguments += ["--output", "json", "--report", str(tmp_path / "report"), "--seed", "1"]
    outcome = runner.invoke(cli, arguments)
    assert outcome.exit_code == 0, outcome.output
    report = json.loads(outcome.stdout)
    assert report["target"] == 0.7
    assert [profile["config"] for profile in report["profiles"]] == ["targetloadpacking.yaml", "default.yaml"]
    for profile in report["profiles"]:
        assert {
            "name",
            "config",
            "nodeMinutesOverTarget",
            "vmMinutesOnNodesOverTarget",
            "p99NodeCpu",
            "maxNodeCpu",
            "meanNodesInUse",
            "unschedulablePods",
            "decisions",
            "decisionsPerSecond",
        } <= set(profile)
        assert profile["decisions"] >= 40
        assert 0 <= profile["p99NodeCpu"] <= profile["maxNodeCpu"] + 0.001
    assert report["profiles"][0]["metricSources"] == ["Prometheus"]
    page = (tmp_path / "report" / "index.html").read_text()
    assert "heatmap.png" in page and (tmp_path / "report" / "heatmap.png").exists()


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        ([], "--snapshot FILE"),
        (["--nodes", "2", "--node-shape", "lots"], "--node-shape"),
        (["--nodes", "2", "--target", "70"], "--target"),
        (["--nodes", "2", "--missing-nodes", "nope"], "--missing-nodes"),
    ],
)
def test_bad_flags_are_named_with_their_fix(tmp_path: Path, extra: list[str], flag: str) -> None:
    trace = tmp_path / "trace.jsonl"
    fleet = FleetTrace(FleetOptions(vms=2, days=0.1, seed=1))
    write_trace(trace, fleet.header, fleet.records())
    config = str(EXAMPLES / "default.yaml")
    outcome = CliRunner().invoke(cli, ["replay", "--trace", str(trace), "--config", config, *extra])
    assert outcome.exit_code != 0
    assert flag in outcome.output


def test_a_snapshot_node_caught_not_ready_is_warned_of(tmp_path: Path) -> None:
    """Nothing lifts the node lifecycle controller's taint in a replay: the user hears that the node
    stays unusable (a snapshot taken while it was briefly NotReady would otherwise quietly skew it)."""
    trace = tmp_path / "trace.jsonl"
    fleet = FleetTrace(FleetOptions(vms=2, days=0.1, seed=1))
    write_trace(trace, fleet.header, fleet.records())
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": taints},
            "status": {
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            },
        }
        for name, taints in (
            ("ready", []),
            ("caught", [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
        )
    ]
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps({"nodes": nodes, "pods": []}))
    config = str(EXAMPLES / "default.yaml")
    arguments = ["--trace", str(trace), "--config", config, "--snapshot", str(snapshot), "--output", "json"]
    outcome = CliRunner().invoke(cli, ["replay", *arguments])
    assert outcome.exit_code == 0, outcome.output
    warning = "warning: 1 node(s) of the snapshot carry the not-ready or unreachable taint (caught)"
    assert warning in outcome.stderr
