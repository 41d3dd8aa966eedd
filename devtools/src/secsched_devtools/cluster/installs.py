"""What a local cluster puts into its API server once it answers: the CRDs our plugins read,
the storage classes and CSIDriver the provisioner serves, and the KWOK nodes; and reading them
back (until each node has its storage, the classes `secsched cluster status` shows).

All of it goes through the admin's kubeconfig with our own API client, as an admin would apply
it; the processes that serve it are `components`'.
"""

from __future__ import annotations

import asyncio
from typing import Any

from secondary_scheduler.kube import kubeconfig as kubeconfig_loader
from secondary_scheduler.kube import manifests
from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster import provisioner
from secsched_devtools.cluster.components import PROVISIONER
from secsched_devtools.cluster.layout import ClusterError, ClusterLayout
from secsched_devtools.cluster.nodes import NodeShape, create_nodes, is_settled, plan_nodes
from secsched_devtools.cluster.progress import step
from secsched_devtools.cluster.supervisor import Supervisor
from secsched_devtools.repo import REPO

CRDS = REPO / "deploy" / "crds"
"""CustomResourceDefinitions installed at start: every *.yaml file of deploy/crds (what an admin applies)."""


class ApiInstalls:
    """Objects created in one cluster's API server, and waiting until they are served."""

    def __init__(self, layout: ClusterLayout, supervisor: Supervisor) -> None:
        self.layout = layout
        self.supervisor = supervisor

    def api(self, qps: float = 0, burst: int = 0) -> ApiClient:
        """An admin client (unlimited rate unless asked) for this cluster."""
        return ApiClient(kubeconfig_loader.from_kubeconfig(self.layout.kubeconfig), qps=qps, burst=burst)

    def install_crds(self) -> None:
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

    def install_storage(self) -> None:
        """The StorageClasses local-wffc and zonal-immediate and their CSIDriver (`provisioner.install`)."""
        asyncio.run(self._install_storage())

    async def _install_storage(self) -> None:
        async with self.api() as api:
            await provisioner.install(api)

    def wait_for_storage(self, timeout: float = 120.0) -> None:
        """Until every node has its CSINode and storage capacity, so volumes can be scheduled."""
        if self.layout.options.nodes <= 0:
            return
        with step("waiting for every node's CSINode and CSIStorageCapacity"):
            self.supervisor.wait(PROVISIONER, lambda: asyncio.run(self._storage_ready()), timeout)

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
        record = self.supervisor.records.get(PROVISIONER)
        classes: list[dict[str, Any]] | None
        try:
            classes = asyncio.run(self._storage_classes())
        except (ApiError, ApiUnavailable, OSError):
            classes = None
        return {
            "provisioner": {
                "running": self.supervisor.running(PROVISIONER),
                "pid": record.pid if record else None,
                "serves": list(provisioner.PROVISIONERS),
            },
            "storageClasses": classes,
        }

    async def _storage_classes(self) -> list[dict[str, Any]]:
        connection = kubeconfig_loader.from_kubeconfig(self.layout.kubeconfig)
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

    def create_nodes(self) -> None:
        """The options' KWOK nodes, waited for until Ready and their not-ready taint is lifted."""
        options = self.layout.options
        if options.nodes <= 0:
            return
        with step(f"creating {options.nodes} KWOK nodes and waiting until they are Ready and untainted"):
            asyncio.run(self._create_and_wait(plan_nodes(options.nodes, options.shape, options.zones)))

    async def add_nodes(
        self, count: int, shape: NodeShape | None = None, start: int | None = None
    ) -> list[str]:
        """Create more fake nodes (named after the ones there are) and wait until they are Ready and
        untainted (a test that reads or snapshots them at once sees what a scheduler will)."""
        if start is None:
            async with self.api() as api:
                start = len((await api.list_all("/api/v1/nodes"))["items"])
        planned = plan_nodes(count, shape, self.layout.options.zones, start=start)
        await self._create_and_wait(planned)
        return [manifest["metadata"]["name"] for manifest in planned]

    async def _create_and_wait(self, planned: list[dict[str, Any]], timeout: float = 120.0) -> None:
        names = {manifest["metadata"]["name"] for manifest in planned}
        async with self.api() as api:
            await create_nodes(api, planned)

            async def ready() -> set[str]:
                nodes = (await api.list_all("/api/v1/nodes"))["items"]
                return {node["metadata"]["name"] for node in nodes if is_settled(node)}

            try:
                await poll_until(
                    ready,
                    lambda found: names <= found,
                    lambda found: (
                        f"{len(names - found)} of {len(names)} nodes are not Ready (or still tainted "
                        f"not-ready) after "
                        f"{timeout:.0f}s; see {self.supervisor.records['kwok'].log}"
                    ),
                    timeout,
                    interval=0.5,
                )
            except TimeoutError as error:
                raise ClusterError(str(error)) from None
