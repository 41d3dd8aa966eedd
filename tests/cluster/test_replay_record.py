"""Recording a cluster's past into a trace, from the local cluster's real Prometheus.

The KWOK nodes have no kubelet, so no cAdvisor: the cluster's load exporter publishes its model's
pod usage under cAdvisor's names once its ``podSeries`` is on, Prometheus scrapes it every 2 s,
and the recorder reads it as it reads a real cluster's kubelets.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.plugins.trimaran.source import MetricSource
from secondary_scheduler.replay.record import PrometheusQueries, RecordOptions, record
from secondary_scheduler.replay.trace import PodArrival, UsageSample, open_trace
from secsched_devtools.cluster.localcluster import LocalCluster
from tests.cluster.schedulerproc import pod_manifest

pytestmark = pytest.mark.cluster

GI = 2**30


@pytest.fixture
def pod_series(cluster: LocalCluster) -> Iterator[float]:
    """The exporter's pod series on for the test (off again after it); yields the pod factor."""
    factor = float(cluster.set_base_load({"podSeries": True})["podFactor"])
    try:
        yield factor
    finally:
        cluster.set_base_load({"podSeries": False})


def series_count(cluster: LocalCluster, promql: str) -> int:
    return int(sum(cluster.query(f"count({promql})").values()))


async def test_recorded_arrivals_and_usage_are_the_clusters(
    cluster: LocalCluster, api: ApiClient, namespace: str, pod_series: float, tmp_path: Path
) -> None:
    nodes = sorted(node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"])
    busy = pod_manifest("busy-0", cpu="500m", memory="512Mi", nodeName=nodes[0])
    busy["metadata"]["annotations"] = {"load.secsched.io/cpu": "1500m", "load.secsched.io/memory": "1Gi"}
    plain = pod_manifest("plain-0", cpu="250m", memory="256Mi", nodeName=nodes[1])
    gone = pod_manifest("gone-0", cpu="100m", memory="128Mi", nodeName=nodes[2])
    started = time.time()
    for manifest in (busy, plain, gone):
        await api.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
    memory = f'container_memory_working_set_bytes{{namespace="{namespace}"}}'
    rates = f'rate(container_cpu_usage_seconds_total{{namespace="{namespace}"}}[10s]) > 0'

    async def scraped() -> bool:
        return series_count(cluster, memory) == 3 and series_count(cluster, rates) == 3

    await wait_for(scraped, "Prometheus to hold the three pods' memory and CPU rates", timeout=60)
    await api.delete(f"/api/v1/namespaces/{namespace}/pods/gone-0")

    async def gone_from_prometheus() -> bool:
        return series_count(cluster, memory) == 2

    await wait_for(gone_from_prometheus, "the deleted pod's series to end", timeout=60)
    first_scrape = started  # every sample of this test's pods is after it

    async def enough_samples() -> bool:
        return series_count(cluster, f"count_over_time({memory}[40s]) >= 16") == 2

    await wait_for(
        enough_samples, "32 s of samples of the two pods (the first 10 s of rates ramp up)", timeout=60
    )

    source = MetricSource(kind="Prometheus", address=cluster.prometheus_url)
    prometheus = PrometheusQueries(source, api)
    now = time.time()
    try:
        recording = await record(
            prometheus,
            api,
            RecordOptions(
                history=now - first_scrape + 10, step=2.0, rate_window=10.0, namespaces=(namespace,)
            ),
            now=now,
        )
    finally:
        await prometheus.close()
    assert recording.left_out == [f"{namespace}/gone-0"], (
        "deleted, and no kube-state-metrics knows its requests"
    )
    path = tmp_path / "recorded.jsonl.gz"
    recording.write(path)

    trace = open_trace(path)
    assert trace.header.source == "cluster"
    assert trace.header.start == pytest.approx(now - (now - first_scrape + 10), abs=0.01)
    records = list(trace.records())
    pods = {record.name: record for record in records if isinstance(record, PodArrival)}
    assert set(pods) == {"busy-0", "plain-0"}
    for name, cpu, memory_request in (("busy-0", "500m", "512Mi"), ("plain-0", "250m", "256Mi")):
        pod = pods[name]
        assert pod.requests == {"cpu": cpu, "memory": str(int(memory_request[:-2]) * 2**20)}
        assert pod.end is None
        assert pod.t == pytest.approx(10, abs=3), "created when the test started, 10 s into the window"
        assert pod.labels == {"app": name.rsplit("-", 1)[0]}
    samples: dict[str, list[UsageSample]] = {"busy-0": [], "plain-0": []}
    for sample in records:
        if isinstance(sample, UsageSample):
            samples[sample.name].append(sample)
    for name, expected_cpu, expected_memory in (
        ("busy-0", 1.5, 1 * GI),
        ("plain-0", 0.25 * pod_series, 256 * 2**20 * pod_series),
    ):
        series = samples[name]
        assert len(series) >= 12
        assert all(sample.t >= pods[name].t for sample in series)
        assert statistics.median(sample.cpu for sample in series) == pytest.approx(expected_cpu, rel=0.05)
        assert {sample.memory for sample in series} == {float(round(expected_memory))}


async def test_snapshot_history_writes_a_trace_beside_the_snapshot(
    cluster: LocalCluster, api: ApiClient, namespace: str, pod_series: float, tmp_path: Path
) -> None:
    node = sorted(node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"])[0]
    await api.create(f"/api/v1/namespaces/{namespace}/pods", pod_manifest("vm-0", cpu="1", nodeName=node))
    memory = f'container_memory_working_set_bytes{{namespace="{namespace}"}}'

    async def sampled() -> bool:
        return series_count(cluster, f"count_over_time({memory}[30s]) >= 3") == 1

    await wait_for(sampled, "three samples of the pod's memory", timeout=60)
    snapshot = tmp_path / "cluster.json"
    command = [
        sys.executable,
        "-m",
        "secondary_scheduler.cli",
        "snapshot",
        f"--kubeconfig={cluster.kubeconfig}",
        f"--namespace={namespace}",
        "--no-metrics",
        "--history=2m",
        "--history-step=2s",
        f"--prometheus={cluster.prometheus_url}",
        "-o",
        str(snapshot),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    trace_path = tmp_path / "cluster.trace.jsonl.gz"
    assert f"-> {trace_path}" in done.stderr
    records = list(open_trace(trace_path).records())
    assert [record.name for record in records if isinstance(record, PodArrival)] == ["vm-0"]
    assert any(isinstance(record, UsageSample) for record in records)

    refused = subprocess.run(
        [*command[:4], "--history-step=2s", "--no-metrics", f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "--history-step only apply with --history DURATION" in refused.stderr
