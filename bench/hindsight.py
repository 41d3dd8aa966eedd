"""HindsightBalance: a replay-only Score plugin that knows the future, to bound what placement can do.

Issue 38 asks a load-aware plugin for at most 0.5x the best anchor's node-minutes over target in
replay. Whether any placement that decides pod by pod can reach that on a given trace is a fact of
the trace, not of a plugin, and this plugin measures it: it reads the very trace being replayed and
so knows what every pod will use at every sample until it leaves (its level, its daily peak, its
noise: everything no real scheduler can know). Each pod goes to the node whose use over the next
``horizonSeconds`` with the pod on it stays furthest under the target (``objective: Peak``), or
adds the fewest samples over the target (``objective: OverTarget``); it sees the pods that arrive
later only when they arrive, as every online scheduler does, and never moves a pod.

For comparison only (docs/benchmarks.md, "Load-aware placement in replay"): it is not shipped and
takes no metrics. Load it with ``--plugin bench.hindsight:HindsightBalance`` from the repository
root (PYTHONPATH=.), its args naming the same ``trace`` as ``--trace``
(examples/replay/hindsight.yaml).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin
from secondary_scheduler.replay.clock import DEFAULT_EPOCH
from secondary_scheduler.replay.trace import PodArrival, UsageBatch, UsageSample, open_trace

Cores = npt.NDArray[np.float32]
"""A pod's CPU use in cores per step of the grid (float32: a week of 15,000 pods is ~120 MB)."""
Load = npt.NDArray[np.float64]
"""Per node (rows) and step of the grid (columns): cores, or percent of the node's CPU."""


class TraceBoundArgs(TrimaranArgs):
    """What every replay bound reading the replayed trace is told (this one and podmetricsbound's)."""

    trace: str = Field(description="The trace being replayed (the same as --trace).")
    trace_format: Literal["secsched", "azure"] = "secsched"
    horizon_seconds: float = Field(86400.0, gt=0, description="How far ahead a node's use is looked at.")
    step_seconds: float = Field(300.0, gt=0, description="The time grid (the traces' sample interval).")
    target_utilization: float = Field(70.0, gt=0, le=100)


class HindsightArgs(TraceBoundArgs):
    objective: Literal["Peak", "OverTarget"] = "Peak"
    know_new_pod: bool = Field(
        True,
        description="Know the placed pod's own future; false: charge it its class's mean use at each "
        "step (what a scheduler with perfect metrics of the running pods could know of a new one).",
    )


