"""A real Kubernetes control plane on this machine, as a context manager.

    with LocalCluster(ClusterOptions(nodes=10)) as cluster:
        ...  # cluster.kubeconfig, cluster.prometheus_url, cluster.set_base_load(...)

Components: etcd (data on tmpfs, no fsync), kube-apiserver (TLS, RBAC, Node authz),
kube-controller-manager, our storage provisioner (two StorageClasses, CSINodes and
CSIStorageCapacities: see `provisioner`), KWOK for fake nodes, the NUMA topology exporter
(NodeResourceTopologies), the fake DRA driver (ResourceSlices of GPUs: `dradriver`), the
upstream kube-scheduler as the cluster's `default-scheduler`,
our node-load exporter, and Prometheus scraping it. Each is a child process recorded by pid
in `state.json`, so `secsched cluster down` can stop exactly them from another shell.
A cluster started without Prometheus can bring it and the exporter up later, and stop them
again (`start_load_metrics`, `stop_load_metrics`): the benchmark does so for one class alone.

`LocalCluster` is the façade the CLI, the tests, the demo and the benchmark use; each job is a
module of its own: `layout` (options, files, ports, the state file), `supervisor` (the
processes), `components` (the ten launchers), `installs` (CRDs, storage and nodes through the
API) and `loadmetrics` (the load exporter and Prometheus). `up` says in which order.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from secondary_scheduler.kube.client import ApiClient
from secsched_devtools.cluster import build, pki, processes
from secsched_devtools.cluster.components import (
    LOAD_EXPORTER,
    PROMETHEUS,
    PROVISIONER,
    Components,
    ensure_prometheus,
)
from secsched_devtools.cluster.installs import ApiInstalls
from secsched_devtools.cluster.layout import (
    ClusterError,
    ClusterLayout,
    ClusterOptions,
    binary,
    free_port,
)
from secsched_devtools.cluster.loadmetrics import LoadMetrics
from secsched_devtools.cluster.nodes import NodeShape
from secsched_devtools.cluster.processes import ProcessRecord
from secsched_devtools.cluster.progress import console, step
from secsched_devtools.cluster.supervisor import Supervisor

__all__ = [
    "LOAD_EXPORTER",
    "PROMETHEUS",
    "PROVISIONER",
    "ClusterError",
    "ClusterOptions",
    "LocalCluster",
    "free_port",
]
"""What callers import from here (the names live in the job's module that owns them)."""


class LocalCluster:
    """Start, inspect and stop one named local cluster."""

    def __init__(self, options: ClusterOptions) -> None:
        self.options = options
        self.layout = ClusterLayout(options)
        self.supervisor = Supervisor(self.layout)
        self.components = Components(self.layout, self.supervisor)
        self.installs = ApiInstalls(self.layout, self.supervisor)
        self.metrics = LoadMetrics(self.layout, self.supervisor, self.components)

    # -- paths, addresses and processes (layout, supervisor) ------------------------------
    @property
    def directory(self) -> Path:
        return self.layout.directory

    @property
    def state_file(self) -> Path:
        return self.layout.state_file

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    @property
    def pki(self) -> pki.Pki:
        return self.layout.pki

    @property
    def etcd_data(self) -> Path:
        return self.layout.etcd_data

    @property
    def prometheus_data(self) -> Path:
        return self.layout.prometheus_data

    @property
    def api_url(self) -> str:
        return self.layout.api_url

    @property
    def prometheus_url(self) -> str:
        return self.layout.prometheus_url

    @property
    def exporter_url(self) -> str:
        return self.layout.exporter_url

    @property
    def ports(self) -> dict[str, int]:
        return self.layout.ports

    @ports.setter
    def ports(self, ports: dict[str, int]) -> None:
        self.layout.ports = ports

    @property
    def records(self) -> dict[str, ProcessRecord]:
        return self.supervisor.records

    def binary(self, name: str) -> str:
        return binary(name)

    @classmethod
    def attach(cls, name: str = "secsched", state_root: Path | None = None) -> LocalCluster:
        """The cluster a previous `up` started, from its state file (for status and down)."""
        layout, records = ClusterLayout.read_state(name, state_root)
        cluster = cls(layout.options)
        cluster.ports = layout.ports
        cluster.records.update((record.name, record) for record in records)
        return cluster

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> LocalCluster:
        """Start every component and wait until nodes are Ready and metrics flow; all or nothing."""
        options = self.options
        if self.state_file.exists():
            previous = LocalCluster.attach(options.name, options.state_root)
            if any(processes.is_running(record) for record in previous.records.values()):
                raise ClusterError(
                    f"cluster {options.name!r} is already running (see `secsched cluster status`); "
                    "stop it with `secsched cluster down` or choose another --name"
                )
            previous.down(quiet=True)
        build.build()
        prometheus_binary = ensure_prometheus() if options.prometheus else None
        started = time.monotonic()
        try:
            self.layout.prepare()
            self.components.start_etcd()
            self.components.start_apiserver()
            self.installs.install_crds()
            self.components.start_controller_manager()
            with step("installing storage (StorageClasses local-wffc, zonal-immediate) and its provisioner"):
                self.installs.install_storage()
                self.components.start_provisioner()
            if options.topology_exporter:
                self.components.start_topology_exporter()
            if options.dra_driver:
                self.components.start_dra_driver()
            self.components.start_kwok()
            if options.default_scheduler:
                self.components.start_default_scheduler()
            self.installs.create_nodes()
            self.installs.wait_for_storage()
            if prometheus_binary:
                self.metrics.start(
                    prometheus_binary, options.nodes, options.base_load, options.scrape_interval
                )
        except BaseException:
            self.down(quiet=True)
            raise
        console.print(f"[green]✓[/green] cluster {options.name!r} is up ({time.monotonic() - started:.1f}s)")
        return self

    def down(self, quiet: bool = False) -> list[str]:
        """Stop exactly the processes this cluster started, newest first; returns their names."""
        stopped = self.supervisor.stop_all()
        self.layout.remove_data()
        if not quiet:
            what = ", ".join(stopped) or "nothing was running"
            console.print(f"[green]✓[/green] cluster {self.options.name!r} stopped ({what})")
        return stopped

    def restart(self, component: str, downtime: float = 0.0, hard: bool = False) -> None:
        """Stop one component (`hard`: kill -9), wait `downtime` seconds, start it again with the
        same arguments.

        For failure tests: an API server restart, a scheduler crash.
        """
        self.supervisor.restart(component, downtime, hard)
        if component == "kube-apiserver":
            self.components.wait_for_apiserver()

    def signal(self, component: str, signum: int) -> None:
        """Send one signal to a running component (SIGSTOP/SIGCONT: an API server that hangs)."""
        self.supervisor.signal(component, signum)

    def status(self) -> dict[str, dict[str, Any]]:
        return self.supervisor.status()

    # -- through the API (installs) -------------------------------------------------------
    def api(self, qps: float = 0, burst: int = 0) -> ApiClient:
        """An admin client (unlimited rate unless asked) for this cluster."""
        return self.installs.api(qps, burst)

    def storage(self) -> dict[str, Any]:
        """The storage classes and whether their provisioner runs: what `cluster status` shows."""
        return self.installs.storage()

    async def add_nodes(
        self, count: int, shape: NodeShape | None = None, start: int | None = None
    ) -> list[str]:
        """Create more fake nodes (named after the ones there are) and wait until they are Ready."""
        return await self.installs.add_nodes(count, shape, start)

    # -- the load metrics (loadmetrics) -----------------------------------------------------
    def load_metrics_running(self) -> bool:
        return self.metrics.running()

    def start_load_metrics(
        self,
        nodes: int,
        base_load: dict[str, Any] | None = None,
        scrape_interval: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        """Start the node-load exporter and Prometheus on a cluster that runs without them, and wait
        until Prometheus holds a sample of each of ``nodes`` nodes (`LoadMetrics.start_later`).
        ``base_load``: the load model's starting state (loadmodel.LoadModel.update);
        ``scrape_interval``: the options' if None."""
        self.metrics.start_later(nodes, base_load, scrape_interval, timeout)

    def stop_load_metrics(self) -> list[str]:
        """Stop Prometheus and the load exporter, dropping Prometheus' data; the rest keeps running."""
        return self.metrics.stop()

    def query(self, promql: str) -> dict[str, float]:
        """An instant PromQL query: instance label -> value."""
        return self.metrics.query(promql)

    def set_base_load(self, update: dict[str, Any]) -> dict[str, Any]:
        """Change the load model at run time (see loadmodel.LoadModel.update)."""
        return self.metrics.set_base_load(update)

    def load(self) -> dict[str, Any]:
        return self.metrics.load()
