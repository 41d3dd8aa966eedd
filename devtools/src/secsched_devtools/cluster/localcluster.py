"""A real Kubernetes control plane on this machine, as a context manager.

    with LocalCluster(ClusterOptions(nodes=10)) as cluster:
        ...  # cluster.kubeconfig, cluster.prometheus_url, cluster.set_base_load(...)

Components: etcd (data on tmpfs, no fsync), kube-apiserver (TLS, RBAC, Node authz),
kube-controller-manager, our storage provisioner (two StorageClasses, CSINodes and
CSIStorageCapacities: see `provisioner`), KWOK for fake nodes, the NUMA topology exporter
(NodeResourceTopologies), the upstream kube-scheduler as the cluster's `default-scheduler`,
our node-load exporter, and Prometheus scraping it. Each is a child process recorded by pid
in `state.json`, so `secsched cluster down` can stop exactly them from another shell.
A cluster started without Prometheus can bring it and the exporter up later, and stop them
again (`start_load_metrics`, `stop_load_metrics`): the benchmark does so for one class alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from secondary_scheduler.kube import kubeconfig as kubeconfig_loader
from secondary_scheduler.kube import manifests
from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster import build, pki, processes, provisioner, versions
from secsched_devtools.cluster.kubeconfigs import write_kubeconfig
from secsched_devtools.cluster.nodes import NodeShape, create_nodes, is_ready, plan_nodes
from secsched_devtools.cluster.processes import ProcessRecord
from secsched_devtools.cluster.progress import console, step
from secsched_devtools.repo import REPO

PROMETHEUS_BINARY = "/usr/bin/prometheus"
PROVISIONER = "storage-provisioner"
TOPOLOGY_EXPORTER = "topology-exporter"
LOAD_EXPORTER = "load-exporter"
PROMETHEUS = "prometheus"
CRDS = REPO / "deploy" / "crds"
"""CustomResourceDefinitions installed at start: every *.yaml file of deploy/crds (what an admin applies)."""


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says which part and why."""


def default_state_root() -> Path:
    return Path(os.environ.get("SECSCHED_STATE_DIR") or Path(os.environ.get("TMPDIR", "/tmp")) / "secsched")


def _tmpfs_root() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ClusterOptions:
    """What to run. `shape=None` mixes node sizes (8, 16 and 32 cores)."""

    name: str = "secsched"
    nodes: int = 3
    shape: NodeShape | None = field(default_factory=NodeShape)
    zones: int = 3
    default_scheduler: bool = True
    prometheus: bool = True
    scrape_interval: str = "5s"
    base_load: dict[str, Any] | None = None
    state_root: Path = field(default_factory=default_state_root)
    node_lease_seconds: int = 40
    """KWOK renews each node's Lease every quarter of this: raise it for thousands of nodes."""
    topology_exporter: bool = True
    """Publish a NodeResourceTopology per node (for NodeResourceTopologyMatch). It re-reads every
    node and pod on each change, so a cluster of thousands of nodes that needs none runs without."""
    control_plane_gogc: int | None = None
    """GOGC for the control plane's Go processes (`GO_CONTROL_PLANE`), None for Go's default (100).
    The benchmark raises it (bench's CONTROL_PLANE_GOGC says why). Never applied to a
    kube-scheduler, which must run as it ships."""


GO_CONTROL_PLANE = frozenset({"etcd", "kube-apiserver", "kube-controller-manager", "kwok", PROMETHEUS})
"""The processes `ClusterOptions.control_plane_gogc` applies to: the cluster's own Go programs,
not the schedulers under test."""


