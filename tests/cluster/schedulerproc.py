"""Run our scheduler as a real process against the local cluster, as a pod would run it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from secondary_scheduler.cluster.localcluster import free_port
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for

SECONDARY_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 500
  burst: 1000
profiles:
  - schedulerName: secondary-scheduler
"""


class SchedulerProcess:
    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"https://127.0.0.1:{self.port}{path}", verify=False, timeout=5)

    def metric(self, name: str, labels: str = "") -> float:
        """Sum of a metric's samples whose label text contains `labels`."""
        total = 0.0
        for line in self.get("/metrics").text.splitlines():
            if line.startswith(name) and (line[len(name)] in " {") and labels in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"scheduler exited with {self.process.returncode}:\n{self.tail()}")
            try:
                if self.get("/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"scheduler not ready after {timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return (
            "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""
        )

    def terminate(self, timeout: float = 15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


@contextmanager
def running_scheduler(
    kubeconfig: Path | str,
    directory: Path,
    config: str = SECONDARY_CONFIG,
    *args: str,
    name: str = "scheduler",
    wait: bool = True,
) -> Iterator[SchedulerProcess]:
    """Start `secsched scheduler` with the config and kube-scheduler flags; SIGTERM it afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    config_file = directory / f"{name}.yaml"
    config_file.write_text(config)
    port = free_port()
    log = directory / f"{name}.log"
    argv = [
        sys.executable,
        "-m",
        "secondary_scheduler.cli",
        "scheduler",
        f"--config={config_file}",
        f"--kubeconfig={kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        "-v=2",
        *args,
    ]
    with open(log, "wb") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=dict(os.environ))
    proc = SchedulerProcess(process, port, log)
    try:
        if wait:
            proc.wait_ready()
        yield proc
    finally:
        proc.terminate()


def pod_manifest(
    name: str, scheduler: str = "secondary-scheduler", cpu: str = "100m", memory: str = "128Mi", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name.rsplit("-", 1)[0]}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }


async def create_pods(
    api: ApiClient, namespace: str, pods: list[dict[str, Any]], concurrency: int = 32
) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def create(pod: dict[str, Any]) -> None:
        async with gate:
            await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    await asyncio.gather(*(create(pod) for pod in pods))


async def wait_all_bound(
    api: ApiClient, namespace: str, count: int, timeout: float = 120
) -> list[dict[str, Any]]:
    async def bound() -> list[dict[str, Any]] | None:
        pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
        done = [pod for pod in pods if pod["spec"].get("nodeName")]
        return pods if len(done) >= count else None

    return await wait_for(bound, f"{count} pods in {namespace} to be bound", timeout=timeout, interval=0.5)


async def scheduled_events(api: ApiClient, namespace: str) -> list[dict[str, Any]]:
    events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
    return [event for event in events if event.get("reason") == "Scheduled"]
