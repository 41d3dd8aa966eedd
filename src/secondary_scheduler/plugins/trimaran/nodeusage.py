"""Node metrics as the plugins need them in a cycle: arrays aligned with the scored nodes.

A snapshot is parsed into arrays once (``SnapshotIndex``, cached by the snapshot's
identity), and mapped onto the NodeTable's slots once per snapshot or node set, so a
scheduling cycle only gathers rows. The view also applies our policy on top of upstream's
maths: a snapshot older than metricsStalenessLimit is not trusted, and nodes without
metrics can be estimated from their requests (``Estimate``) instead of scored 0. What it
finds missing is logged once per node or series (not once per cycle) and exported as gauges.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, Slots
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.resources import CPU_COLUMN, MEMORY_COLUMN
from secondary_scheduler.plugins.trimaran.args import PROMETHEUS, TrimaranArgs
from secondary_scheduler.plugins.trimaran.collector import MetricsCollector, Snapshot
from secondary_scheduler.plugins.trimaran.notes import MetricsNote
from secondary_scheduler.plugins.trimaran.providers import YIELD_EVERY, NodeReadings
from secondary_scheduler.plugins.trimaran.providers.prometheus import SERIES_OF
from secondary_scheduler.plugins.trimaran.resourcestats import safe_divide
from secondary_scheduler.plugins.trimaran.targetloadpacking.scoring import node_cpu_percent
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    CPU,
    MEMORY,
    Metric,
    ResourceData,
    ResourceDataArrays,
    WatcherMetrics,
    node_metrics_list,
    resource_data,
)

log = logging.getLogger(__name__)

RESOURCES = {"cpu": CPU, "memory": MEMORY}
"""Resource name (as in requests, logs and metrics) -> the metric type load-watcher uses."""
_NO_DATA = ResourceData(avg=0.0, stdev=0.0, valid=False)
_SHOWN_NODES = 10


@dataclass(frozen=True)
class UsagePolicy:
    """How far to trust metrics: our extensions, or upstream's behaviour exactly (parityMode)."""

    staleness_limit: float | None
    """Seconds; None trusts a snapshot of any age."""
    fallback: bool
    """Estimate nodes without metrics from their requests."""

    @classmethod
    def of(cls, args: TrimaranArgs) -> UsagePolicy:
        if args.parity_mode:
            return cls(staleness_limit=None, fallback=False)
        return cls(staleness_limit=args.metrics_staleness_limit, fallback=args.fallback_to_requests)


@dataclass(frozen=True)
class SnapshotIndex:
    """One snapshot's metrics as arrays: a row per node in it, then a last row meaning "no metrics"."""

    row_of: dict[str, int]
    cpu: ResourceDataArrays
    memory: ResourceDataArrays
    cpu_percent: FloatArray
    """TargetLoadPacking's reading of CPU (last AVG or Latest); NaN where there is none."""
    has_metrics: BoolArray
    missing_series: tuple[str, ...]
    """Resources no node has any metric of, though the snapshot has nodes (or has none at all)."""

    @classmethod
    def build(cls, metrics: WatcherMetrics | None) -> SnapshotIndex:
        """Parse a snapshot (None: no metrics at all) into arrays; done once per snapshot."""
        names = list(metrics.data.node_metrics_map) if metrics is not None else []
        return cls._assemble(metrics, names, _parse_rows(node_metrics_list(metrics, names)))

    @classmethod
    async def build_yielding(cls, metrics: WatcherMetrics, every: int = YIELD_EVERY) -> SnapshotIndex:
        """``build``, yielding to the event loop every ``every`` nodes (a refresh prepares the index
        this way, so that the first scheduling cycle on a new snapshot does not parse it)."""
        names = list(metrics.data.node_metrics_map)
        lists = node_metrics_list(metrics, names)
        rows: list[_Row] = []
        for start in range(0, len(lists), every):
            rows += _parse_rows(lists[start : start + every])
            await asyncio.sleep(0)
        return cls._assemble(metrics, names, rows)

    @classmethod
    def of_readings(cls, readings: NodeReadings, row_of: dict[str, int] | None = None) -> SnapshotIndex:
        """The index of a ``ReadingsProvider``'s snapshot: its arrays as they are, nothing parsed.

        ``row_of`` is the name -> row map of ``readings.names`` when the caller has it already.
        """
        if row_of is None:
            row_of = {name: row for row, name in enumerate(readings.names)}
        count = len(readings.names)
        return cls._of_arrays(
            row_of,
            _with_no_metrics_row(readings.cpu),
            _with_no_metrics_row(readings.memory),
            np.append(readings.cpu_percent, np.nan),
            np.arange(count + 1) < count,
            measured=True,
        )

    @classmethod
    def _assemble(cls, metrics: WatcherMetrics | None, names: list[str], rows: list[_Row]) -> SnapshotIndex:
        rows = [*rows, _NO_ROW]  # the last row: no metrics
        return cls._of_arrays(
            {name: row for row, name in enumerate(names)},
            _arrays([row[0] for row in rows]),
            _arrays([row[1] for row in rows]),
            np.array([np.nan if row[2] is None else row[2] for row in rows], dtype=np.float64),
            np.array([row[3] for row in rows], dtype=np.bool_),
            measured=metrics is not None,
        )

    @classmethod
    def _of_arrays(
        cls,
        row_of: dict[str, int],
        cpu: ResourceDataArrays,
        memory: ResourceDataArrays,
        cpu_percent: FloatArray,
        has_metrics: BoolArray,
        *,
        measured: bool,
    ) -> SnapshotIndex:
        """The index of these arrays (their last row the "no metrics" one); ``measured``: a snapshot
        was fetched (without one, no series counts as missing)."""
        missing: tuple[str, ...] = ()
        if measured:
            valid = {"cpu": cpu.valid[:-1], "memory": memory.valid[:-1]}
            missing = tuple(resource for resource, found in valid.items() if not found.any())
        return cls(
            row_of=row_of,
            cpu=cpu,
            memory=memory,
            cpu_percent=cpu_percent,
            has_metrics=has_metrics,
            missing_series=missing,
        )

    @property
    def no_metrics_row(self) -> int:
        return len(self.row_of)


