"""The simulated metric source: what Prometheus, metrics-server or a load-watcher would serve, when.

The load-aware plugins run unchanged: they read their metrics through the Trimaran services'
collectors, as in the scheduler. Here the collectors' provider is ``SimulatedProvider`` and their
clock the simulated one. The node usage the sources report is sampled from the replay's cluster
every ``scrape_interval`` seconds into ``UsageHistory``; a source serves, for each refresh, what
its real counterpart would have served then:

- Prometheus (library mode, as load-watcher queries it): per node the average and standard
  deviation of the CPU and memory utilisation samples over the 15m window (10m and 5m are the
  provider's fallbacks and never needed here), operators AVG and STD;
- KubernetesMetricsServer: the latest sample at metrics-server's 60 s resolution, operator Latest;
- a load-watcher service (``watcherAddress``): the 15m average and deviation as of load-watcher's
  last one-minute refresh.

Each is ``lag`` seconds late on top (a recording rule's evaluation, a slow scrape), leaves out the
``missing_nodes`` (a node whose exporter is down), and is polled every ``refresh_interval`` seconds
by the scheduler's collector (30 s, as upstream). Refreshes are made lazily: only when a scheduling
cycle is about to read the metrics and a refresh has fallen due since the last one, with the data
as of the instant it fell due, so a quiet week costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import FloatArray
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.plugins.trimaran.args import KUBERNETES_METRICS_SERVER, PROMETHEUS
from secondary_scheduler.plugins.trimaran.collector import REFRESH_INTERVAL_SECONDS
from secondary_scheduler.plugins.trimaran.providers import WINDOW_SECONDS, NodeReadings
from secondary_scheduler.plugins.trimaran.services import TrimaranServices
from secondary_scheduler.plugins.trimaran.source import WATCHER, MetricSource
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    AVERAGE,
    CPU,
    LATEST,
    MEMORY,
    STD,
    Data,
    Metadata,
    Metric,
    NodeMetrics,
    ResourceDataArrays,
    WatcherMetrics,
    Window,
)
from secondary_scheduler.replay.clock import SimClock
from secondary_scheduler.replay.cluster import ClusterLoad

SCRAPE_INTERVAL_SECONDS = 30.0
"""How often node usage is sampled (Prometheus' scrape of node-exporter, as OpenShift's monitoring)."""
METRICS_SERVER_RESOLUTION_SECONDS = 60.0
"""metrics-server's default --metric-resolution: how old its latest value may be."""
LOAD_WATCHER_REFRESH_SECONDS = 60.0
"""How often a load-watcher service refreshes the metrics it serves."""
WINDOW = "15m"


@dataclass(frozen=True)
class SourceBehaviour:
    """How one kind of source turns usage samples into a WatcherMetrics document."""

    name: str
    """What the report calls it."""
    windows: tuple[str, ...]
    """The collector's windows, best first (the real provider's)."""
    latest: bool
    """Serve the latest sample (operator Latest) rather than a window's average and deviation."""
    resolution: float
    """The data is as of the last multiple of this many seconds (0: of each sample)."""


BEHAVIOURS = {
    PROMETHEUS: SourceBehaviour("Prometheus", ("15m", "10m", "5m"), latest=False, resolution=0.0),
    KUBERNETES_METRICS_SERVER: SourceBehaviour(
        "metrics-server", (WINDOW,), latest=True, resolution=METRICS_SERVER_RESOLUTION_SECONDS
    ),
    WATCHER: SourceBehaviour(
        "load-watcher", ("served",), latest=False, resolution=LOAD_WATCHER_REFRESH_SECONDS
    ),
}


@dataclass(frozen=True)
class MetricsSettings:
    scrape_interval: float = SCRAPE_INTERVAL_SECONDS
    lag: float = 0.0
    """Seconds between a sample and the moment a source serves it, on top of the source's own."""
    refresh_interval: float = REFRESH_INTERVAL_SECONDS
    """How often the scheduler's collector fetches from the source."""
    missing_nodes: frozenset[str] = frozenset()
    """Nodes the sources never report (their exporter is down, or named differently)."""


