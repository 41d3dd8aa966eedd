"""Hostile input on a real control plane: the operator given ConfigMaps built to exhaust it.

Anyone who may edit a ConfigMap in the operator's namespace writes text the operator parses.
Here the operator runs as its own process (`secsched operator run`, so its peak memory can be
read from /proc) in a namespace of its own, and the ConfigMap its CR names becomes, in turn, a
"billion laughs" alias bomb, a merge-key bomb and a 20,000-level nesting. Each time the
operator must set Degraded=True (ConfigInvalid) with a message naming the problem and its line,
deploy nothing, stay alive and ready, and keep its peak memory near its idle size.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.operator import names
from secsched_devtools.cluster.localcluster import LocalCluster, free_port

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "deploy" / "00_secondary-scheduler-operator.crd.yaml"
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
PEAK_RSS_LIMIT_MIB = 400
"""Far above the operator's idle size (~150 MiB), far below what one expanded bomb takes (GiBs)."""


def laughs() -> str:
    """Nine levels of nine aliases each: 9**9 (387 million) strings once expanded, 700 bytes written."""
    lines = [HEADER.rstrip("\n"), 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 9):
        lines.append(f"l{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def merge_keys() -> str:
    """The same through `<<:` merges of mappings, which PyYAML flattens by copying."""
    lines = [HEADER.rstrip("\n"), "m0: &m0 {" + ", ".join(f"k{i}: {i}" for i in range(9)) + "}"]
    for level in range(1, 9):
        lines.append(f"m{level}: &m{level} {{" + ", ".join(f"x{i}: *m{level - 1}" for i in range(9)) + "}")
    return "\n".join(lines) + "\n"


def nesting() -> str:
    return HEADER + "profiles: " + "[" * 20_000 + "]" * 20_000 + "\n"


BOMBS = [
    ("laughs", laughs(), "aliases"),
    ("merge-keys", merge_keys(), "aliases"),
    ("nesting", nesting(), "nested more than"),
]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc status")


async def kubectl(cluster: LocalCluster, *args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        cluster.binary("kubectl"),
        *args,
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode == 0, output.decode()


@pytest.fixture
async def operator_process(
    cluster: LocalCluster, api: ApiClient, tmp_path: Path
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes], int]]:
    """`secsched operator run` in a namespace of its own, with a readiness endpoint; stopped after."""
    await kubectl(cluster, "apply", "-f", str(CRD))

    async def established() -> bool:
        crd = await api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{names.CRD_NAME}")
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        )

    await wait_for(established, "the CRD to be established", 30)
    namespace = f"hostile-{uuid.uuid4().hex[:8]}"
    await api.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    port = free_port()
    log = (tmp_path / "operator.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secondary_scheduler.cli",
            "operator",
            "run",
            f"--namespace={namespace}",
            f"--kubeconfig={cluster.kubeconfig}",
            "--resync=2",
            f"--readiness=http://127.0.0.1:{port}/readyz",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield namespace, process, port
    finally:
        cr = f"/apis/{names.GROUP}/{names.VERSION}/namespaces/{namespace}/{names.PLURAL}/cluster"
        try:
            await api.delete(cr)
            await wait_for(lambda: _gone(api, cr), "the CR to be finalized", 30)
        except ApiError as error:
            if not error.not_found:
                raise
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
            await api.delete(f"/api/v1/namespaces/{namespace}")


async def _gone(api: ApiClient, path: str) -> bool:
    try:
        await api.get(path)
    except ApiError as error:
        if error.not_found:
            return True
        raise
    return False


async def _degraded(api: ApiClient, namespace: str, needle: str) -> dict[str, Any] | None:
    cr = await api.get(f"/apis/{names.GROUP}/{names.VERSION}/namespaces/{namespace}/{names.PLURAL}/cluster")
    for condition in (cr.get("status") or {}).get("conditions") or []:
        if (
            condition["type"] == "Degraded"
            and condition["status"] == "True"
            and needle in condition["message"]
        ):
            return dict(condition)
    return None


async def _resyncs_after(log: Path, count: int) -> None:
    """Until the operator has logged `count` more periodic resyncs than now: the second one
    began after the first one's reconcile (reconciles run one at a time), so it re-read the CR."""
    start = log.read_text().count("periodic resync")

    async def done() -> bool:
        return log.read_text().count("periodic resync") >= start + count

    await wait_for(done, f"{count} periodic resyncs of the operator", 60, interval=0.2)


async def test_the_operator_refuses_yaml_bombs_and_stays_small(
    api: ApiClient, operator_process: tuple[str, subprocess.Popen[bytes], int], tmp_path: Path
) -> None:
    namespace, process, port = operator_process
    log = tmp_path / "operator.log"
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    await api.create(
        configmaps,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "bomb"},
            "data": {"config.yaml": BOMBS[0][1]},
        },
    )
    await api.create(
        f"/apis/{names.GROUP}/{names.VERSION}/namespaces/{namespace}/{names.PLURAL}",
        {
            "apiVersion": names.API_VERSION,
            "kind": names.KIND,
            "metadata": {"name": "cluster", "namespace": namespace},
            # Debug: the operator logs each periodic resync, which the test waits for.
            "spec": {"managementState": "Managed", "schedulerConfig": "bomb", "operatorLogLevel": "Debug"},
        },
    )

    async def ready() -> bool:
        async with httpx.AsyncClient() as client:
            try:
                return (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
            except httpx.TransportError:
                return False

    await wait_for(ready, "the operator to be ready (a reconcile done)", 60)
    idle = peak_rss_mib(process.pid)
    for index, (name, text, needle) in enumerate(BOMBS):
        assert len(text.encode()) < 1024 * 1024, f"{name}: a ConfigMap holds at most 1 MiB"
        if index:
            await api.patch(f"{configmaps}/bomb", {"data": {"config.yaml": text}})
        try:
            condition = await wait_for(
                lambda needle=needle: _degraded(api, namespace, needle),  # type: ignore[misc]
                f"Degraded=True naming the {name} bomb",
                60,
            )
        except TimeoutError:
            cr = await api.get(
                f"/apis/{names.GROUP}/{names.VERSION}/namespaces/{namespace}/{names.PLURAL}/cluster"
            )
            raise AssertionError(f"{name}: conditions {cr.get('status')}") from None
        assert condition["reason"] == "ConfigInvalid", condition
        assert "configmap/bomb:config.yaml:" in condition["message"], condition["message"]
        await _resyncs_after(log, 2)  # the periodic resyncs (every 2 s) parse it again
        assert process.poll() is None, f"the operator exited ({process.returncode}) on the {name} bomb"
        assert await ready(), f"the operator is not ready after the {name} bomb"
        peak = peak_rss_mib(process.pid)
        assert peak < PEAK_RSS_LIMIT_MIB, f"{name}: peak RSS {peak:.0f} MiB (idle {idle:.0f} MiB)"
    deployments = await api.list_all(f"/apis/apps/v1/namespaces/{namespace}/deployments")
    assert deployments["items"] == [], "a bomb config must never be rolled out"
    print(f"operator peak RSS: idle {idle:.0f} MiB, after every bomb {peak_rss_mib(process.pid):.0f} MiB")
