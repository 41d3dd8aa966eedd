"""The cluster's child processes: started with their logs, waited for until ready, restarted and
stopped by pid, each recorded in the cluster's state file as soon as it starts.

`processes` knows one process; this knows the cluster's set of them: the order they started
(stopped newest first), their environment (GOGC for the control plane's Go programs when the
options ask), and a readiness wait that fails with the component's log when it exits instead.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

import httpx

from secsched_devtools.cluster import processes
from secsched_devtools.cluster.layout import ClusterError, ClusterLayout
from secsched_devtools.cluster.processes import ProcessRecord

GO_CONTROL_PLANE = frozenset({"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "prometheus"})
"""The processes `ClusterOptions.control_plane_gogc` applies to: the cluster's own Go programs,
not the schedulers under test."""


class Supervisor:
    """Start, wait for, restart and stop one cluster's processes, keeping its state file current."""

    def __init__(self, layout: ClusterLayout) -> None:
        self.layout = layout
        self.records: dict[str, ProcessRecord] = {}
        """Every process this cluster started (or a previous command did, once attached), in order."""
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        """Those this very process started: it reaps them, and sees at once when one exits."""

    def save(self) -> None:
        self.layout.write_state(self.records.values())

    def environment(self, name: str) -> dict[str, str] | None:
        """The environment process `name` starts with: ours, plus GOGC where the options set it."""
        gogc = self.layout.options.control_plane_gogc
        if gogc is None or name not in GO_CONTROL_PLANE:
            return None
        return {**os.environ, "GOGC": str(gogc)}

    def launch(self, name: str, argv: list[str]) -> None:
        child, record = processes.start(name, argv, self.layout.logs, self.environment(name))
        self.children[name] = child
        self.records[name] = record
        self.save()

    def wait(self, name: str, probe: Callable[[], bool], timeout: float = 60.0) -> None:
        """Poll `probe` until it holds; fail with the component's log if it exits or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.children[name].poll() is not None:
                raise ClusterError(
                    f"{name} exited with code {self.children[name].returncode}:\n"
                    f"{processes.log_tail(self.records[name])}"
                )
            try:
                if probe():
                    return
            except (httpx.HTTPError, OSError):
                pass
            time.sleep(0.2)
        raise ClusterError(
            f"{name} did not become ready in {timeout:.0f}s:\n{processes.log_tail(self.records[name])}"
        )

    def running(self, name: str) -> bool:
        return name in self.records and processes.is_running(self.records[name])

    def restart(self, name: str, downtime: float = 0.0, hard: bool = False) -> None:
        """Stop one process (SIGTERM; `hard`: SIGKILL, a crash), wait `downtime` seconds, start it
        again with the same arguments."""
        record = self.records[name]
        if hard:
            processes.kill(record)
        else:
            processes.stop(record)
        if name in self.children:
            self.children[name].wait()
        time.sleep(downtime)
        self.launch(name, record.argv)

    def signal(self, name: str, signum: int) -> None:
        """Send one signal to a running process of this cluster (the chaos run's SIGSTOP/SIGCONT)."""
        record = self.records[name]
        if not processes.is_running(record):
            raise ClusterError(f"{name} is not running: cannot send it signal {signum}")
        os.kill(record.pid, signum)

    def stop(self, names: tuple[str, ...]) -> list[str]:
        """Stop those of `names` that run and forget them (the rest keeps running); returns the
        names stopped."""
        stopped = []
        for name in names:
            record = self.records.pop(name, None)
            if record is not None and processes.is_running(record):
                processes.stop(record)
                stopped.append(name)
            self._reap(name)
        if self.layout.state_file.exists():
            self.save()
        return stopped

    def stop_all(self) -> list[str]:
        """Stop every process this cluster started, newest first; returns their names."""
        stopped = []
        for name in reversed(list(self.records)):
            record = self.records[name]
            if processes.is_running(record):
                processes.stop(record)
                stopped.append(name)
        for name in list(self.children):
            self._reap(name)
        return stopped

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            name: {"pid": record.pid, "running": processes.is_running(record), "log": record.log}
            for name, record in self.records.items()
        }

    def _reap(self, name: str) -> None:
        child = self.children.pop(name, None)
        if child is not None:
            if child.poll() is None:  # pragma: no cover - processes.stop() has already ended it
                child.kill()
            child.wait()
