"""Run a scheduler process against a local cluster: ours (`secsched scheduler`) or upstream's.

The demo, the benchmarks and the tests compare our scheduler with the upstream
kube-scheduler (the scheduler-plugins build, with Trimaran) on the same cluster, so both
are started the same way: a config file, a kubeconfig, a serving port, a log file.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx
import yaml

from secsched_devtools.cluster import versions
from secsched_devtools.cluster.localcluster import free_port

OURS = "ours"
UPSTREAM = "upstream"


@dataclass
class SchedulerRun:
    """One running scheduler process."""

    kind: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"https://127.0.0.1:{self.port}{path}", verify=False, timeout=5)

    def metric(self, name: str, labels: str = "") -> float:
        """Sum of a metric's samples whose label text contains `labels` (0 if absent)."""
        total = 0.0
        for line in self.get("/metrics").text.splitlines():
            if line.startswith(name) and line[len(name) : len(name) + 1] in (" ", "{") and labels in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    def tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(self, timeout: float = 90) -> None:
        """Until /readyz answers 200 (caches synced); fails with the log if the process exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.kind} scheduler exited with {self.process.returncode}:\n{self.tail()}"
                )
            try:
                if self.get("/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"{self.kind} scheduler not ready after {timeout:.0f}s:\n{self.tail()}")

    def stop(self, timeout: float = 15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)

    def __enter__(self) -> SchedulerRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_scheduler(
    kind: str,
    config: str,
    kubeconfig: Path | str,
    directory: Path,
    name: str | None = None,
    extra_args: tuple[str, ...] = (),
    wait: bool = True,
) -> SchedulerRun:
    """Start `kind` (OURS or UPSTREAM) with this KubeSchedulerConfiguration text."""
    name = name or kind
    directory.mkdir(parents=True, exist_ok=True)
    config_file = directory / f"{name}.yaml"
    # kube-scheduler ignores --kubeconfig when --config is given: the file must name it.
    document = yaml.safe_load(config)
    document.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
    config_file.write_text(yaml.safe_dump(document, sort_keys=False))
    port = free_port()
    if kind == OURS:
        command = ours_command()
    elif kind == UPSTREAM:
        command = [str(versions.bin_dir() / "kube-scheduler-plugins")]
    else:
        raise ValueError(f"unknown scheduler kind {kind!r}: use {OURS!r} or {UPSTREAM!r}")
    argv = [
        *command,
        f"--config={config_file}",
        f"--kubeconfig={kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        "--v=2",
        *extra_args,
    ]
    # Both delegate authn/authz as kube-scheduler does; /metrics is opened for the tests that read it.
    argv += [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
    ]
    return launch(kind, argv, directory / f"{name}.log", port, wait)


def launch(kind: str, argv: list[str], log: Path, port: int, wait: bool = True) -> SchedulerRun:
    """Start a scheduler process with exactly `argv` (serving on `port`), optionally until ready."""
    with open(log, "wb") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    run = SchedulerRun(kind, process, port, log)
    if wait:
        try:
            run.wait_ready()
        except BaseException:
            run.stop()
            raise
    return run


def ours_command() -> list[str]:
    """How to run `secsched scheduler` with this interpreter (what /bin/kube-scheduler wraps in our image)."""
    return [sys.executable, "-m", "secondary_scheduler.cli", "scheduler"]


COSCHEDULING_PROFILE = """\
    plugins:
      queueSort:
        enabled:
          - name: Coscheduling
        disabled:
          - name: "*"
      preFilter:
        enabled:
          - name: Coscheduling
      postFilter:
        enabled:
          - name: Coscheduling
      permit:
        enabled:
          - name: Coscheduling
      reserve:
        enabled:
          - name: Coscheduling
"""
"""Profile lines (for `scheduler_config`'s `profile_extra`) enabling Coscheduling as
scheduler-plugins' README does; no pluginConfig, so the default args. Both schedulers read it."""


def scheduler_config(
    scheduler_name: str,
    *,
    qps: float = 50,
    burst: int = 100,
    profile_extra: str = "",
    api_version: str = "v1",
) -> str:
    """A one-profile KubeSchedulerConfiguration both schedulers accept (leader election off)."""
    return (
        f"apiVersion: kubescheduler.config.k8s.io/{api_version}\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: false\n"
        f"clientConnection:\n  qps: {qps}\n  burst: {burst}\n"
        f"profiles:\n  - schedulerName: {scheduler_name}\n{profile_extra}"
    )


def single_plugin_config(
    plugin: str, prometheus_url: str, extra_args: str = "", scheduler_name: str = "secondary-scheduler"
) -> str:
    """A profile scored by one load-aware `plugin` alone, reading `prometheus_url`.

    Both schedulers read it (kubescheduler.config.k8s.io/v1), so a placement is that
    plugin's decision and nobody else's. `extra_args`: more YAML lines for the plugin's args,
    indented ten spaces.
    """
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: {scheduler_name}
    plugins:
      score:
        disabled:
          - name: "*"
        enabled:
          - name: {plugin}
    pluginConfig:
      - name: {plugin}
        args:
          metricProvider:
            type: Prometheus
            address: {prometheus_url}
{extra_args}"""
