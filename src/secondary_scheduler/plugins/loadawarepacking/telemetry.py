"""Prometheus series that make LoadAwarePacking's degraded inputs visible (never silent zeros).

One set per metrics registry (the scheduler's), shared by every profile using the plugin:
``of(handle)`` registers it in the handle's services the first time.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from secondary_scheduler.framework.handle import Handle

SERVICE = "loadawarepacking"

STALE_HELD = "stale-held"
"""The snapshot is older than metricsStalenessLimit: the last peaks are held, every pod bound since
counted in full."""
NO_METRICS_ESTIMATED = "no-metrics-estimated"
"""The node has no CPU reading: its load is its pods' requests x the learned use per request."""
NO_METRICS_UNSCORED = "no-metrics-unscored"
"""The node has no CPU reading and fallbackToRequests is false: scored 0."""
REASONS = (STALE_HELD, NO_METRICS_ESTIMATED, NO_METRICS_UNSCORED)


class LoadAwareTelemetry:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.degraded_nodes = Gauge(
            "secsched_loadaware_degraded_nodes",
            "Nodes the last cycle scored without a fresh CPU reading, by what it did instead.",
            ["profile_plugin", "reason"],
            registry=self.registry,
        )
        self.inflight_pods = Gauge(
            "secsched_loadaware_inflight_pods",
            "Pods bound since the metrics window began whose use is added to their node's reading.",
            ["profile_plugin"],
            registry=self.registry,
        )
        self.learned_classes = Gauge(
            "secsched_loadaware_learned_classes",
            "Pod classes (instance type, flavour, owner) whose CPU use per request has been learned.",
            ["profile_plugin"],
            registry=self.registry,
        )
        self.lessons = Counter(
            "secsched_loadaware_lessons",
            "Node steps the estimator learned a class's CPU use from.",
            ["profile_plugin"],
            registry=self.registry,
        )

    @classmethod
    def of(cls, handle: Handle) -> LoadAwareTelemetry:
        existing = handle.services.get(SERVICE)
        if isinstance(existing, cls):
            return existing
        telemetry = cls(handle.metrics_registry)
        handle.register_service(SERVICE, telemetry)
        return telemetry
