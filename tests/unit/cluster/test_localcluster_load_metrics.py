"""The local cluster's load metrics on a running cluster, without a cluster: a stand-in process
plays Prometheus, to check that a second start is refused, that stopping ends exactly the
recorded processes and drops Prometheus' data, and that the options survive `attach`; stand-ins
for the control plane show which processes `control_plane_gogc` reaches."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from secsched_devtools.cluster import processes
from secsched_devtools.cluster.localcluster import (
    LOAD_EXPORTER,
    PROMETHEUS,
    ClusterError,
    ClusterOptions,
    LocalCluster,
)


@pytest.fixture
def cluster(tmp_path: Path) -> LocalCluster:
    local = LocalCluster(ClusterOptions(name=f"unit-load-{os.getpid()}", state_root=tmp_path))
    local.directory.mkdir(parents=True)
    local.ports = {"prometheus": 1, "exporter": 2}
    return local


def test_stopping_the_load_metrics_ends_exactly_their_processes(cluster: LocalCluster) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    cluster.supervisor.launch(PROMETHEUS, sleeper)
    cluster.supervisor.launch("etcd", sleeper)  # the rest of the cluster keeps running
    cluster.prometheus_data.mkdir(parents=True, exist_ok=True)
    prometheus = cluster.records[PROMETHEUS]
    try:
        assert cluster.load_metrics_running()
        with pytest.raises(ClusterError, match="already runs"):
            cluster.start_load_metrics(3)
        assert cluster.stop_load_metrics() == [PROMETHEUS]
        assert not processes.is_running(prometheus) and not cluster.prometheus_data.exists()
        assert set(cluster.records) == {"etcd"} and processes.is_running(cluster.records["etcd"])
        saved = json.loads(cluster.state_file.read_text())
        assert [item["name"] for item in saved["processes"]] == ["etcd"]
        assert not cluster.load_metrics_running() and cluster.stop_load_metrics() == []
    finally:
        cluster.down(quiet=True)
    assert LOAD_EXPORTER not in cluster.records


def test_stopping_without_a_state_file_writes_none(cluster: LocalCluster) -> None:
    assert cluster.stop_load_metrics() == []
    assert not cluster.state_file.exists()


def test_attach_keeps_the_topology_exporter_option(tmp_path: Path) -> None:
    for wanted in (False, True):
        name = f"unit-attach-{wanted}"
        local = LocalCluster(ClusterOptions(name=name, state_root=tmp_path, topology_exporter=wanted))
        local.directory.mkdir(parents=True)
        local.supervisor.save()
        assert LocalCluster.attach(name, tmp_path).options.topology_exporter is wanted
    older = json.loads(local.state_file.read_text())
    del older["options"]["topology_exporter"]  # a state file written before the option existed
    local.state_file.write_text(json.dumps(older))
    assert LocalCluster.attach(local.options.name, tmp_path).options.topology_exporter is True


def _environ(record: processes.ProcessRecord) -> dict[str, str]:
    raw = Path(f"/proc/{record.pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def test_control_plane_gogc_reaches_the_control_plane_only_and_survives_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    options = ClusterOptions(name="unit-gogc", state_root=tmp_path, control_plane_gogc=400)
    local = LocalCluster(options)
    local.directory.mkdir(parents=True)
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    try:
        for name in ("kube-apiserver", "etcd", "kube-scheduler", LOAD_EXPORTER):
            local.supervisor.launch(name, sleeper)
        assert _environ(local.records["kube-apiserver"])["GOGC"] == "400"
        assert _environ(local.records["etcd"])["GOGC"] == "400"
        assert "GOGC" not in _environ(local.records["kube-scheduler"])  # runs as it ships
        assert "GOGC" not in _environ(local.records[LOAD_EXPORTER])
        local.restart("etcd")  # (the API server's restart would wait for its /readyz)
        assert _environ(local.records["etcd"])["GOGC"] == "400"
        assert LocalCluster.attach("unit-gogc", tmp_path).options.control_plane_gogc == 400
    finally:
        local.down(quiet=True)
    local = LocalCluster(ClusterOptions(name="unit-gogc-default", state_root=tmp_path))
    local.directory.mkdir(parents=True)
    try:
        local.supervisor.launch("kube-apiserver", sleeper)
        assert "GOGC" not in _environ(local.records["kube-apiserver"])
    finally:
        local.down(quiet=True)
