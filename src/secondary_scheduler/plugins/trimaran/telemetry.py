"""Prometheus metrics that make the Trimaran plugins' inputs visible.

Upstream scores every node 0 without a word when its metrics are missing or a fetch keeps
failing; these series let an alert catch that. They live in the registry the caller passes
(the scheduler's own), so one process can hold several sets (tests).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class TrimaranMetrics:
    """The load-aware plugins' series; ``source`` is a metric source's label (``MetricSource.label``)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics_age = Gauge(
            "secsched_trimaran_metrics_age_seconds",
            "Age of the newest node metrics snapshot from a source (NaN before the first one).",
            ["source"],
            registry=self.registry,
        )
        self.fetch_errors = Counter(
            "secsched_trimaran_fetch_errors",
            "Failed fetches of node metrics from a source (one per window tried).",
            ["source"],
            registry=self.registry,
        )
        self.nodes_without_metrics = Gauge(
            "secsched_trimaran_nodes_without_metrics",
            "Nodes of the cluster the current snapshot has no metrics of this resource for.",
            ["source", "resource"],
            registry=self.registry,
        )
        self.series_missing = Gauge(
            "secsched_trimaran_series_missing",
            "1 when no node at all has metrics of this resource (e.g. the recording rule is missing).",
            ["source", "resource"],
            registry=self.registry,
        )
        self.estimated_scores = Counter(
            "secsched_trimaran_estimated_scores",
            "Node scores computed from requests instead of measured load (fallbackToRequests).",
            ["plugin", "source"],
            registry=self.registry,
        )
        self.recently_scheduled = Gauge(
            "secsched_trimaran_recently_scheduled_pods",
            "Pods in TargetLoadPacking's recently-scheduled cache.",
            registry=self.registry,
        )
        self.stamped_pods = Counter(
            "secsched_trimaran_stamped_pods",
            "Pods entered in the recently-scheduled cache, by where their time stamp came from.",
            ["stamp"],
            registry=self.registry,
        )