_Row = tuple[ResourceData, ResourceData, float | None, bool]
"""A node's parsed metrics: its cpu and memory data, TargetLoadPacking's CPU reading, and whether
it has any metrics."""
_NO_ROW: _Row = (_NO_DATA, _NO_DATA, None, False)


def _parse_rows(lists: Sequence[Sequence[Metric] | None]) -> list[_Row]:
    """Per node's metrics (None: it has none), its parsed row."""
    return [
        _NO_ROW if m is None else (resource_data(m, CPU), resource_data(m, MEMORY), node_cpu_percent(m), True)
        for m in lists
    ]


def _arrays(rows: Sequence[ResourceData]) -> ResourceDataArrays:
    return ResourceDataArrays(
        avg=np.array([row.avg for row in rows], dtype=np.float64),
        stdev=np.array([row.stdev for row in rows], dtype=np.float64),
        valid=np.array([row.valid for row in rows], dtype=np.bool_),
    )


def _with_no_metrics_row(data: ResourceDataArrays) -> ResourceDataArrays:
    return ResourceDataArrays(
        avg=np.append(data.avg, _NO_DATA.avg),
        stdev=np.append(data.stdev, _NO_DATA.stdev),
        valid=np.append(data.valid, _NO_DATA.valid),
    )


def _gather(data: ResourceDataArrays, rows: IntArray) -> ResourceDataArrays:
    return ResourceDataArrays(avg=data.avg[rows], stdev=data.stdev[rows], valid=data.valid[rows])


@dataclass(frozen=True)
class Estimate:
    """Load estimated from requests: each node's requested / allocatable, in percent."""

    cpu: FloatArray
    memory: FloatArray

    @classmethod
    def of(cls, table: NodeTable, nodes: Slots) -> Estimate:
        requested = table.requested[nodes][:, [CPU_COLUMN, MEMORY_COLUMN]].astype(np.float64)
        allocatable = table.allocatable[nodes][:, [CPU_COLUMN, MEMORY_COLUMN]].astype(np.float64)
        percent = safe_divide(100 * requested, allocatable, allocatable > 0)
        return cls(cpu=percent[:, 0], memory=percent[:, 1])


