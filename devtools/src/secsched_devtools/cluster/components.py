"""The ten processes of a local cluster, each started with its flags and waited for until it
answers: etcd, kube-apiserver, kube-controller-manager, KWOK, the upstream kube-scheduler as
`default-scheduler`, and ours: the storage provisioner, the NUMA topology exporter, the fake DRA
driver, the node-load
exporter, and Prometheus scraping it.

Each launcher only starts its process (`Supervisor.launch`) and waits for its health endpoint;
what has to be in the API first (CRDs, StorageClasses) is `installs`' job, and the order is the
façade's (`localcluster.LocalCluster.up`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

from secondary_scheduler.kube import kubeconfig as kubeconfig_loader
from secsched_devtools.cluster.layout import ClusterError, ClusterLayout, binary
from secsched_devtools.cluster.progress import step
from secsched_devtools.cluster.supervisor import Supervisor

PROMETHEUS_BINARY = "/usr/bin/prometheus"
PROVISIONER = "storage-provisioner"
TOPOLOGY_EXPORTER = "topology-exporter"
DRA_DRIVER = "dra-driver"
LOAD_EXPORTER = "load-exporter"
PROMETHEUS = "prometheus"


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


def _healthy(url: str, verify: bool = True) -> bool:
    return httpx.get(url, verify=verify, timeout=2).status_code == 200


class Components:
    """Launch each component of one cluster (its layout's ports, certificates and kubeconfigs)."""

    def __init__(self, layout: ClusterLayout, supervisor: Supervisor) -> None:
        self.layout = layout
        self.supervisor = supervisor

    def _https_ok(self, url: str) -> bool:
        context = kubeconfig_loader.from_kubeconfig(self.layout.kubeconfig).ssl_context()
        return httpx.get(url, verify=context, timeout=2).status_code == 200

    def wait_for_apiserver(self) -> None:
        self.supervisor.wait(
            "kube-apiserver", lambda: self._https_ok(f"{self.layout.api_url}/readyz"), timeout=90
        )

    def _component_flags(self, identity: str, port_name: str) -> list[str]:
        kubeconfig = self.layout.kubeconfig_of(identity)
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.layout.ports[port_name]}",
            "--leader-elect=false",
        ]

    def _our_program(self, name: str, module: str, *flags: str) -> None:
        """One of our Python programs (`python -m module`), with the admin's kubeconfig."""
        self.supervisor.launch(
            name, [sys.executable, "-m", module, f"--kubeconfig={self.layout.kubeconfig}", *flags]
        )

    def start_etcd(self) -> None:
        ports = self.layout.ports
        with step("starting etcd"):
            client = f"http://127.0.0.1:{ports['etcd']}"
            peer = f"http://127.0.0.1:{ports['etcd-peer']}"
            self.supervisor.launch(
                "etcd",
                [
                    binary("etcd"),
                    "--name=default",
                    f"--data-dir={self.layout.etcd_data}",
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
            self.supervisor.wait("etcd", lambda: _healthy(f"{client}/health"))

    def start_apiserver(self) -> None:
        with step("starting kube-apiserver"):
            p = self.layout.pki
            port = self.layout.ports["apiserver"]
            self.supervisor.launch(
                "kube-apiserver",
                [
                    binary("kube-apiserver"),
                    f"--etcd-servers=http://127.0.0.1:{self.layout.ports['etcd']}",
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
            self.wait_for_apiserver()

    def start_controller_manager(self) -> None:
        with step("starting kube-controller-manager"):
            p = self.layout.pki
            self.supervisor.launch(
                "kube-controller-manager",
                [
                    binary("kube-controller-manager"),
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
                    # `*` includes resourceclaim-controller (DynamicResourceAllocation is GA and
                    # on in 1.34): it creates a pod's claims from ResourceClaimTemplates, and
                    # deallocates and deletes them once their pods are gone.
                    "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
                    f"--node-monitor-grace-period={max(50, 2 * self.layout.options.node_lease_seconds)}s",
                    "--kube-api-qps=500",
                    "--kube-api-burst=1000",
                    "--v=1",
                ],
            )
            url = f"https://127.0.0.1:{self.layout.ports['controller-manager']}/healthz"
            self.supervisor.wait("kube-controller-manager", lambda: _healthy(url, verify=False))

    def start_provisioner(self) -> None:
        """Our storage provisioner (`provisioner`), serving the classes `installs` created."""
        self._our_program(PROVISIONER, "secsched_devtools.cluster.provisioner")

    def start_topology_exporter(self) -> None:
        """Publish each KWOK node's NUMA zones as a NodeResourceTopology (see `topologyexporter`)."""
        with step("starting the NUMA topology exporter (NodeResourceTopologies)"):
            self._our_program(TOPOLOGY_EXPORTER, "secsched_devtools.cluster.topologyexporter")

    def start_dra_driver(self) -> None:
        """Publish labelled KWOK nodes' GPUs as ResourceSlices, and their DeviceClass (see `dradriver`)."""
        with step("starting the fake DRA driver (ResourceSlices of GPUs)"):
            self._our_program(DRA_DRIVER, "secsched_devtools.cluster.dradriver")

    def start_kwok(self) -> None:
        with step("starting KWOK (fake kubelets)"):
            port = self.layout.ports["kwok"]
            self.supervisor.launch(
                "kwok",
                [
                    binary("kwok"),
                    f"--kubeconfig={self.layout.kubeconfig_of('kwok')}",
                    "--manage-all-nodes=false",
                    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                    f"--server-address=127.0.0.1:{port}",
                    "--cidr=10.244.0.0/16",
                    "--node-ip=10.1.0.1",
                    f"--node-lease-duration-seconds={self.layout.options.node_lease_seconds}",
                ],
            )
            self.supervisor.wait("kwok", lambda: _healthy(f"http://127.0.0.1:{port}/healthz"))

    def start_default_scheduler(self) -> None:
        with step("starting the upstream kube-scheduler (default-scheduler)"):
            config = self.layout.directory / "default-scheduler.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration",
                        "leaderElection": {"leaderElect": False},
                        "clientConnection": {"kubeconfig": str(self.layout.kubeconfig_of("scheduler"))},
                        "profiles": [{"schedulerName": "default-scheduler"}],
                    }
                )
            )
            self.supervisor.launch(
                "kube-scheduler",
                [
                    binary("kube-scheduler-plugins"),
                    f"--config={config}",
                    *[
                        flag
                        for flag in self._component_flags("scheduler", "scheduler")
                        if not flag.startswith(("--kubeconfig", "--leader-elect"))
                    ],
                    "--v=1",
                ],
            )
            url = f"https://127.0.0.1:{self.layout.ports['scheduler']}/healthz"
            self.supervisor.wait("kube-scheduler", lambda: _healthy(url, verify=False))

    def start_load_exporter(self, base_load: dict[str, Any] | None) -> None:
        """Our node-load exporter (`loadexporter`), starting from `base_load` (none: an idle model)."""
        with step("starting the node-load exporter"):
            state = self.layout.directory / "load.json"
            if base_load:
                state.write_text(json.dumps(base_load))
            else:  # a load left by an earlier exporter of this cluster is not this one's
                state.unlink(missing_ok=True)
            self._our_program(
                LOAD_EXPORTER,
                "secsched_devtools.cluster.loadexporter",
                f"--port={self.layout.ports['exporter']}",
                f"--state={state}",
            )
            self.supervisor.wait(LOAD_EXPORTER, lambda: _healthy(f"{self.layout.exporter_url}/load"))

    def start_prometheus(self, prometheus_binary: str, interval: str) -> None:
        with step(f"starting Prometheus (scraping every {interval})"):
            config = self.layout.directory / "prometheus.yml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "global": {"scrape_interval": interval, "evaluation_interval": interval},
                        "scrape_configs": [
                            {
                                "job_name": "node-load",
                                "honor_labels": True,
                                "static_configs": [
                                    {"targets": [f"127.0.0.1:{self.layout.ports['exporter']}"]}
                                ],
                            }
                        ],
                    }
                )
            )
            self.supervisor.launch(
                PROMETHEUS,
                [
                    prometheus_binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.layout.prometheus_data}",
                    f"--web.listen-address=127.0.0.1:{self.layout.ports['prometheus']}",
                    "--storage.tsdb.retention.time=6h",
                    "--log.level=warn",
                ],
            )
            self.supervisor.wait(PROMETHEUS, lambda: _healthy(f"{self.layout.prometheus_url}/-/ready"))