class FutureUse:
    """Every pod's CPU use (cores) on a time grid, from the trace: a sample holds until the next one,
    and nothing after the pod's end."""

    def __init__(self, path: Path, trace_format: Literal["secsched", "azure"], step: float) -> None:
        trace = open_trace(path, trace_format)
        self.epoch = trace.header.start if trace.header.start > 0 else DEFAULT_EPOCH
        self.step = step
        columns: dict[str, int] = {}
        classes: dict[str, list[int]] = {}
        ends: list[float] = []
        starts: list[float] = []
        times: list[float] = []
        cols: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for record in trace.stream():
            if type(record) is PodArrival:
                column = columns.setdefault(record.key, len(columns))
                classes.setdefault(record.instance_type or record.owner or "", []).append(column)
                starts.append(record.t)
                ends.append(math.inf if record.end is None else record.end)
            elif type(record) is UsageBatch:
                times.append(record.t)
                keys = record.keys
                cols.append(np.fromiter((columns[k] for k in keys), dtype=np.int64, count=len(keys)))
                values.append(np.asarray(record.cpu, dtype=np.float32))
            elif type(record) is UsageSample:
                times.append(record.t)
                cols.append(np.array([columns[record.key]], dtype=np.int64))
                values.append(np.array([record.cpu], dtype=np.float32))
        last = max(times, default=0.0)
        self.steps = int(last // step) + 2
        use = np.full((self.steps, len(columns)), np.nan, dtype=np.float32)
        for t, col, value in zip(times, cols, values, strict=True):
            use[int(t // step), col] = value
        # forward-fill each pod's last sample, then zero it before its first and after its end
        filled = ~np.isnan(use)
        index = np.where(filled, np.arange(self.steps)[:, None], 0)
        np.maximum.accumulate(index, axis=0, out=index)
        use = np.take_along_axis(use, index, axis=0)
        self.first = (np.array(starts, dtype=np.float64) // step).astype(np.int64)
        """Each pod's first step on the grid."""
        grid = np.arange(self.steps)[:, None] * step
        alive = (grid >= self.first[None, :] * step) & (grid < np.array(ends)[None, :])
        use[~alive | np.isnan(use)] = 0.0
        self.use = use
        self.columns = columns
        self.class_of = np.zeros(len(columns), dtype=np.int64)
        """Each pod's class (its instance type, else its owner) as a number below ``class_count``."""
        self.class_count = len(classes)
        for number, members in enumerate(classes.values()):
            self.class_of[members] = number
        self.class_mean: dict[int, Cores] = {}
        for members in classes.values():
            rows = use[:, members]
            alive_count = (rows > 0).sum(axis=1)
            mean = rows.sum(axis=1) / np.maximum(alive_count, 1)
            for column in members:
                self.class_mean[column] = mean

    def expected(self, key: str) -> Cores | None:
        """The mean use of the pod's class at each step: its instance type, else its owner."""
        column = self.columns.get(key)
        return None if column is None else self.class_mean[column]

    def of(self, key: str) -> Cores | None:
        """The pod's use at every step of the grid (None: not in the trace)."""
        column = self.columns.get(key)
        return None if column is None else self.use[:, column]


class NodeFutures:
    """A NodeTable index: per slot, the summed future use of the pods on it."""

    def __init__(self, table: NodeTable, future: FutureUse) -> None:
        self.future = future
        self.load = np.zeros((max(table.capacity, 1), future.steps), dtype=np.float64)
        for pod, slot in table.all_pods():
            self.pod_placed(slot, pod, {})

    def _add(self, slot: int, pod: PodInfo, sign: float) -> None:
        use = self.future.of(pod.key)
        if use is None:
            return
        if slot >= len(self.load):
            grown = np.zeros((2 * slot + 1, self.load.shape[1]))
            grown[: len(self.load)] = self.load
            self.load = grown
        self.load[slot] += sign * use

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._add(slot, pod, 1.0)

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None:
        self._add(slot, pod, -1.0)


class TraceBound(TrimaranPlugin, ScorePlugin):
    """A Score plugin for comparison only that reads the replayed trace (``args.trace``) on the
    replay's clock, keeps its per-node state in a NodeTable index of its own, and scores nodes by
    their use ahead (``score_by_peak``)."""

    args: TraceBoundArgs

    def __init__(self, args: TraceBoundArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args
        self.clock = self.view.collector.clock
        self.future = FutureUse(Path(args.trace), args.trace_format, args.step_seconds)
        self._index = f"{self.name}/{id(self)}"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return ()

    def now_step(self) -> int:
        """The replay's now as a step of the trace's grid."""
        return int((self.clock() - self.future.epoch) // self.args.step_seconds)

    def percent(
        self, table: NodeTable, nodes: Slots, load: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """``load`` (cores per node and step) as percent of each node's allocatable CPU."""
        cores = table.allocatable[nodes, CPU_COLUMN].astype(np.float64) / 1000.0
        return 100.0 * load / np.where(cores > 0, cores, 1.0)[:, None]

    def score_by_peak(self, percent: Load) -> IntArray:
        """50-100 for a node whose use ahead peaks under the target (the lower the better), below
        49 for one that crosses it (the further over, the lower)."""
        target = self.args.target_utilization
        peak = percent.max(axis=1, initial=0.0)
        fits = np.clip(100.0 - peak * 50.0 / target, 50.0, 100.0)
        worse = np.maximum(0.0, 49.0 - (peak - target))
        return np.floor(np.where(peak > target, worse, fits)).astype(np.int64)


class HindsightBalance(TraceBound):
    name: ClassVar[str] = "HindsightBalance"
    args_model = HindsightArgs
    args: HindsightArgs

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        futures = table.index(self._index, lambda t: NodeFutures(t, self.future))
        now = self.now_step()
        ahead = slice(now, now + max(1, int(self.args.horizon_seconds // self.args.step_seconds)))
        mine = self.future.of(pod.key) if self.args.know_new_pod else self.future.expected(pod.key)
        load = futures.load[nodes, ahead]
        if mine is not None:
            load = load + mine[ahead][None, :]
        percent = self.percent(table, nodes, load)
        if self.args.objective == "Peak":
            return self.score_by_peak(percent)
        target = self.args.target_utilization
        fits = np.clip(100.0 - percent.max(axis=1, initial=0.0) * 50.0 / target, 50.0, 100.0)
        before = self.percent(table, nodes, futures.load[nodes, ahead])
        added = (percent > target).sum(axis=1) - (before > target).sum(axis=1)
        worse = np.maximum(0.0, 49.0 - 49.0 * added / max(1, percent.shape[1]))
        return np.floor(np.where(added > 0, worse, fits)).astype(np.int64)