@dataclass(frozen=True)
class NodeUsage:
    """The scored nodes' measured load (rows aligned with ``nodes``) and how it may be completed.

    The per-node arrays are gathered from the snapshot's index when first read, and the
    requests-based estimate computed when first read, so a plugin pays only for what it uses.
    """

    source: str
    snapshot: Snapshot | None
    """The snapshot the values come from; None when there is none or it is not trusted."""
    window: str | None
    """The newest snapshot's window, trusted or not."""
    age_seconds: float | None
    stale: bool
    policy: UsagePolicy
    missing_series: tuple[str, ...]
    index: SnapshotIndex = field(repr=False, compare=False)
    """The snapshot's arrays (the trusted snapshot's; an empty index when none is trusted)."""
    rows: IntArray = field(repr=False, compare=False)
    """Per scored node, its row in ``index``."""
    table: NodeTable = field(repr=False, compare=False)
    nodes: Slots = field(repr=False, compare=False)

    @cached_property
    def cpu(self) -> ResourceDataArrays:
        return _gather(self.index.cpu, self.rows)

    @cached_property
    def memory(self) -> ResourceDataArrays:
        return _gather(self.index.memory, self.rows)

    @cached_property
    def cpu_percent(self) -> FloatArray:
        """TargetLoadPacking's reading of CPU per scored node; NaN where there is none."""
        return self.index.cpu_percent[self.rows]

    @cached_property
    def has_metrics(self) -> BoolArray:
        return self.index.has_metrics[self.rows]

    @cached_property
    def estimate(self) -> Estimate | None:
        """Requests-based load, when the policy falls back to it; None otherwise."""
        return Estimate.of(self.table, self.nodes) if self.policy.fallback else None

    @property
    def window_end(self) -> int:
        return self.snapshot.metrics.window.end if self.snapshot is not None else 0

    def filled(self, resource: str) -> tuple[ResourceDataArrays, BoolArray]:
        """A resource's data with estimates where it has no metrics, and which entries are estimates."""
        data = self.cpu if resource == "cpu" else self.memory
        if self.estimate is None:
            return data, np.zeros(data.valid.shape, dtype=np.bool_)
        estimated = ~data.valid
        guess = self.estimate.cpu if resource == "cpu" else self.estimate.memory
        completed = ResourceDataArrays(
            avg=np.where(estimated, guess, data.avg),
            stdev=np.where(estimated, 0.0, data.stdev),
            valid=np.ones(data.valid.shape, dtype=np.bool_),
        )
        return completed, estimated

    def note(
        self,
        plugin: str,
        table: NodeTable,
        nodes: Slots,
        estimated: Mapping[str, BoolArray],
        unmeasured: BoolArray,
        recent: Mapping[str, int] | None = None,
    ) -> MetricsNote:
        """The cycle's note for ``plugin``: flags are aligned with ``nodes`` (slots of ``table``).

        ``estimated`` has a mask for each resource the plugin uses: which loads came from requests.
        """
        return MetricsNote(
            plugin=plugin,
            source=self.source,
            window=self.window,
            age_seconds=self.age_seconds,
            stale=self.stale,
            staleness_limit=self.policy.staleness_limit,
            missing_series=tuple(resource for resource in self.missing_series if resource in estimated),
            estimated={
                resource: tuple(table.names[slot] for slot in nodes[mask])
                for resource, mask in estimated.items()
                if mask.any()
            },
            unmeasured=tuple(table.names[slot] for slot in nodes[unmeasured]),
            recent=dict(recent or {}),
        )