def ensure_prometheus() -> str:
    """Debian's Prometheus, installed on the spot where we are root, else a clear error."""
    if Path(PROMETHEUS_BINARY).exists():
        return PROMETHEUS_BINARY
    found = shutil.which("prometheus")
    if found:
        return found
    if os.geteuid() != 0:
        raise ClusterError(
            "Prometheus is not installed. Install Debian's package with "
            "`sudo apt-get install --no-install-recommends prometheus` (or put a `prometheus` "
            "binary on PATH), or start the cluster with --no-prometheus."
        )
    with step("installing Prometheus (apt-get install prometheus)"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", "prometheus"],
        ):
            result = subprocess.run(argv, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise ClusterError(
                    f"{' '.join(argv)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
                )
    return PROMETHEUS_BINARY


class LocalCluster:
    """Start, inspect and stop one named local cluster."""

    def __init__(self, options: ClusterOptions) -> None:
        self.options = options
        self.directory = options.state_root / options.name
        self.records: dict[str, ProcessRecord] = {}
        self.ports: dict[str, int] = {}
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    # -- paths and addresses -------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "admin.kubeconfig"

    @property
    def pki(self) -> pki.Pki:
        return pki.Pki(self.directory / "pki")

    @property
    def etcd_data(self) -> Path:
        root = _tmpfs_root()
        return (root / f"secsched-etcd-{self.options.name}") if root else self.directory / "etcd"

    @property
    def prometheus_data(self) -> Path:
        return (_tmpfs_root() or self.directory) / f"secsched-prometheus-{self.options.name}"

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['prometheus']}"

    @property
    def exporter_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['exporter']}"

    def binary(self, name: str) -> str:
        return str(versions.bin_dir() / name)

    # -- state -------------------------------------------------------------------------
    def _save_state(self) -> None:
        state = {
            "name": self.options.name,
            "ports": self.ports,
            "kubeconfig": str(self.kubeconfig),
            "etcdData": str(self.etcd_data),
            "options": {
                **asdict(self.options),
                "state_root": str(self.options.state_root),
                "shape": asdict(self.options.shape) if self.options.shape else None,
            },
            "processes": [record.to_dict() for record in self.records.values()],
        }
        self.state_file.write_text(json.dumps(state, indent=2))

    @classmethod
    def attach(cls, name: str = "secsched", state_root: Path | None = None) -> LocalCluster:
        """The cluster a previous `up` started, from its state file (for status and down)."""
        root = state_root or default_state_root()
        state_file = root / name / "state.json"
        if not state_file.exists():
            raise ClusterError(
                f"no cluster named {name!r} is recorded under {root} (start one with `secsched cluster up`)"
            )
        state = json.loads(state_file.read_text())
        options = state["options"]
        shape = NodeShape(**options["shape"]) if options.get("shape") else None
        cluster = cls(
            ClusterOptions(
                name=name,
                nodes=options["nodes"],
                shape=shape,
                zones=options["zones"],
                default_scheduler=options["default_scheduler"],
                prometheus=options["prometheus"],
                scrape_interval=options["scrape_interval"],
                base_load=options.get("base_load"),
                state_root=root,
                node_lease_seconds=int(options.get("node_lease_seconds", 40)),
                topology_exporter=bool(options.get("topology_exporter", True)),
                control_plane_gogc=options.get("control_plane_gogc"),
            )
        )
        cluster.ports = {key: int(value) for key, value in state["ports"].items()}
        cluster.records = {item["name"]: ProcessRecord.from_dict(item) for item in state["processes"]}
        return cluster

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> LocalCluster:
        """Start every component and wait until nodes are Ready and metrics flow; all or nothing."""
        if self.state_file.exists():
            previous = LocalCluster.attach(self.options.name, self.options.state_root)
            if any(processes.is_running(record) for record in previous.records.values()):
                raise ClusterError(
                    f"cluster {self.options.name!r} is already running (see `secsched cluster status`); "
                    "stop it with `secsched cluster down` or choose another --name"
                )
            previous.down(quiet=True)
        build.build()
        prometheus_binary = ensure_prometheus() if self.options.prometheus else None
        started = time.monotonic()
        try:
            self._prepare()
            self._start_etcd()
            self._start_apiserver()
            self._install_crds()
            self._start_controller_manager()
            self._start_provisioner()
            if self.options.topology_exporter:
                self._start_topology_exporter()
            self._start_kwok()
            if self.options.default_scheduler:
                self._start_default_scheduler()
            self._create_nodes()
            self._wait_for_storage()
            if prometheus_binary:
                self._start_exporter(self.options.base_load)
                self._start_prometheus(prometheus_binary, self.options.scrape_interval)
                self._wait_for_metrics(self.options.nodes)
        except BaseException:
            self.down(quiet=True)
            raise
        console.print(
            f"[green]✓[/green] cluster {self.options.name!r} is up ({time.monotonic() - started:.1f}s)"
        )
        return self

    def down(self, quiet: bool = False) -> list[str]:
        """Stop exactly the processes this cluster started, newest first; returns their names."""
        stopped = []
        for name in reversed(list(self.records)):
            record = self.records[name]
            if processes.is_running(record):
                processes.stop(record)
                stopped.append(name)
        for child in self._children.values():
            if child.poll() is None:  # pragma: no cover - stop() has already ended it
                child.kill()
            child.wait()
        self._children.clear()
        shutil.rmtree(self.etcd_data, ignore_errors=True)
        shutil.rmtree(self.prometheus_data, ignore_errors=True)
        self.state_file.unlink(missing_ok=True)
        if not quiet:
            what = ", ".join(stopped) or "nothing was running"
            console.print(f"[green]✓[/green] cluster {self.options.name!r} stopped ({what})")
        return stopped

    def restart(self, component: str, downtime: float = 0.0) -> None:
        """Stop one component, wait `downtime` seconds, start it again with the same arguments.

        For failure tests: an API server restart, a scheduler crash.
        """
        record = self.records[component]
        processes.stop(record)
        if component in self._children:
            self._children[component].wait()
        time.sleep(downtime)
        self._launch(component, record.argv)
        if component == "kube-apiserver":
            self._wait(component, lambda: self._https_ok(f"{self.api_url}/readyz"), timeout=90)

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            name: {"pid": record.pid, "running": processes.is_running(record), "log": record.log}
            for name, record in self.records.items()
        }

    # -- components --------------------------------------------------------------------
    def _prepare(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        shutil.rmtree(self.etcd_data, ignore_errors=True)
        self.directory.mkdir(parents=True)
        for component in (
            "etcd",
            "etcd-peer",
            "apiserver",
            "controller-manager",
            "scheduler",
            "kwok",
            "exporter",
            "prometheus",
        ):
            self.ports[component] = free_port()
        with step("generating certificates"):
            pki.create(
                self.directory / "pki",
                [
                    "127.0.0.1",
                    "localhost",
                    "10.0.0.1",
                    "kubernetes",
                    "kubernetes.default",
                    "kubernetes.default.svc",
                ],
            )
        server = f"https://127.0.0.1:{self.ports['apiserver']}"
        for identity in pki.CLIENT_IDENTITIES:
            target = self.kubeconfig if identity == "admin" else self.directory / f"{identity}.kubeconfig"
            write_kubeconfig(target, server, self.pki, identity)

    def _environment(self, name: str) -> dict[str, str] | None:
        """The environment process `name` starts with: ours, plus GOGC where the options set it."""
        gogc = self.options.control_plane_gogc
        if gogc is None or name not in GO_CONTROL_PLANE:
            return None
        return {**os.environ, "GOGC": str(gogc)}

    def _launch(self, name: str, argv: list[str]) -> None:
        child, record = processes.start(name, argv, self.directory / "logs", self._environment(name))
        self._children[name] = child
        self.records[name] = record
        self._save_state()

    def _wait(self, name: str, probe: Callable[[], bool], timeout: float = 60.0) -> None:
        """Poll `probe` until it holds; fail with the component's log if it exits or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._children[name].poll() is not None:
                raise ClusterError(
                    f"{name} exited with code {self._children[name].returncode}:\n"
                    f"{processes.log_tail(self.records[name])}"
                )
            try:
                if probe():
                    return
            except (httpx.HTTPError, OSError):
                pass
            time.sleep(0.2)
        raise ClusterError(
            f"{name} did not become ready in {timeout:.0f}s:\n{processes.log_tail(self.records[name])}"
        )

    def _https_ok(self, url: str) -> bool:
        context = kubeconfig_loader.from_kubeconfig(self.kubeconfig).ssl_context()
        return httpx.get(url, verify=context, timeout=2).status_code == 200

    def _start_etcd(self) -> None:
        with step("starting etcd"):
            client = f"http://127.0.0.1:{self.ports['etcd']}"
            peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
            self._launch(
                "etcd",
                [
                    self.binary("etcd"),
                    "--name=default",
                    f"--data-dir={self.etcd_data}",
                    f"--listen-client-urls={client}",
                    f"--advertise-client-urls={client}",
                    f"--listen-peer-urls={peer}",
                    f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=default={peer}",
                    "--unsafe-no-fsync",
                    "--log-level=warn",
                    "--quota-backend-bytes=8589934592",
                    "--auto-compaction-mode=periodic",
                    "--auto-compaction-retention=5m",
                ],
            )
            self._wait("etcd", lambda: httpx.get(f"{client}/health", timeout=2).status_code == 200)

    def _start_apiserver(self) -> None:
        with step("starting kube-apiserver"):
            p = self.pki
            port = self.ports["apiserver"]
            self._launch(
                "kube-apiserver",
                [
                    self.binary("kube-apiserver"),
                    f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    f"--secure-port={port}",
                    f"--tls-cert-file={p.serving_cert}",
                    f"--tls-private-key-file={p.serving_key}",
                    f"--client-ca-file={p.ca_cert}",
                    "--service-cluster-ip-range=10.0.0.0/24",
                    f"--service-account-issuer=https://127.0.0.1:{port}",
                    f"--service-account-key-file={p.service_account_key}",
                    f"--service-account-signing-key-file={p.service_account_key}",
                    "--authorization-mode=Node,RBAC",
                    "--allow-privileged=true",
                    "--enable-priority-and-fairness=false",
                    "--max-requests-inflight=0",
                    "--max-mutating-requests-inflight=0",
                    "--endpoint-reconciler-type=none",
                    "--profiling=false",
                    "--event-ttl=1h",
                    "--v=1",
                ],
            )
            self._wait("kube-apiserver", lambda: self._https_ok(f"{self.api_url}/readyz"), timeout=90)

    def _component_flags(self, identity: str, port_name: str) -> list[str]:
        kubeconfig = self.directory / f"{identity}.kubeconfig"
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports[port_name]}",
            "--leader-elect=false",
        ]

    def _start_controller_manager(self) -> None:
        with step("starting kube-controller-manager"):
            p = self.pki
            self._launch(
                "kube-controller-manager",
                [
                    self.binary("kube-controller-manager"),
                    *self._component_flags("controller-manager", "controller-manager"),
                    f"--service-account-private-key-file={p.service_account_key}",
                    f"--root-ca-file={p.ca_cert}",
                    "--use-service-account-credentials=true",
                    f"--cluster-signing-cert-file={p.ca_cert}",
                    f"--cluster-signing-key-file={p.ca_key}",
                    # `*` runs every controller that is on by default, among them what storage
                    # and PodDisruptionBudgets need: persistentvolume-binder (hands claims of
                    # external provisioners over, binds), pv/pvc-protection, attachdetach and
                    # disruption. No --enable-hostpath-provisioner: that is only for the in-tree
                    # kubernetes.io/host-path provisioner; our classes name external ones.
                    "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
                    f"--node-monitor-grace-period={max(50, 2 * self.options.node_lease_seconds)}s",
                    "--kube-api-qps=500",
                    "--kube-api-burst=1000",
                    "--v=1",
                ],
            )
            self._wait(
                "kube-controller-manager",
                lambda: (
                    httpx.get(
                        f"https://127.0.0.1:{self.ports['controller-manager']}/healthz",
                        verify=False,
                        timeout=2,
                    ).status_code
                    == 200
                ),
            )

    def _start_kwok(self) -> None:
        with step("starting KWOK (fake kubelets)"):
            self._launch(
                "kwok",
                [
                    self.binary("kwok"),
                    f"--kubeconfig={self.directory / 'kwok.kubeconfig'}",
                    "--manage-all-nodes=false",
                    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                    f"--server-address=127.0.0.1:{self.ports['kwok']}",
                    "--cidr=10.244.0.0/16",
                    "--node-ip=10.1.0.1",
                    f"--node-lease-duration-seconds={self.options.node_lease_seconds}",
                ],
            )
            self._wait(
                "kwok",
                lambda: (
                    httpx.get(f"http://127.0.0.1:{self.ports['kwok']}/healthz", timeout=2).status_code == 200
                ),
            )

    def _start_default_scheduler(self) -> None:
        with step("starting the upstream kube-scheduler (default-scheduler)"):
            config = self.directory / "default-scheduler.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration",
                        "leaderElection": {"leaderElect": False},
                        "clientConnection": {"kubeconfig": str(self.directory / "scheduler.kubeconfig")},
                        "profiles": [{"schedulerName": "default-scheduler"}],
                    }
                )
            )
            self._launch(
                "kube-scheduler",
                [
                    self.binary("kube-scheduler-plugins"),
                    f"--config={config}",
                    *[
                        flag
                        for flag in self._component_flags("scheduler", "scheduler")
                        if not flag.startswith(("--kubeconfig", "--leader-elect"))
                    ],
                    "--v=1",
                ],
            )
            self._wait(
                "kube-scheduler",
                lambda: (
                    httpx.get(
                        f"https://127.0.0.1:{self.ports['scheduler']}/healthz", verify=False, timeout=2
                    ).status_code
                    == 200
                ),
            )

    def _install_crds(self) -> None:
        """The CRDs of the scheduler-plugins our plugins read (PodGroups, NodeResourceTopologies),
        as an admin installs them (deploy/crds) before enabling those plugins."""
        documents = manifests.read_manifests([CRDS])
        if not documents:
            return
        with step(f"installing {len(documents)} CustomResourceDefinitions"):
            asyncio.run(self._apply(documents))

    async def _apply(self, documents: list[dict[str, Any]]) -> None:
        async with self.api() as api:
            await manifests.apply_manifests(api, documents)

    def _start_provisioner(self) -> None:
        """Deploy the storage classes and CSIDriver, then run the provisioner that serves them."""
        with step("installing storage (StorageClasses local-wffc, zonal-immediate) and its provisioner"):
            asyncio.run(self._install_storage())
            self._launch(
                PROVISIONER,
                [
                    sys.executable,
                    "-m",
                    "secsched_devtools.cluster.provisioner",
                    f"--kubeconfig={self.kubeconfig}",
                ],
            )

    def _start_topology_exporter(self) -> None:
        """Publish each KWOK node's NUMA zones as a NodeResourceTopology (see `topologyexporter`)."""
        with step("starting the NUMA topology exporter (NodeResourceTopologies)"):
            self._launch(
                TOPOLOGY_EXPORTER,
                [
                    sys.executable,
                    "-m",
                    "secsched_devtools.cluster.topologyexporter",
                    f"--kubeconfig={self.kubeconfig}",
                ],
            )

    async def _install_storage(self) -> None:
        async with self.api() as api:
            await provisioner.install(api)

    def _wait_for_storage(self, timeout: float = 120.0) -> None:
        """Until every node has its CSINode and storage capacity, so volumes can be scheduled."""
        if self.options.nodes <= 0:
            return
        with step("waiting for every node's CSINode and CSIStorageCapacity"):
            self._wait(PROVISIONER, lambda: asyncio.run(self._storage_ready()), timeout)

    async def _storage_ready(self) -> bool:
        async with self.api() as api:
            nodes = {node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"]}
            csinodes = (await api.list_all(provisioner.CSINODES))["items"]
            capacities = (await api.list_all(provisioner.CAPACITIES))["items"]
        with_driver = {
            item["metadata"]["name"]
            for item in csinodes
            if any(driver.get("name") == provisioner.LOCAL for driver in item["spec"].get("drivers") or [])
        }
        with_capacity = {
            item.get("nodeTopology", {}).get("matchLabels", {}).get(provisioner.HOSTNAME_KEY)
            for item in capacities
            if item.get("storageClassName") == provisioner.LOCAL_CLASS
        }
        return nodes <= with_driver and nodes <= with_capacity

    def storage(self) -> dict[str, Any]:
        """The storage classes the API server holds (None if it cannot be reached) and whether
        the provisioner runs: what `secsched cluster status` shows."""
        record = self.records.get(PROVISIONER)
        classes: list[dict[str, Any]] | None
        try:
            classes = asyncio.run(self._storage_classes())
        except (ApiError, ApiUnavailable, OSError):
            classes = None
        return {
            "provisioner": {
                "running": bool(record and processes.is_running(record)),
                "pid": record.pid if record else None,
                "serves": list(provisioner.PROVISIONERS),
            },
            "storageClasses": classes,
        }

    async def _storage_classes(self) -> list[dict[str, Any]]:
        connection = kubeconfig_loader.from_kubeconfig(self.kubeconfig)
        async with ApiClient(connection, qps=0, burst=0, timeout=5, max_retry_seconds=0) as api:
            items = (await api.list_all("/apis/storage.k8s.io/v1/storageclasses"))["items"]
        return [
            {
                "name": item["metadata"]["name"],
                "provisioner": item.get("provisioner"),
                "volumeBindingMode": item.get("volumeBindingMode"),
                "reclaimPolicy": item.get("reclaimPolicy"),
                "default": (item["metadata"].get("annotations") or {}).get(provisioner.ANN_DEFAULT_CLASS)
                == "true",
            }
            for item in items
        ]

    async def add_nodes(
        self, count: int, shape: NodeShape | None = None, start: int | None = None
    ) -> list[str]:
        """Create more fake nodes (named after the ones there are) and wait until they are Ready."""
        if start is None:
            start = len(await self._list("/api/v1/nodes"))
        manifests = plan_nodes(count, shape, self.options.zones, start=start)
        await self._create_and_wait(manifests)
        return [manifest["metadata"]["name"] for manifest in manifests]

    async def _list(self, path: str) -> list[dict[str, Any]]:
        async with self.api() as api:
            return list((await api.list_all(path))["items"])

    async def _create_and_wait(self, manifests: list[dict[str, Any]], timeout: float = 120.0) -> None:
        names = {manifest["metadata"]["name"] for manifest in manifests}
        async with self.api() as api:
            await create_nodes(api, manifests)

            async def ready() -> set[str]:
                nodes = (await api.list_all("/api/v1/nodes"))["items"]
                return {node["metadata"]["name"] for node in nodes if is_ready(node)}

            try:
                await poll_until(
                    ready,
                    lambda found: names <= found,
                    lambda found: (
                        f"{len(names - found)} of {len(names)} nodes are not Ready after "
                        f"{timeout:.0f}s; see {self.records['kwok'].log}"
                    ),
                    timeout,
                    interval=0.5,
                )
            except TimeoutError as error:
                raise ClusterError(str(error)) from None

    def _create_nodes(self) -> None:
        if self.options.nodes <= 0:
            return
        with step(f"creating {self.options.nodes} KWOK nodes and waiting until they are Ready"):
            manifests = plan_nodes(self.options.nodes, self.options.shape, self.options.zones)
            asyncio.run(self._create_and_wait(manifests))

    def _start_exporter(self, base_load: dict[str, Any] | None) -> None:
        with step("starting the node-load exporter"):
            state = self.directory / "load.json"
            if base_load:
                state.write_text(json.dumps(base_load))
            else:  # a load left by an earlier exporter of this cluster is not this one's
                state.unlink(missing_ok=True)
            self._launch(
                LOAD_EXPORTER,
                [
                    sys.executable,
                    "-m",
                    "secsched_devtools.cluster.loadexporter",
                    f"--kubeconfig={self.kubeconfig}",
                    f"--port={self.ports['exporter']}",
                    f"--state={state}",
                ],
            )
            self._wait(
                LOAD_EXPORTER, lambda: httpx.get(f"{self.exporter_url}/load", timeout=2).status_code == 200
            )

    def _start_prometheus(self, binary: str, interval: str) -> None:
        with step(f"starting Prometheus (scraping every {interval})"):
            config = self.directory / "prometheus.yml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "global": {"scrape_interval": interval, "evaluation_interval": interval},
                        "scrape_configs": [
                            {
                                "job_name": "node-load",
                                "honor_labels": True,
                                "static_configs": [{"targets": [f"127.0.0.1:{self.ports['exporter']}"]}],
                            }
                        ],
                    }
                )
            )
            self._launch(
                PROMETHEUS,
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.prometheus_data}",
                    f"--web.listen-address=127.0.0.1:{self.ports['prometheus']}",
                    "--storage.tsdb.retention.time=6h",
                    "--log.level=warn",
                ],
            )
            self._wait(
                PROMETHEUS,
                lambda: httpx.get(f"{self.prometheus_url}/-/ready", timeout=2).status_code == 200,
            )

    def _wait_for_metrics(self, expected: int, timeout: float = 60.0) -> None:
        with step(f"waiting for the first node-load samples of {expected:,} nodes in Prometheus"):
            self._wait(PROMETHEUS, lambda: self._series("instance:node_cpu:ratio") >= expected, timeout)

    def _series(self, name: str) -> int:
        """How many series of ``name`` Prometheus holds (a count, not thousands of samples)."""
        return int(sum(self.query(f"count({name})").values()))

    # -- the load metrics on a running cluster ---------------------------------------------
    def load_metrics_running(self) -> bool:
        return any(
            name in self.records and processes.is_running(self.records[name])
            for name in (LOAD_EXPORTER, PROMETHEUS)
        )

    def start_load_metrics(
        self,
        nodes: int,
        base_load: dict[str, Any] | None = None,
        scrape_interval: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        """Start the node-load exporter and Prometheus on a cluster that runs without them, and wait
        until Prometheus holds a sample of each of ``nodes`` nodes.

        For a cluster whose other uses must not pay for the scraping (the benchmark brings them up
        for its load-aware class alone); Prometheus starts with an empty database, so every
        average it answers covers this start's samples only. ``base_load``: the load model's
        starting state (loadmodel.LoadModel.update); ``scrape_interval``: the options' if None.
        """
        if self.load_metrics_running():
            raise ClusterError(f"cluster {self.options.name!r} already runs its load exporter or Prometheus")
        binary = ensure_prometheus()
        shutil.rmtree(self.prometheus_data, ignore_errors=True)
        try:
            self._start_exporter(base_load)
            self._start_prometheus(binary, scrape_interval or self.options.scrape_interval)
            self._wait_for_metrics(nodes, timeout)
        except BaseException:
            self.stop_load_metrics()
            raise

    def stop_load_metrics(self) -> list[str]:
        """Stop Prometheus and the load exporter (whichever runs) and drop Prometheus' data; the
        rest of the cluster keeps running. Returns what was stopped."""
        stopped = []
        for name in (PROMETHEUS, LOAD_EXPORTER):
            record = self.records.pop(name, None)
            if record is not None and processes.is_running(record):
                processes.stop(record)
                stopped.append(name)
            child = self._children.pop(name, None)
            if child is not None:
                if child.poll() is None:  # pragma: no cover - stop() has already ended it
                    child.kill()
                child.wait()
        shutil.rmtree(self.prometheus_data, ignore_errors=True)
        if self.state_file.exists():
            self._save_state()
        return stopped

    # -- conveniences for tests, the demo and the CLI ----------------------------------
    def api(self, qps: float = 0, burst: int = 0) -> ApiClient:
        """An admin client (unlimited rate unless asked) for this cluster."""
        return ApiClient(kubeconfig_loader.from_kubeconfig(self.kubeconfig), qps=qps, burst=burst)

    def query(self, promql: str) -> dict[str, float]:
        """An instant PromQL query: instance label -> value."""
        response = httpx.get(f"{self.prometheus_url}/api/v1/query", params={"query": promql}, timeout=10)
        response.raise_for_status()
        result = response.json()["data"]["result"]
        return {item["metric"].get("instance", ""): float(item["value"][1]) for item in result}

    def set_base_load(self, update: dict[str, Any]) -> dict[str, Any]:
        """Change the load model at run time (see loadmodel.LoadModel.update)."""
        response = httpx.put(f"{self.exporter_url}/load", json=update, timeout=10)
        if response.status_code != 200:
            raise ClusterError(f"the load exporter refused {update}: {response.text}")
        return dict(response.json())

    def load(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.exporter_url}/load", timeout=10).json())
