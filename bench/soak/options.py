"""What a soak runs (rates, periods, sizes) and the bounds it holds our scheduler to."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from secondary_scheduler.kube.client import MAX_REQUEST_CONNECTIONS

REQUEST_CLIENTS = 4
"""The API clients a soaked scheduler sends requests with: the scheduler's, the Event recorder's
(scheduler/app.py), and delegated authentication's and authorization's (the probe's task-dump
requests are reviewed; scheduler/delegatedauth.py). Leader election's is idle: election is off."""


@dataclass(frozen=True)
class Bounds:
    """How much growth the run tolerates before it fails (the analysis says why each is what it is).

    Windows: the first and the last ``window`` of the run (10 minutes in an hour, a quarter of a
    shorter run); the slope is fitted over the run after its first quarter (the last 45 minutes
    of an hour), once caches and pools have filled.
    """

    rss_slope_mib_per_hour: float = 24.0
    """RSS growth fitted over the settled part. A leak of one pod's objects per pod churned
    (≈10 KiB each at 5 pods/s) would grow 170 MiB an hour; Python's allocator returns memory to
    the system in arenas, so a flat heap still wanders by a few MiB."""
    task_growth: float = 20.0
    """Median asyncio tasks, last window minus first: bindings and Event retries in flight come
    and go; a task left behind per pod or per watch restart would add hundreds."""
    watch_growth: float = 0.0
    """Most watch loops (reflector tasks) open in the last window, minus the first: a fixed set."""
    connections_beyond_watches: float = float(REQUEST_CLIENTS * MAX_REQUEST_CONNECTIONS)
    """Most TCP connections to the API server beyond one per watch loop: the request pools of ours'
    API clients (``REQUEST_CLIENTS``, each up to `MAX_REQUEST_CONNECTIONS`, opened as bursts need
    them and kept). A watch whose connection outlived it would add one each time a watch restarts
    (every 5-10 minutes for each of the 18 resources), past this within the hour."""
    fd_growth: float = 8.0
    """Median open files other than the API server connections, last window minus first."""
    latency_ratio: float = 2.0
    """p99 scheduling-attempt latency of the last window over the first: one bucket of the
    histogram (its bounds double), the finest step the histogram can tell."""


@dataclass(frozen=True)
class SoakOptions:
    """One soak: the cluster, the churn and the sampling."""

    duration: float = 3600.0
    """Seconds of churn (the cluster's start and our scheduler's are not counted)."""
    nodes: int = 100
    """KWOK nodes that stay for the whole run."""
    pod_rate: float = 5.0
    """Pods created per second (and, once the first have lived their lifetime, deleted)."""
    pod_lifetime: float = 60.0
    """Seconds from a pod's creation to its deletion."""
    node_churn_every: float = 60.0
    """Seconds between two node changes: ``node_churn_count`` nodes added, as many removed."""
    node_churn_count: int = 5
    node_churn_pool: int = 20
    """Churned nodes alive at most: beyond it the oldest go as new ones come."""
    flap_every: float = 90.0
    """Seconds between two metric flaps (a load change, the exporter away, Prometheus away, in turn)."""
    outage: float = 30.0
    """Seconds the exporter or Prometheus stays away in a flap."""
    sample_every: float = 15.0
    """Seconds between two samples of our scheduler."""
    seed: int = 1
    cluster_name: str = "secsched-soak"
    work_dir: Path = field(default_factory=lambda: Path("/tmp/secsched-soak"))
    """Our scheduler's config and log, and the samples (samples.csv)."""
    docs: Path | None = None
    """docs/reliability.md to write the figures into (its Soak section only); None: print them."""
    command: str = "python -m bench.soak"
    """How the run was started, for the report."""
    bounds: Bounds = field(default_factory=Bounds)

    def __post_init__(self) -> None:
        positive = {
            "--duration": self.duration,
            "--nodes": self.nodes,
            "--pod-rate": self.pod_rate,
            "--pod-lifetime": self.pod_lifetime,
            "--node-churn-every": self.node_churn_every,
            "--flap-every": self.flap_every,
            "--outage": self.outage,
            "--sample-every": self.sample_every,
        }
        for flag, value in positive.items():
            if value <= 0:
                raise ValueError(f"{flag}={value}: must be positive")
        if self.node_churn_count < 0 or self.node_churn_pool < self.node_churn_count:
            raise ValueError(
                f"--node-churn-count={self.node_churn_count}, --node-churn-pool={self.node_churn_pool}: "
                "the count must be >= 0 and the pool at least the count"
            )
        if self.duration < 4 * self.sample_every:
            raise ValueError(
                f"--duration={self.duration:g} with --sample-every={self.sample_every:g}: the analysis "
                "needs at least four samples; lengthen the run or sample more often"
            )
        if self.outage >= self.flap_every:
            raise ValueError(
                f"--outage={self.outage:g} must be shorter than --flap-every={self.flap_every:g} "
                "(one flap ends before the next begins)"
            )
