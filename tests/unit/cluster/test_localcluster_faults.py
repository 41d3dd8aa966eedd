"""The local cluster's hooks for the chaos run, on stand-in processes: a hard restart is a kill -9
(a process that ignores SIGTERM goes at once, and comes back with the same arguments), and a
component can be stopped and continued (SIGSTOP/SIGCONT) by its record, never by name."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster import processes
from secsched_devtools.cluster.localcluster import ClusterError, ClusterOptions, LocalCluster

DEAF_TO_SIGTERM = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
]


def _state(record: processes.ProcessRecord) -> str:
    """The process's state letter (/proc/<pid>/stat field 3): S sleeping, T stopped."""
    stat = Path(f"/proc/{record.pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(ClusterOptions(name="unit-faults", state_root=tmp_path))
    cluster.directory.mkdir(parents=True)
    yield cluster
    for record in cluster.records.values():  # SIGTERM would not end them
        processes.kill(record)
    cluster.down(quiet=True)


def test_a_hard_restart_kills_at_once_and_starts_the_same_command(local: LocalCluster) -> None:
    local.supervisor.launch("etcd", DEAF_TO_SIGTERM)
    before = local.records["etcd"]
    local.restart("etcd", hard=True)  # SIGTERM would wait 10 s here, then kill
    after = local.records["etcd"]
    assert not processes.is_running(before)
    assert processes.is_running(after) and after.pid != before.pid
    assert after.argv == before.argv


async def test_a_component_is_stopped_and_continued_by_its_record(local: LocalCluster) -> None:
    local.supervisor.launch("kube-apiserver", DEAF_TO_SIGTERM)
    record = local.records["kube-apiserver"]

    async def in_state(letters: str) -> bool:
        return _state(record) in letters

    local.signal("kube-apiserver", signal.SIGSTOP)
    await wait_for(lambda: in_state("T"), "the process stopped", timeout=10)
    local.signal("kube-apiserver", signal.SIGCONT)
    await wait_for(lambda: in_state("SR"), "the process running again", timeout=10)
    processes.kill(record)
    with pytest.raises(ClusterError, match="kube-apiserver is not running"):
        local.signal("kube-apiserver", signal.SIGCONT)
