"""`make soak`'s harness for a minute on a small cluster of its own: every kind of churn happens,
every gauge is read from our scheduler's process, and the analysis gives a verdict.

No flatness is asserted: a minute says nothing about an hour, and figures belong in
docs/reliability.md, written by `make soak`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench.soak.options import SoakOptions
from bench.soak.report import write_samples
from bench.soak.run import soak

pytestmark = pytest.mark.cluster


def test_a_minute_of_soak_churns_everything_and_samples_ours(tmp_path: Path) -> None:
    options = SoakOptions(
        duration=60,
        nodes=10,
        pod_rate=2,
        pod_lifetime=15,
        node_churn_every=15,
        node_churn_count=2,
        node_churn_pool=4,
        flap_every=15,
        outage=5,
        sample_every=5,
        cluster_name=f"pytest-soak-{os.getpid()}",
        work_dir=tmp_path,
    )
    lines: list[str] = []
    result = soak(options, lines.append)

    churned = result.churned
    assert churned.pods_created >= 100, churned
    assert churned.pods_deleted >= churned.pods_created - 2 * 15 - 2, churned
    assert (churned.nodes_added, churned.nodes_removed) == (6, 2)
    assert dict(churned.flaps) == {"load": 1, "exporter away": 1, "prometheus away": 1}
    assert not churned.errors, churned.error_texts

    samples = result.samples
    assert [sample.seconds for sample in samples][-1] == pytest.approx(60, abs=2)
    # A progress line a sample (taken, or missed on a busy machine and said so), and the start's.
    assert len(samples) + len(result.missed) == 13 and len(lines) == 14
    for sample in samples:
        assert sample.rss_bytes > 20 * 1024 * 1024
        assert sample.watch_tasks >= 5  # pods, nodes, and the rest of the informers
        assert sample.api_connections >= sample.watch_tasks
        assert sample.tasks > sample.watch_tasks
        assert sample.open_fds > sample.api_connections
    assert samples[-1].scheduled >= churned.pods_by_kind.total() - churned.pods_by_kind["unschedulable"] - 5
    assert result.analysis.latency.first_count > 0 and result.analysis.latency.last_count > 0
    assert {check.what for check in result.analysis.checks} >= {
        "RSS slope after the first quarter",
        "watch loops (most, last - first window)",
        "p99 attempt latency, last window / first",
    }
    write_samples(tmp_path / "samples.csv", samples)
    assert len((tmp_path / "samples.csv").read_text().splitlines()) == len(samples) + 1
