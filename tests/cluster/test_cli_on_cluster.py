"""The CLI against a real control plane: `secsched snapshot` round-trips what the scheduler decides,
and a scheduler whose identity the API server refuses says so at the default log level.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.kubeconfigs import write_token_kubeconfig
from secsched_devtools.cluster.localcluster import LocalCluster, free_port
from tests.cluster.schedulerproc import SECONDARY_CONFIG, pod_manifest, running_scheduler, wait_all_bound

pytestmark = pytest.mark.cluster


def secsched(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secondary_scheduler.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


async def test_snapshot_round_trips_the_schedulers_decision(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    """A snapshot taken just before a pod arrives: `score` on it picks the node the scheduler picks."""
    nodes = sorted(
        (node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"]),
        key=lambda name: (len(name), name),
    )
    # Distinct loads, so the decision has one clear winner (a tie would be broken at random).
    fillers = [
        pod_manifest(
            f"filler-{index}", cpu=f"{(index + 1) * 700}m", memory=f"{(index + 1) * 384}Mi", nodeName=node
        )
        for index, node in enumerate(nodes[1:])
    ]
    for filler in fillers:
        await api.create(f"/api/v1/namespaces/{namespace}/pods", filler)
    await wait_all_bound(api, namespace, len(fillers))
    config = tmp_path / "config.yaml"
    document = yaml.safe_load(SECONDARY_CONFIG)
    config.write_text(yaml.safe_dump(document))
    snapshot = tmp_path / "snapshot.yaml"
    taken = secsched(
        "snapshot", f"--config={config}", f"--kubeconfig={cluster.kubeconfig}", "-o", str(snapshot)
    )
    assert taken.returncode == 0, taken.stderr
    assert "Traceback" not in taken.stderr
    written = yaml.safe_load(snapshot.read_text())
    assert {node["metadata"]["name"] for node in written["nodes"]} == set(nodes)
    assert {f"filler-{index}" for index in range(len(fillers))} <= {
        pod["metadata"]["name"] for pod in written["pods"]
    }
    assert all("managedFields" not in pod["metadata"] for pod in written["pods"])

    pending = pod_manifest("arriving", cpu="500m", memory="256Mi")
    pending["metadata"]["namespace"] = namespace
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(pending))
    scored = secsched(
        "score", f"--config={config}", f"--snapshot={snapshot}", f"--pod={pod_file}", "--output=json"
    )
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    best = max(node["total"] for node in report["nodes"].values() if node["feasible"])
    assert sum(node["feasible"] and node["total"] == best for node in report["nodes"].values()) == 1, report

    with running_scheduler(cluster.kubeconfig, tmp_path / "scheduler", SECONDARY_CONFIG):
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pending)
        pods = await wait_all_bound(api, namespace, len(fillers) + 1)
    placed = next(pod for pod in pods if pod["metadata"]["name"] == "arriving")
    assert placed["spec"]["nodeName"] == report["selected"], (report, placed["spec"]["nodeName"])


async def test_snapshot_filters_and_refuses_a_bad_selector(cluster: LocalCluster, tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    taken = secsched(
        "snapshot",
        f"--kubeconfig={cluster.kubeconfig}",
        "--node-selector=kubernetes.io/hostname=kwok-node-0",
        "--namespace=kube-system",
        "--no-metrics",
        "-o",
        str(out),
    )
    assert taken.returncode == 0, taken.stderr
    document = json.loads(out.read_text())
    assert [node["metadata"]["name"] for node in document["nodes"]] == ["kwok-node-0"]
    assert all(pod["metadata"]["namespace"] == "kube-system" for pod in document["pods"])
    bad = secsched("snapshot", f"--kubeconfig={cluster.kubeconfig}", "--node-selector=a in (", "--no-metrics")
    assert bad.returncode == 2 and "--node-selector" in bad.stderr and "Traceback" not in bad.stderr


async def _ready_status(port: int) -> int | None:
    async with httpx.AsyncClient(verify=False) as client:
        try:
            return (await client.get(f"https://127.0.0.1:{port}/readyz")).status_code
        except httpx.TransportError:
            return None


async def _refused_requests(port: int, code: str) -> float:
    """rest_client_requests_total{code=CODE} of the scheduler serving on `port`."""
    async with httpx.AsyncClient(verify=False) as client:
        text = (await client.get(f"https://127.0.0.1:{port}/metrics")).text
    needle = f'code="{code}"'
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("rest_client_requests_total{") and needle in line
    )


MAX_ERROR_LINES = 20
"""One line per failing informer at first, then at most one a minute each."""


@pytest.mark.parametrize("identity", ["forbidden", "unauthenticated"])
async def test_a_refused_identity_is_logged_and_never_ready(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path, identity: str
) -> None:
    """kube-scheduler logs failed lists as errors and stays unready; so does ours, without a flood."""
    if identity == "forbidden":  # a ServiceAccount with no RBAC at all
        await api.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}},
        )
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        token = (await api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/nobody/token", request))[
            "status"
        ]["token"]
        needle, hint = "forbidden", "system:kube-scheduler"
    else:
        token, needle, hint = "not-a-token", "401", "rejected the credentials"
    kubeconfig = write_token_kubeconfig(tmp_path / "kubeconfig", cluster.api_url, cluster.pki.ca_cert, token)
    config = tmp_path / "config.yaml"
    config.write_text(SECONDARY_CONFIG)
    port = free_port()
    log = tmp_path / "scheduler.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "secondary_scheduler.cli",
                "scheduler",
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                # /metrics without a token: the test reads how many requests were refused.
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        started = time.monotonic()

        async def logged() -> bool:
            return needle in log.read_text() and hint in log.read_text()

        await wait_for(logged, f"an error naming {needle!r} in the log", 30)
        assert time.monotonic() - started < 30
        # Several rounds of retries with backoff: three times as many refused requests as the
        # error lines the log may hold, so that "no flood" below means something.
        code = "403" if identity == "forbidden" else "401"

        async def retried() -> bool:
            return await _refused_requests(port, code) >= 3 * MAX_ERROR_LINES

        await wait_for(retried, f"{3 * MAX_ERROR_LINES} requests refused with {code}", 60)
        assert await _ready_status(port) == 503, "ready without synced informers"
        text = log.read_text()
        errors = [line for line in text.splitlines() if " E " in line]
        assert errors, text
        assert "Traceback" not in text
        # One line per failing informer at first, then at most one a minute each: no flood.
        assert len(errors) <= MAX_ERROR_LINES, "\n".join(errors)
    finally:
        process.terminate()
        process.wait(20)
