"""`secsched score`: one cycle in memory over a snapshot file, explained as JSON or a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli

EXAMPLES = Path(__file__).parents[3] / "examples" / "score"
END = 1_700_000_000

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: first
- schedulerName: load-aware
  plugins:
    multiPoint:
      enabled: [{name: TargetLoadPacking, weight: 5}]
  pluginConfig:
  - name: TargetLoadPacking
    args: {metricProvider: {type: Prometheus, address: "https://prometheus:9091", insecureSkipVerify: false}}
"""


def node(name: str, cpu: str = "2", memory: str = "4Gi") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "metadata": {"name": name},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def pod(name: str, cpu: str, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def tlp_snapshot(**extra: Any) -> dict[str, Any]:
    """The spec's TargetLoadPacking example: three 2-core nodes at 10 %, 60 % and 0 % CPU."""
    return {
        "nodes": [node("node-1"), node("node-2"), node("node-3")],
        "pods": [],
        "metrics": {
            "timestamp": END,
            "window": {"duration": "15m", "start": END - 900, "end": END},
            "source": "Prometheus",
            "data": {
                "NodeMetricsMap": {
                    name: {
                        "metrics": [
                            {"name": "cpu", "type": "CPU", "operator": "Latest", "rollup": "15m", "value": v}
                        ]
                    }
                    for name, v in (("node-1", 10), ("node-2", 60), ("node-3", 0))
                }
            },
        },
        **extra,
    }


def invoke(tmp_path: Path, snapshot: Any, pending: Any, *args: str, config: str = CONFIG) -> Any:
    (tmp_path / "config.yaml").write_text(config)
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pending))
    return CliRunner().invoke(
        cli,
        [
            "score",
            "--config",
            str(tmp_path / "config.yaml"),
            "--snapshot",
            str(tmp_path / "snapshot.json"),
            "--pod",
            str(tmp_path / "pod.yaml"),
            *args,
        ],
    )


def test_json_gives_the_spec_tlp_scores(tmp_path: Path) -> None:
    result = invoke(
        tmp_path, tlp_snapshot(), pod("pod-1", "300m"), "--profile", "load-aware", "--output", "json"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"profile", "pod", "selected", "nodes"}
    assert (report["profile"], report["pod"], report["selected"]) == ("load-aware", "default/pod-1", "node-1")
    assert {name: n["plugins"]["TargetLoadPacking"]["score"] for name, n in report["nodes"].items()} == {
        "node-1": 89,
        "node-2": 12,
        "node-3": 74,
    }
    first = report["nodes"]["node-1"]
    assert set(first) == {"feasible", "reason", "plugins", "total"}
    assert (first["feasible"], first["reason"]) == (True, None)
    assert first["plugins"]["TargetLoadPacking"] == {"score": 89, "normalized": 89, "weight": 5}
    assert first["total"] == sum(p["normalized"] * p["weight"] for p in first["plugins"].values())
    assert list(report["nodes"]) == ["node-1", "node-3", "node-2"]  # best total first


def test_recently_scheduled_pods_from_the_snapshot_are_counted(tmp_path: Path) -> None:
    """The spec's second step: pod-1 placed on node-1 after the window, then pod-2 -> 100 / 22 / 51."""
    snapshot = tlp_snapshot(
        pods=[pod("pod-1", "300m", "node-1")],
        recentlyScheduled=[{"pod": "default/pod-1", "timestamp": END + 1}],
        now=END + 10,
    )
    result = invoke(tmp_path, snapshot, pod("pod-2", "100m"), "--profile", "load-aware", "--output", "json")
    assert result.exit_code == 0, result.output
    scores = {
        name: n["plugins"]["TargetLoadPacking"]["score"]
        for name, n in json.loads(result.stdout)["nodes"].items()
    }
    assert scores == {"node-1": 100, "node-2": 22, "node-3": 51}


def test_the_table_shows_the_choice_the_reasons_and_the_metrics(tmp_path: Path) -> None:
    snapshot = tlp_snapshot()
    snapshot["nodes"].append(node("tiny", cpu="100m"))
    result = invoke(tmp_path, snapshot, pod("pod-1", "300m"), "--profile", "load-aware")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Pod default/pod-1 → node-1" in out
    assert "▶" in out and "✗" in out and "Insufficient cpu" in out
    assert "Packing" in out and "89" in out and "74" in out
    assert "metrics: Prometheus https://prometheus:9091, window 15m, 0s old" in out
    assert "cpu load estimated from requests (fallbackToRequests): tiny" not in out  # tiny is filtered out


