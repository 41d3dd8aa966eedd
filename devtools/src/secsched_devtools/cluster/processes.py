"""Start, track and stop the cluster's processes by pid, and only those.

Each process is started in its own session with its output in a log file, and recorded
with its pid and its start time (from /proc), so that `cluster down` can tell our process
from an unrelated one that later got the same pid. Nothing is ever killed by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessRecord:
    """What we need to find a started process again, even from another command."""

    name: str
    pid: int
    start_ticks: int  # field 22 of /proc/<pid>/stat: identifies this incarnation of the pid
    log: str
    argv: list[str]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> ProcessRecord:
        return cls(
            name=str(data["name"]),
            pid=int(str(data["pid"])),
            start_ticks=int(str(data["start_ticks"])),
            log=str(data["log"]),
            argv=[str(arg) for arg in data["argv"]],  # type: ignore[attr-defined]
        )


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; the fields after its ')' are fixed.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has finished; only its exit status is left to collect
        return None
    return int(fields[19])


def start(
    name: str, argv: list[str], log_dir: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], ProcessRecord]:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    ticks = _start_ticks(process.pid) or 0
    return process, ProcessRecord(name, process.pid, ticks, str(log_path), argv)


def is_running(record: ProcessRecord) -> bool:
    ticks = _start_ticks(record.pid)
    return ticks is not None and ticks == record.start_ticks


def stop(record: ProcessRecord, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `timeout`; a pid that is no longer ours is left alone."""
    if not is_running(record):
        return
    try:
        os.kill(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(record.pid)
        if not is_running(record):
            return
        time.sleep(0.05)
    kill(record)


def kill(record: ProcessRecord, timeout: float = 5.0) -> None:
    """SIGKILL at once, as a crash would (no chance to clean up), and wait until it is gone; a pid
    that is no longer ours is left alone."""
    if not is_running(record):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while is_running(record) and time.monotonic() < deadline:
        _reap(record.pid)
        time.sleep(0.02)


def _reap(pid: int) -> None:
    """Collect the exit status of a child of ours so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def log_tail(record: ProcessRecord, lines: int = 25) -> str:
    try:
        text = Path(record.log).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
