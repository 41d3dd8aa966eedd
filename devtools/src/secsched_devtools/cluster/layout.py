"""One named local cluster's layout and state: what runs (its options), where its files live,
which ports it listens on, and the state file that lets another command find it again.

Everything a cluster writes is under `<state root>/<name>/` (`$SECSCHED_STATE_DIR`, else
`$TMPDIR/secsched`) except etcd's and Prometheus' data, which go to tmpfs when there is one
(fast and disposable). The state file records the options, ports and started processes, so
`secsched cluster status` and `down` work from another shell (`ClusterLayout.read_state`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from secsched_devtools.cluster import pki, versions
from secsched_devtools.cluster.kubeconfigs import write_kubeconfig
from secsched_devtools.cluster.nodes import NodeShape
from secsched_devtools.cluster.processes import ProcessRecord
from secsched_devtools.cluster.progress import step

PORTS = (
    "etcd",
    "etcd-peer",
    "apiserver",
    "controller-manager",
    "scheduler",
    "kwok",
    "exporter",
    "prometheus",
)
"""The ports a cluster allocates when it is prepared, by component."""
SERVING_NAMES = (
    "127.0.0.1",
    "localhost",
    "10.0.0.1",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
)
"""The API server certificate's names: the loopback address, and those pods call it by."""


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says which part and why."""


def default_state_root() -> Path:
    return Path(os.environ.get("SECSCHED_STATE_DIR") or Path(os.environ.get("TMPDIR", "/tmp")) / "secsched")


def tmpfs_root() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def binary(name: str) -> str:
    """The path of a control-plane binary `secsched cluster build` made."""
    return str(versions.bin_dir() / name)


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
    dra_driver: bool = True
    """Publish ResourceSlices of GPUs for nodes labelled `gpu.dra.secsched.io/count` (`dradriver`)."""
    control_plane_gogc: int | None = None
    """GOGC for the control plane's Go processes (`supervisor.GO_CONTROL_PLANE`), None for Go's
    default (100). The benchmark raises it (bench's CONTROL_PLANE_GOGC says why). Never applied
    to a kube-scheduler, which must run as it ships."""


class ClusterLayout:
    """Where one cluster's files are and which ports it uses; its state file."""

    def __init__(self, options: ClusterOptions) -> None:
        self.options = options
        self.directory = options.state_root / options.name
        self.ports: dict[str, int] = {}

    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig."""
        return self.directory / "admin.kubeconfig"

    def kubeconfig_of(self, identity: str) -> Path:
        """The kubeconfig of one of `pki.CLIENT_IDENTITIES` (the admin's is `kubeconfig`)."""
        return self.kubeconfig if identity == "admin" else self.directory / f"{identity}.kubeconfig"

    @property
    def logs(self) -> Path:
        return self.directory / "logs"

    @property
    def pki(self) -> pki.Pki:
        return pki.Pki(self.directory / "pki")

    @property
    def etcd_data(self) -> Path:
        root = tmpfs_root()
        return (root / f"secsched-etcd-{self.options.name}") if root else self.directory / "etcd"

    @property
    def prometheus_data(self) -> Path:
        return (tmpfs_root() or self.directory) / f"secsched-prometheus-{self.options.name}"

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['prometheus']}"

    @property
    def exporter_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['exporter']}"

    def prepare(self) -> None:
        """A fresh directory, free ports, certificates and a kubeconfig per client identity."""
        shutil.rmtree(self.directory, ignore_errors=True)
        shutil.rmtree(self.etcd_data, ignore_errors=True)
        self.directory.mkdir(parents=True)
        self.ports = {component: free_port() for component in PORTS}
        with step("generating certificates"):
            pki.create(self.directory / "pki", list(SERVING_NAMES))
        for identity in pki.CLIENT_IDENTITIES:
            write_kubeconfig(self.kubeconfig_of(identity), self.api_url, self.pki, identity)

    def remove_data(self) -> None:
        """etcd's and Prometheus' data and the state file: what a stopped cluster leaves behind."""
        shutil.rmtree(self.etcd_data, ignore_errors=True)
        shutil.rmtree(self.prometheus_data, ignore_errors=True)
        self.state_file.unlink(missing_ok=True)

    def write_state(self, records: Iterable[ProcessRecord]) -> None:
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
            "processes": [record.to_dict() for record in records],
        }
        self.state_file.write_text(json.dumps(state, indent=2))

    @classmethod
    def read_state(
        cls, name: str, state_root: Path | None = None
    ) -> tuple[ClusterLayout, list[ProcessRecord]]:
        """The layout and processes a previous `up` recorded (for status and down)."""
        root = state_root or default_state_root()
        state_file = root / name / "state.json"
        if not state_file.exists():
            raise ClusterError(
                f"no cluster named {name!r} is recorded under {root} (start one with `secsched cluster up`)"
            )
        state = json.loads(state_file.read_text())
        options = state["options"]
        shape = NodeShape(**options["shape"]) if options.get("shape") else None
        layout = cls(
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
                dra_driver=bool(options.get("dra_driver", True)),
                control_plane_gogc=options.get("control_plane_gogc"),
            )
        )
        layout.ports = {key: int(value) for key, value in state["ports"].items()}
        return layout, [ProcessRecord.from_dict(item) for item in state["processes"]]
