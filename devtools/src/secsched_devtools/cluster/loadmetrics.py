"""The node-load metrics of a local cluster: the exporter's load model and Prometheus scraping it.

Started with the cluster when its options ask (`ClusterOptions.prometheus`), or later on a
cluster that runs without them, and stopped again while the rest keeps running: the benchmark
brings them up for its load-aware class alone. Read through Prometheus' query API (what the
Trimaran plugins read) and changed through the exporter's `/load` (`loadmodel.LoadModel.update`).
"""

from __future__ import annotations

import shutil
from typing import Any

import httpx

from secsched_devtools.cluster.components import LOAD_EXPORTER, PROMETHEUS, Components, ensure_prometheus
from secsched_devtools.cluster.layout import ClusterError, ClusterLayout
from secsched_devtools.cluster.progress import step
from secsched_devtools.cluster.supervisor import Supervisor

SERIES = "instance:node_cpu:ratio"
"""A series the exporter publishes per node: its count in Prometheus says every node is scraped."""


class LoadMetrics:
    """One cluster's load exporter and Prometheus: start, stop, query, change the load."""

    def __init__(self, layout: ClusterLayout, supervisor: Supervisor, components: Components) -> None:
        self.layout = layout
        self.supervisor = supervisor
        self.components = components

    def running(self) -> bool:
        return any(self.supervisor.running(name) for name in (LOAD_EXPORTER, PROMETHEUS))

    def start(
        self,
        prometheus_binary: str,
        nodes: int,
        base_load: dict[str, Any] | None,
        scrape_interval: str,
        timeout: float = 60.0,
    ) -> None:
        """The exporter, then Prometheus; waits until Prometheus holds a sample of each of ``nodes``."""
        self.components.start_load_exporter(base_load)
        self.components.start_prometheus(prometheus_binary, scrape_interval)
        with step(f"waiting for the first node-load samples of {nodes:,} nodes in Prometheus"):
            self.supervisor.wait(PROMETHEUS, lambda: self._series(SERIES) >= nodes, timeout)

    def start_later(
        self,
        nodes: int,
        base_load: dict[str, Any] | None = None,
        scrape_interval: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        """Start them on a cluster that runs without them; Prometheus starts with an empty database,
        so every average it answers covers this start's samples only. All or nothing."""
        if self.running():
            raise ClusterError(
                f"cluster {self.layout.options.name!r} already runs its load exporter or Prometheus"
            )
        prometheus_binary = ensure_prometheus()
        shutil.rmtree(self.layout.prometheus_data, ignore_errors=True)
        try:
            interval = scrape_interval or self.layout.options.scrape_interval
            self.start(prometheus_binary, nodes, base_load, interval, timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> list[str]:
        """Stop Prometheus and the load exporter (whichever runs) and drop Prometheus' data; the
        rest of the cluster keeps running. Returns what was stopped."""
        stopped = self.supervisor.stop((PROMETHEUS, LOAD_EXPORTER))
        shutil.rmtree(self.layout.prometheus_data, ignore_errors=True)
        return stopped

    def _series(self, name: str) -> int:
        """How many series of ``name`` Prometheus holds (a count, not thousands of samples)."""
        return int(sum(self.query(f"count({name})").values()))

    def query(self, promql: str) -> dict[str, float]:
        """An instant PromQL query: instance label -> value."""
        response = httpx.get(
            f"{self.layout.prometheus_url}/api/v1/query", params={"query": promql}, timeout=10
        )
        response.raise_for_status()
        result = response.json()["data"]["result"]
        return {item["metric"].get("instance", ""): float(item["value"][1]) for item in result}

    def set_base_load(self, update: dict[str, Any]) -> dict[str, Any]:
        """Change the load model at run time (see loadmodel.LoadModel.update)."""
        response = httpx.put(f"{self.layout.exporter_url}/load", json=update, timeout=10)
        if response.status_code != 200:
            raise ClusterError(f"the load exporter refused {update}: {response.text}")
        return dict(response.json())

    def load(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.layout.exporter_url}/load", timeout=10).json())