class UsageHistory:
    """The latest samples of every node's CPU and memory utilisation (fractions of capacity).

    A ring of rows, long enough for the longest window plus the lag and a source's resolution.
    """

    def __init__(self, nodes: int, settings: MetricsSettings) -> None:
        span = (
            max(WINDOW_SECONDS.values()) + settings.lag + 2 * max(b.resolution for b in BEHAVIOURS.values())
        )
        self.rows = math.ceil(span / settings.scrape_interval) + 2
        self.times: FloatArray = np.full(self.rows, -np.inf)
        self.cpu: FloatArray = np.zeros((self.rows, nodes), dtype=np.float64)
        self.memory: FloatArray = np.zeros((self.rows, nodes), dtype=np.float64)
        self._next = 0

    def record(self, now: float, load: ClusterLoad) -> None:
        row = self._next % self.rows
        self.times[row] = now
        self.cpu[row] = load.cpu_utilization()
        self.memory[row] = load.memory_utilization()
        self._next += 1

    def window(self, end: float, seconds: float) -> np.ndarray:
        """The rows sampled in (end - seconds, end]."""
        return np.flatnonzero((self.times > end - seconds) & (self.times <= end))

    def latest(self, at: float) -> int | None:
        """The row of the newest sample taken at or before ``at``."""
        taken = np.flatnonzero(self.times <= at)
        if not len(taken):
            return None
        return int(taken[np.argmax(self.times[taken])])


SERIES = {
    False: ((CPU, AVERAGE), (MEMORY, AVERAGE), (CPU, STD), (MEMORY, STD)),
    True: ((CPU, LATEST), (MEMORY, LATEST)),
}
"""The metrics a source reports per node (keyed by ``SourceBehaviour.latest``), in load-watcher's order."""


@dataclass(frozen=True)
class _Served:
    """What a source serves for one fetch: the window's bounds and, per reported node, its values
    in percent (load-watcher's unit), in ``SERIES`` order; no columns when it has no sample yet."""

    stamp: int
    rollup: str
    seconds: float
    columns: tuple[FloatArray, ...]


class SimulatedProvider:
    """A collector's provider serving the history as one kind of source would (``BEHAVIOURS``).

    A ``ReadingsProvider``: the collector takes its values as arrays (``fetch_readings``), as
    they are computed; ``fetch`` builds the whole WatcherMetrics document of the same values, as
    the real source would serve it (for whoever reads documents; a test checks both agree).
    """

    def __init__(
        self,
        behaviour: SourceBehaviour,
        history: UsageHistory,
        names: list[str],
        settings: MetricsSettings,
        clock: SimClock,
    ) -> None:
        self.behaviour = behaviour
        self.windows = behaviour.windows
        self.history = history
        self.settings = settings
        self.clock = clock
        self.as_of = 0.0
        """The simulated instant the next fetch answers for (the refresh that fell due)."""
        self.reported = np.array([name not in settings.missing_nodes for name in names], dtype=np.bool_)
        self.names: tuple[str, ...] = tuple(name for name in names if name not in settings.missing_nodes)
        """The nodes the source reports, one tuple for every fetch (the view maps them once)."""

    async def fetch(self, window: str) -> WatcherMetrics:
        served = self._serve(window)
        nodes: dict[str, NodeMetrics] = {}
        if served.columns:
            series = SERIES[self.behaviour.latest]
            metadata = Metadata.model_construct(data_center="")
            values = [column.tolist() for column in served.columns]
            for name, *node_values in zip(self.names, *values, strict=True):
                metrics = [
                    Metric.model_construct(name="", type=kind, operator=op, rollup=served.rollup, value=value)
                    for (kind, op), value in zip(series, node_values, strict=True)
                ]
                nodes[name] = NodeMetrics.model_construct(metrics=metrics, tags={}, metadata=metadata)
        return self._document(served, nodes)

    async def fetch_readings(self, window: str) -> tuple[WatcherMetrics, NodeReadings]:
        served = self._serve(window)
        if not served.columns:
            empty = np.zeros(0, dtype=np.float64)
            none = ResourceDataArrays(avg=empty, stdev=empty, valid=np.zeros(0, dtype=np.bool_))
            nothing = NodeReadings(names=(), cpu=none, memory=none, cpu_percent=empty)
            return self._document(served, {}), nothing
        valid = np.ones(len(self.names), dtype=np.bool_)
        if self.behaviour.latest:
            cpu, memory = served.columns
            cpu_stdev = memory_stdev = np.zeros(len(self.names), dtype=np.float64)
        else:
            cpu, memory, cpu_stdev, memory_stdev = served.columns
        readings = NodeReadings(
            names=self.names,
            cpu=ResourceDataArrays(avg=cpu, stdev=cpu_stdev, valid=valid),
            memory=ResourceDataArrays(avg=memory, stdev=memory_stdev, valid=valid),
            cpu_percent=cpu,
        )
        return self._document(served, {}), readings

    def _serve(self, window: str) -> _Served:
        """The values the source has for ``window`` as of ``as_of`` (less its lag and resolution)."""
        seconds = float(WINDOW_SECONDS.get(window, WINDOW_SECONDS[WINDOW]))
        end = self.as_of - self.settings.lag
        if self.behaviour.resolution:
            end = math.floor(end / self.behaviour.resolution) * self.behaviour.resolution
        rollup = WINDOW if window not in WINDOW_SECONDS else window
        columns: tuple[FloatArray, ...] = ()
        if self.behaviour.latest:
            row = self.history.latest(end)
            if row is not None:
                columns = (self.history.cpu[row], self.history.memory[row])
        else:
            rows = self.history.window(end, seconds)
            if len(rows):
                cpu, memory = self.history.cpu[rows], self.history.memory[rows]
                columns = (cpu.mean(axis=0), memory.mean(axis=0), cpu.std(axis=0), memory.std(axis=0))
        percent = tuple(100 * column[self.reported] for column in columns)
        return _Served(int(self.clock.epoch + self.as_of), rollup, seconds, percent)

    def _document(self, served: _Served, nodes: dict[str, NodeMetrics]) -> WatcherMetrics:
        stamp = served.stamp
        start = stamp - int(served.seconds)
        return WatcherMetrics.model_construct(
            timestamp=stamp,
            window=Window.model_construct(duration=served.rollup, start=start, end=stamp),
            source=self.behaviour.name,
            data=Data.model_construct(node_metrics_map=nodes),
        )

    async def close(self) -> None:
        """Nothing to release."""