class NodeMetricsView:
    """One collector's snapshots, as arrays over a NodeTable; shared by every plugin using that source."""

    def __init__(self, collector: MetricsCollector, telemetry: TrimaranMetrics, source_kind: str) -> None:
        self.collector = collector
        self.telemetry = telemetry
        self.source_kind = source_kind
        self._indexed: WatcherMetrics | None = None
        self._index = SnapshotIndex.build(None)
        self._prepared: tuple[WatcherMetrics, SnapshotIndex] | None = None
        """The index of the newest fetched snapshot, built by the refresh before it is handed out."""
        self._readings_rows: tuple[Sequence[str], dict[str, int]] | None = None
        """The last readings' names and their rows: a provider reporting the same nodes again
        hands out the same names, and their indexes share one row map."""
        collector.on_snapshot(self._prepare)
        self._table: NodeTable | None = None
        self._slots_version = -1
        self._rows: IntArray = np.zeros(0, dtype=np.int64)
        self._warned_nodes: dict[str, set[str]] = {resource: set() for resource in RESOURCES}
        self._warned_series: set[str] = set()
        self._warned_stale = False

    @property
    def label(self) -> str:
        return self.collector.label

    def usage(self, table: NodeTable, nodes: Slots, policy: UsagePolicy) -> NodeUsage:
        """The scored nodes' metrics under ``policy``; never waits on the network."""
        snapshot, stale = self.collector.latest(policy.staleness_limit)
        age = self.collector.age(snapshot) if snapshot is not None else None
        self._check_staleness(stale, age, policy)
        trusted = None if stale else snapshot
        index = self._index_of(trusted.metrics if trusted is not None else None)
        rows = self._rows_for(table, index)[nodes]
        return NodeUsage(
            source=self.label,
            snapshot=trusted,
            window=snapshot.window if snapshot is not None else None,
            age_seconds=age,
            stale=stale,
            policy=policy,
            missing_series=index.missing_series,
            index=index,
            rows=rows,
            table=table,
            nodes=nodes,
        )

    def _index_of(self, metrics: WatcherMetrics | None) -> SnapshotIndex:
        """The snapshot's arrays, built once per snapshot (identity: a refresh makes a new object)."""
        if metrics is not self._indexed:
            self._indexed = metrics
            previous = self._index
            prepared = self._prepared
            if prepared is not None and prepared[0] is metrics:
                self._index = prepared[1]
            else:
                self._index = SnapshotIndex.build(metrics)
            if not _same_coverage(previous, self._index):
                self._table = None  # re-map the slots (and check what they lack)
        return self._index

    async def _prepare(self, snapshot: Snapshot) -> None:
        """A refresh fetched ``snapshot``: parse it now, a slice at a time, rather than in a cycle
        (or take its readings as they are, from a provider that has them as arrays)."""
        readings = snapshot.readings
        if readings is None:
            index = await SnapshotIndex.build_yielding(snapshot.metrics)
        else:
            known = self._readings_rows
            if known is None or known[0] is not readings.names:
                known = (readings.names, {name: row for row, name in enumerate(readings.names)})
                self._readings_rows = known
            index = SnapshotIndex.of_readings(readings, known[1])
        self._prepared = (snapshot.metrics, index)

    def _rows_for(self, table: NodeTable, index: SnapshotIndex) -> IntArray:
        """Slot -> snapshot row, rebuilt when the snapshot or the table's set of nodes changes."""
        if table is not self._table or table.slots_version != self._slots_version:
            self._table = table
            self._slots_version = table.slots_version
            missing = index.no_metrics_row
            self._rows = np.array([index.row_of.get(name, missing) for name in table.names], dtype=np.int64)
            self._check_coverage(table, index)
        return self._rows

    def _check_coverage(self, table: NodeTable, index: SnapshotIndex) -> None:
        """Gauges of nodes without metrics; one warning per node (or series) when it starts lacking them."""
        active = table.active_slots()
        rows = self._rows[active]
        measured = self._indexed is not None
        for resource in RESOURCES:
            data = index.cpu if resource == "cpu" else index.memory
            lacking = {table.names[slot] for slot in active[~data.valid[rows]]}
            self.telemetry.nodes_without_metrics.labels(self.label, resource).set(len(lacking))
            series_missing = resource in index.missing_series
            self.telemetry.series_missing.labels(self.label, resource).set(1 if series_missing else 0)
            if not measured:
                continue
            if series_missing:
                if resource not in self._warned_series:
                    log.warning("metrics from %s: %s", self.label, self._missing_series_message(resource))
                    self._warned_series.add(resource)
                lacking = set()
            else:
                self._warned_series.discard(resource)
            new = sorted(lacking - self._warned_nodes[resource])
            if new:
                log.warning(
                    "metrics from %s: no %s metrics for %d node(s): %s. They are scored from their requests "
                    "where fallbackToRequests is on, else 0 (as upstream); check that the source reports "
                    "them under the Node's name",
                    self.label,
                    resource,
                    len(new),
                    ", ".join(new[:_SHOWN_NODES]) + (" ..." if len(new) > _SHOWN_NODES else ""),
                )
            self._warned_nodes[resource] = lacking

    def _missing_series_message(self, resource: str) -> str:
        if self.source_kind == PROMETHEUS:
            return (
                f"no node has {resource} metrics: the query on {SERIES_OF[RESOURCES[resource]]} returned "
                "nothing. The recording rule is probably missing (newer kube-prometheus-stack charts and "
                "some OpenShift versions lack it; upstream then scores every node 0 silently): add the "
                "rule, and check that its `instance` label is the Node name"
            )
        return f"no node has {resource} metrics: check that the source reports {RESOURCES[resource]} metrics"

    def _check_staleness(self, stale: bool, age: float | None, policy: UsagePolicy) -> None:
        if stale and not self._warned_stale:
            log.warning(
                "metrics from %s: the newest snapshot is %.0fs old, over metricsStalenessLimit (%gs): "
                "not trusted until a fetch succeeds (nodes are scored from requests where "
                "fallbackToRequests is on)",
                self.label,
                age or 0.0,
                policy.staleness_limit or 0.0,
            )
            self._warned_stale = True
        elif not stale and self._warned_stale and age is not None:
            log.info("metrics from %s: fresh again (%.0fs old)", self.label, age)
            self._warned_stale = False


def _same_coverage(old: SnapshotIndex, new: SnapshotIndex) -> bool:
    """Whether ``new`` maps the same names to the same rows, with the same metrics present, as
    ``old``: the slots' rows and what they lack need no new look then (a ``ReadingsProvider``
    reporting the same nodes; a parsed document always has a row map of its own)."""
    return (
        new.row_of is old.row_of
        and new.missing_series == old.missing_series
        and np.array_equal(new.cpu.valid, old.cpu.valid)
        and np.array_equal(new.memory.valid, old.memory.valid)
    )
