"""The local cluster's load metrics on a running cluster, without a cluster: a stand-in process
plays Prometheus, to check that a second start is refused, that stopping ends exactly the
recorded processes and drops Prometheus' data, and that the options survive `attach`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from secondary_scheduler.cluster import processes
from secondary_scheduler.cluster.localcluster import (
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
    cluster._launch(PROMETHEUS, sleeper)
    cluster._launch("etcd", sleeper)  # the rest of the cluster keeps running
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
        local._save_state()
        assert LocalCluster.attach(name, tmp_path).options.topology_exporter is wanted
    older = json.loads(local.state_file.read_text())
    del older["options"]["topology_exporter"]  # a state file written before the option existed
    local.state_file.write_text(json.dumps(older))
    assert LocalCluster.attach(local.options.name, tmp_path).options.topology_exporter is True