class SimulatedMetrics:
    """The Trimaran services of one replay, on the simulated clock, fed by simulated providers."""

    def __init__(self, load: ClusterLoad, clock: SimClock, settings: MetricsSettings, handle: Handle) -> None:
        """Creates the Trimaran services in ``handle`` (whose clocks must be ``clock``'s), before
        any plugin is built: the plugins find them there instead of creating their own."""
        self.load = load
        self.clock = clock
        self.settings = settings
        self.history = UsageHistory(len(load), settings)
        self.providers: list[SimulatedProvider] = []
        self.services = TrimaranServices.of(
            handle, provider_factory=self.provider_for, interval=settings.refresh_interval
        )
        self._refreshed_at = -math.inf

    @property
    def sources(self) -> list[str]:
        """The kinds of source the profile's plugins read, as the report names them."""
        return sorted({provider.behaviour.name for provider in self.providers})

    def sample(self) -> None:
        """A scrape: every node's usage now goes into the history."""
        self.history.record(self.clock.now, self.load)

    async def catch_up(self) -> None:
        """Before a cycle: make the refresh that fell due last, if not made yet (see the module doc)."""
        if not self.providers:
            return
        due = math.floor(self.clock.now / self.settings.refresh_interval) * self.settings.refresh_interval
        if due <= self._refreshed_at:
            return
        self._refreshed_at = due
        for provider in self.providers:
            provider.as_of = due
        for collector in self.services.collectors.collectors():
            await collector.refresh()

    def provider_for(self, source: MetricSource) -> SimulatedProvider:
        """The collectors' provider factory: the simulated source a profile's metric source stands for."""
        behaviour = BEHAVIOURS.get(source.kind)
        if behaviour is None:
            raise ValueError(
                f"replay cannot simulate metric source {source.kind!r}: use {', '.join(BEHAVIOURS)}"
            )
        provider = SimulatedProvider(behaviour, self.history, self.load.names, self.settings, self.clock)
        self.providers.append(provider)
        return provider