def test_stale_metrics_are_explained(tmp_path: Path) -> None:
    snapshot = tlp_snapshot(now=END + 600)
    result = invoke(tmp_path, snapshot, pod("pod-1", "300m"), "--profile", "load-aware")
    assert result.exit_code == 0, result.output
    assert "older than metricsStalenessLimit (300s)" in result.stdout
    assert "cpu load estimated from requests (fallbackToRequests): node-1, node-2, node-3" in result.stdout


def test_the_pod_fits_nowhere(tmp_path: Path) -> None:
    huge = pod("huge", "64")
    huge["spec"]["schedulerName"] = "first"  # the profile the scheduler would run for it
    result = invoke(tmp_path, tlp_snapshot(), huge, "--output", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["profile"] == "first" and report["selected"] is None
    assert {n["reason"] for n in report["nodes"].values()} == {"Insufficient cpu"}
    assert all(not n["feasible"] and n["plugins"] == {} and n["total"] == 0 for n in report["nodes"].values())


@pytest.mark.parametrize(
    ("snapshot", "message"),
    [
        ({"pods": []}, "snapshot.json: nodes: missing: list the cluster's v1 Nodes"),
        ({"nodes": [node("a")], "pod": []}, "snapshot.json: pod: unknown field"),
        ({"nodes": [{"metadata": {}}]}, "snapshot.json: nodes[0].metadata.name: missing"),
        (
            {"nodes": [node("a", cpu="two")]},
            "snapshot.json: nodes[0].status.capacity.cpu: 'two' is not a Kubernetes quantity",
        ),
        ({"nodes": [node("a")], "pods": [pod("p", "1")]}, "snapshot.json: pods[0].spec.nodeName: missing"),
        (
            {"nodes": [node("a")], "pods": [pod("p", "1", "b")]},
            "pods[0].spec.nodeName: 'b' is not one of the snapshot's nodes",
        ),
        (
            {"nodes": [node("a")], "metrics": {"window": {"end": "soon"}}},
            "snapshot.json: metrics.window.end: ",
        ),
        (
            {"nodes": [node("a")], "recentlyScheduled": [{"pod": "x/y", "timestamp": 1}]},
            "recentlyScheduled[0].pod: 'x/y'",
        ),
        ({"nodes": [node("a")], "now": "today"}, "snapshot.json: now: expected Unix seconds"),
    ],
)
def test_bad_snapshots_name_the_file_the_field_and_the_fix(
    tmp_path: Path, snapshot: Any, message: str
) -> None:
    result = invoke(tmp_path, snapshot, pod("p", "1"))
    assert result.exit_code == 1
    assert message in result.output


def test_a_bad_pod_file_and_an_unknown_profile(tmp_path: Path) -> None:
    result = invoke(tmp_path, tlp_snapshot(), {"metadata": {"name": "p"}})
    assert result.exit_code == 1 and "pod.yaml:1: spec.containers: missing" in result.output
    result = invoke(tmp_path, tlp_snapshot(), pod("p", "1"), "--profile", "nope")
    assert (
        result.exit_code == 1
        and "no profile has schedulerName 'nope'; it has first, load-aware" in result.output
    )


def test_a_bad_config_is_reported_like_config_validate(tmp_path: Path) -> None:
    result = invoke(
        tmp_path, tlp_snapshot(), pod("p", "1"), config=CONFIG.replace("insecureSkipVerify", "insecure")
    )
    assert result.exit_code == 1
    assert (
        "config.yaml:11: profiles[1].pluginConfig[0].args.metricProvider.insecure: unknown field"
        in result.output
    )


def test_the_committed_example_runs(tmp_path: Path) -> None:
    args = ["score", "--config", str(EXAMPLES / "config.yaml"), "--snapshot", str(EXAMPLES / "snapshot.yaml")]
    result = CliRunner().invoke(cli, [*args, "--pod", str(EXAMPLES / "pod.yaml"), "--output", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["selected"] == "worker-2"
    assert report["nodes"]["worker-4"] == {
        "feasible": False,
        "reason": "Insufficient memory",
        "plugins": {},
        "total": 0,
    }
