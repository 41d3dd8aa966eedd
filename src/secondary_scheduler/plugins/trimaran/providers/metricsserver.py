"""load-watcher's Kubernetes metrics-server provider: each node's latest usage over its capacity.

metrics-server keeps only the latest sample, so there is no deviation to report: every node
gets a CPU and a Memory metric with operator ``Latest``, ``100 * usage / capacity`` where
capacity is the Node's ``status.capacity``. Both lists are read through our API client.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.quantity import QuantityError, int_value, milli_value
from secondary_scheduler.plugins.trimaran.providers import FETCH_TIMEOUT_SECONDS, FetchError, watcher_metrics
from secondary_scheduler.plugins.trimaran.watchermetrics import CPU, LATEST, MEMORY, Metric, WatcherMetrics

log = logging.getLogger(__name__)

NODE_METRICS_PATH = "/apis/metrics.k8s.io/v1beta1/nodes"
NODES_PATH = "/api/v1/nodes"
WINDOW = "15m"
"""The window load-watcher files metrics-server's latest values under (they have none of their own)."""


class MetricsServerProvider:
    windows: tuple[str, ...] = (WINDOW,)

    def __init__(
        self,
        api: ApiClient | None,
        *,
        clock: Callable[[], float] = time.time,
        timeout: float = FETCH_TIMEOUT_SECONDS,
    ) -> None:
        if api is None:
            raise ValueError(
                "metricProvider.type KubernetesMetricsServer reads metrics.k8s.io through the Kubernetes API "
                "client, which was not given to the Trimaran services"
            )
        self.api = api
        self.clock = clock
        self.timeout = timeout

    async def fetch(self, window: str) -> WatcherMetrics:
        usage = await self._get(NODE_METRICS_PATH, "list nodes.metrics.k8s.io (is metrics-server installed?)")
        # resourceVersion 0: served from the API server's cache, cheap on large clusters.
        nodes = await self._get(NODES_PATH, "list nodes", {"resourceVersion": "0"})
        capacity = {_name(node): (node.get("status") or {}).get("capacity") or {} for node in nodes}
        metrics: dict[str, list[Metric]] = {}
        for item in usage:
            name = _name(item)
            try:
                metrics[name] = _node_metrics(item.get("usage") or {}, capacity.get(name) or {})
            except (QuantityError, ZeroDivisionError, KeyError) as error:
                log.debug("metrics-server: node %s skipped (%r)", name, error)
        return watcher_metrics(metrics, window, "KubernetesMetricsServer", self.clock())

    async def close(self) -> None:
        """Nothing to release: the API client belongs to the scheduler."""

    async def _get(self, path: str, what: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        try:
            listing = await asyncio.wait_for(self.api.get(path, params), self.timeout)
        except ApiError as error:
            hint = (
                "the scheduler's ServiceAccount needs `list` on it"
                if error.status == 403
                else "install metrics-server, or use another metricProvider"
                if error.not_found
                else "the API server refused"
            )
            raise FetchError(f"cannot {what}: {error} ({hint})") from error
        except (TimeoutError, ApiUnavailable) as error:
            raise FetchError(f"cannot {what}: the API server did not answer ({error!r})") from error
        return list(listing.get("items") or [])


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _node_metrics(usage: dict[str, str], capacity: dict[str, str]) -> list[Metric]:
    """Upstream's arithmetic: ``float(100 * usage) / float(capacity)`` in millicores and bytes."""
    cpu = float(100 * milli_value(usage["cpu"])) / float(milli_value(capacity["cpu"]))
    memory = float(100 * int_value(usage["memory"])) / float(int_value(capacity["memory"]))
    return [
        Metric(name="cpu", type=CPU, operator=LATEST, value=cpu),
        Metric(name="memory", type=MEMORY, operator=LATEST, value=memory),
    ]
