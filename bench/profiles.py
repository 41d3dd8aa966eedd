"""Where our scheduler's time goes during a run: py-spy samples its stacks, we sum them up.

py-spy (a sampling profiler that reads the process from outside, so the scheduler runs
unchanged) records every thread's stack 100 times a second while the measured pods are being
scheduled. ``summarise`` turns its collapsed stacks into shares of the busy samples (samples
where the process was running Python, not inside the event loop itself): by function (self
time) and by phase of the scheduler's work (inclusive time). The scheduler runs on uvloop,
whose loop is compiled: a sample inside it (waiting for I/O, or its own socket and TLS work)
ends in the Python frame that started the loop.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

RATE = 100
IDLE_FRAMES = ("Runner.run (asyncio/runners.py", "EpollSelector.select (", "BaseEventLoop._run_once (")
"""Leaf frames of samples inside the event loop: uvloop's, then asyncio's own (older profiles)."""
PHASES = (
    ("scheduling cycles", "schedule_pod (secondary_scheduler/scheduler/schedule_one.py"),
    ("  of which preemption", "Evaluator.preempt (secondary_scheduler/framework/preemption.py"),
    ("binding cycles", "ScheduleOne.binding_cycle (secondary_scheduler/scheduler/schedule_one.py"),
    ("watch events in", "Reflector.run (secondary_scheduler/kube/reflector.py"),
    ("Events out", "EventSender._send (secondary_scheduler/kube/events/sender.py"),
)
"""(phase, a frame that marks it): a sample counts for a phase when its stack holds that frame."""


def py_spy() -> str | None:
    """py-spy next to this interpreter (the dev extra installs it), or on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass
class Profile:
    samples: int = 0
    busy: int = 0
    functions: list[tuple[str, float]] = field(default_factory=list)
    """The top functions by self time, as a share of the busy samples."""
    phases: list[tuple[str, float]] = field(default_factory=list)


class Recorder:
    """py-spy recording one process until ``stop``; does nothing if py-spy is missing."""

    def __init__(self, pid: int, output: Path) -> None:
        self.output = output
        binary = py_spy()
        self._process: subprocess.Popen[bytes] | None = None
        if binary is not None:
            command = [binary, "record", "--pid", str(pid), "--rate", str(RATE), "--format", "raw"]
            command += ["--nonblocking", "--output", str(output)]
            log = open(output.with_suffix(".log"), "wb")  # noqa: SIM115 (closed with the process)
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, top: int = 8) -> Profile | None:
        if self._process is None:
            return None
        self._process.send_signal(signal.SIGINT)  # py-spy writes its output when interrupted
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return None
        if not self.output.exists():
            return None
        return summarise(self.output.read_text().splitlines(), top)


def _frame(text: str) -> str:
    """``Class.function (path:line)`` -> ``Class.function (file`` with the path from the package on."""
    name, _, where = text.partition(" (")
    path = where.split(":")[0]
    if "secondary_scheduler/" in path:
        return f"{name} (secondary_scheduler/{path.split('secondary_scheduler/', 1)[1]}"
    for marker in ("site-packages/", "/src/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3.":
                path = path.split("/", 1)[-1]
            break
    return f"{name} ({path}"


def summarise(lines: list[str], top: int = 8) -> Profile:
    """Shares of busy samples by function (self) and phase, from py-spy's raw (collapsed) lines."""
    functions: Counter[str] = Counter()
    phases: Counter[str] = Counter()
    profile = Profile()
    for line in lines:
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(frame) for frame in stack.split(";")]
        profile.samples += count
        if not frames or frames[-1].startswith(IDLE_FRAMES):
            continue
        profile.busy += count
        functions[frames[-1]] += count
        for phase, marker in PHASES:
            if any(frame.startswith(marker) for frame in frames):
                phases[phase] += count
    if profile.busy:
        profile.functions = [(name + ")", count / profile.busy) for name, count in functions.most_common(top)]
        profile.phases = [(phase, phases[phase] / profile.busy) for phase, _marker in PHASES]
    return profile
