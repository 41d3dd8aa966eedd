"""The scheduler's Prometheus metrics, under kube-scheduler's names and labels.

Dashboards and alerts written for kube-scheduler keep working against ours.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class SchedulerMetrics:
    """One set of metrics per scheduler (its own registry, so tests can run several)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=[0.001 * 2**i for i in range(15)],
            registry=self.registry,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods.",
            ["queue"],
            registry=self.registry,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=[1, 2, 4, 8, 16],
            registry=self.registry,
        )
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
            "and might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=[0.01 * 2**i for i in range(20)],
            registry=self.registry,
        )
        self.events_dropped = Counter(
            "scheduler_events_dropped",
            "Number of Events the scheduler recorded but did not write, by reason. 'queue_full' means "
            "the recorder's queue was full; 'rejected' means the API server refused the Event; "
            "'retry_limit' means every try went unanswered; 'shutdown' means it was still queued "
            "or waiting for a retry when the scheduler stopped.",
            ["reason"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 master.",
            ["name"],
            registry=self.registry,
        )

        self.rest_client_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=self.registry,
        )

    def count_requests_of(self, host: str) -> Callable[[str, str], None]:
        """An ApiClient's ``on_response``: counts its requests as client-go's metric does."""

        def observe(method: str, code: str) -> None:
            self.rest_client_requests.labels(code, method, host).inc()

        return observe

    def count_dropped_events(self, reason: str, count: int) -> None:
        """The Event recorder's report of events it did not write (``EventRecorder.on_dropped``)."""
        self.events_dropped.labels(reason).inc(count)
