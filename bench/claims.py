"""Claims and their volumes through the API: the volumes section's and the pvc class's plumbing.

Both measure pods that mount one WaitForFirstConsumer claim of the local cluster's
provisioner; both need every node's storage published before a run, and every PV gone and
every node's capacity whole again after one, so that each run starts with the same room.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from bench.context import BenchContext
from bench.objects import delete_each
from bench.workload import delete_all_pods
from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster import provisioner
from secsched_devtools.cluster.progress import step

PVS = provisioner.PVS


def claims_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"


async def capacity_restored(api: ApiClient) -> tuple[int, int]:
    """(nodes whose ``local-wffc`` CSIStorageCapacity is below their whole pool or missing, nodes)."""
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    published = {
        ((item.get("nodeTopology") or {}).get("matchLabels") or {}).get(provisioner.HOSTNAME_KEY): item
        for item in (await api.list_all(provisioner.CAPACITIES))["items"]
        if item.get("storageClassName") == provisioner.LOCAL_CLASS
    }
    short = 0
    for node in nodes:
        name = node["metadata"]["name"]
        item = published.get(name)
        if item is None or provisioner._bytes(item.get("capacity"), -1) < provisioner.node_storage(node):
            short += 1
    return short, len(nodes)


async def storage_published(api: ApiClient) -> tuple[int, int]:
    """(nodes with a CSINode of our driver and a ``local-wffc`` capacity, nodes)."""
    nodes = {node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"]}
    with_driver = {
        item["metadata"]["name"]
        for item in (await api.list_all(provisioner.CSINODES))["items"]
        if any(driver.get("name") == provisioner.LOCAL for driver in item["spec"].get("drivers") or [])
    }
    short, _ = await capacity_restored(api)
    return len(nodes & with_driver) - short, len(nodes)


async def delete_claims(
    api: ApiClient, namespace: str, concurrency: int, report: Callable[[str], None], timeout: float = 600.0
) -> None:
    """Delete the namespace's claims; wait until their PVs are gone and every node's capacity is whole."""
    path = claims_path(namespace)
    started = time.monotonic()
    claims = [item["metadata"]["name"] for item in (await api.list_all(path))["items"]]
    report(f"deleting {len(claims)} claims")
    await delete_each(api, path, claims, concurrency)

    async def left() -> tuple[int, int, int]:
        """(claims left, their PVs left, nodes short of capacity: counted once both are gone)."""
        claims_left = len((await api.list_all(path))["items"])
        volumes = [
            volume
            for volume in (await api.list_all(PVS))["items"]
            if ((volume.get("spec") or {}).get("claimRef") or {}).get("namespace") == namespace
        ]
        short = (await capacity_restored(api))[0] if not claims_left and not volumes else 0
        return claims_left, len(volumes), short

    await poll_until(
        left,
        lambda found: not any(found),
        lambda found: (
            f"cleaning up {namespace}: after {timeout:.0f}s, {found[0]} claims, {found[1]} PVs left, "
            f"{found[2]} nodes without their whole capacity; see the cluster's logs/storage-provisioner.log"
        ),
        timeout - (time.monotonic() - started),
        interval=1.0,
        waiting=lambda found: report(
            f"waiting: {found[0]} claims, {found[1]} PVs left, {found[2]} nodes' capacity not yet back"
        ),
    )


async def clean_up(
    api: ApiClient, namespace: str, concurrency: int, report: Callable[[str], None], timeout: float = 600.0
) -> float:
    """Delete the namespace's pods and claims, wait until their PVs are gone and every node's
    capacity is whole again, then delete the namespace. Returns the seconds it took."""
    started = time.monotonic()
    report("deleting the pods")
    await delete_all_pods(api, namespace, concurrency, timeout)
    await delete_claims(api, namespace, concurrency, report, max(1.0, started + timeout - time.monotonic()))
    with contextlib.suppress(ApiError):
        await api.delete(f"/api/v1/namespaces/{namespace}")
    return time.monotonic() - started


async def wait_published(context: BenchContext, timeout: float = 600.0) -> None:
    """Until the provisioner has made every node's CSINode and capacity (new nodes need them)."""
    with step(f"{context.nodes:,} nodes · every node's CSINode and CSIStorageCapacity", log_every=10):
        await poll_until(
            lambda: storage_published(context.api),
            lambda found: found[0] >= found[1],
            lambda found: f"only {found[0]}/{found[1]} nodes have their CSINode and CSIStorageCapacity",
            timeout,
            interval=3.0,
            waiting=lambda found: context.log(
                f"    {found[0]:,}/{found[1]:,} nodes have their CSINode and CSIStorageCapacity"
            ),
        )
