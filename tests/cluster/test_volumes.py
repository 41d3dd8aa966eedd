"""The volume plugins on the real control plane: ours and upstream's kube-scheduler, same objects.

Both schedulers run as processes with the same profile (kube-scheduler 1.34's default
plugins, volume plugins included, in upstream's order); only the scheduler name differs.
Every case builds the same objects twice, in a namespace per scheduler, runs both at once
and compares what happened: the node each pod was bound to (and where its volume was
provisioned), or the FailedScheduling message each scheduler wrote on the pod. The volumes
come from the cluster's own provisioner (`local-wffc`, WaitForFirstConsumer, per-node pools
published as CSIStorageCapacity; CSINode volume limits) or are created here by hand.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster import provisioner
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import MAX_VOLUMES_LABEL
from secsched_devtools.cluster.schedulers import (
    OURS,
    UPSTREAM,
    SchedulerRun,
    scheduler_config,
    start_scheduler,
)
from tests.conftest import CLUSTER_NODES, fresh_namespace

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
SCHEDULERS = {"ours": "secondary-scheduler", "upstream": "upstream-scheduler"}
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

PROFILE = """\
    plugins:
      multiPoint:
        disabled:
          - name: "*"
        enabled:
          - name: SchedulingGates
          - name: PrioritySort
          - name: NodeUnschedulable
          - name: NodeName
          - name: TaintToleration
            weight: 3
          - name: NodeAffinity
            weight: 2
          - name: NodePorts
          - name: NodeResourcesFit
            weight: 1
          - name: VolumeRestrictions
          - name: NodeVolumeLimits
          - name: VolumeBinding
          - name: VolumeZone
          - name: PodTopologySpread
            weight: 2
          - name: InterPodAffinity
            weight: 2
          - name: DefaultPreemption
          - name: NodeResourcesBalancedAllocation
            weight: 1
          - name: ImageLocality
            weight: 1
          - name: DefaultBinder
    pluginConfig:
      - name: VolumeBinding
        args:
          bindTimeoutSeconds: 120
"""
"""kube-scheduler 1.34's default multiPoint list (default_plugins.go), written out, so both
schedulers run the volume plugins whatever our own default profile holds."""

STATIC_CLASS = "secsched-test-static"
"""No provisioner, WaitForFirstConsumer: only hand-made volumes (the local-volume pattern)."""
NEVER_CLASS = "secsched-test-never"
"""Immediate, with a provisioner nobody runs: its claims stay unbound."""


@pytest.fixture(scope="module")
def schedulers(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SchedulerRun]]:
    directory = tmp_path_factory.mktemp("volume-schedulers")
    runs: dict[str, SchedulerRun] = {}
    try:
        for who, kind in (("ours", OURS), ("upstream", UPSTREAM)):
            config = scheduler_config(SCHEDULERS[who], qps=100, burst=200, profile_extra=PROFILE)
            runs[who] = start_scheduler(kind, config, cluster.kubeconfig, directory, name=who)
        yield runs
    finally:
        for run in runs.values():
            run.stop()


@pytest.fixture(scope="module")
async def classes(cluster: LocalCluster) -> AsyncIterator[None]:
    """The test StorageClasses (cluster-scoped: made once for the module)."""
    manifests: list[JSON] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": STATIC_CLASS},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": NEVER_CLASS},
            "provisioner": "example.com/never",
            "volumeBindingMode": "Immediate",
        },
    ]
    async with cluster.api() as api:
        for manifest in manifests:
            try:
                await api.create("/apis/storage.k8s.io/v1/storageclasses", manifest)
            except ApiError as error:
                if not error.conflict:
                    raise
        try:
            yield
        finally:
            for manifest in manifests:
                await api.delete(f"/apis/storage.k8s.io/v1/storageclasses/{manifest['metadata']['name']}")


# -- objects ----------------------------------------------------------------------------------


def claim_manifest(
    name: str, storage_class: str, size: str = "1Gi", mode: str = "ReadWriteOnce", volume: str | None = None
) -> JSON:
    spec: JSON = {
        "storageClassName": storage_class,
        "accessModes": [mode],
        "resources": {"requests": {"storage": size}},
    }
    if volume is not None:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def volume_manifest(
    name: str,
    storage_class: str,
    *,
    size: str = "1Gi",
    node: str | None = None,
    labels: dict[str, str] | None = None,
    claim: tuple[str, str] | None = None,
) -> JSON:
    spec: JSON = {
        "storageClassName": storage_class,
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "csi": {"driver": "static.secsched.io", "volumeHandle": name},
    }
    if node is not None:
        expression = {"key": HOSTNAME, "operator": "In", "values": [node]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}
    if claim is not None:
        spec["claimRef"] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": claim[0],
            "name": claim[1],
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def pod_manifest(name: str, scheduler: str, claims: list[str], node: str | None = None) -> JSON:
    spec: JSON = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
        "volumes": [{"name": claim, "persistentVolumeClaim": {"claimName": claim}} for claim in claims],
    }
    if node is not None:
        spec["nodeSelector"] = {HOSTNAME: node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


class Side:
    """One scheduler's half of a case: its namespace and how to make and watch objects there."""

    def __init__(self, api: ApiClient, who: str, namespace: str) -> None:
        self.api = api
        self.who = who
        self.scheduler = SCHEDULERS[who]
        self.namespace = namespace

    async def claim(self, name: str, storage_class: str, **fields: Any) -> JSON:
        path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims"
        return await self.api.create(path, claim_manifest(name, storage_class, **fields))

    async def pod(self, name: str, claims: list[str], node: str | None = None) -> None:
        manifest = pod_manifest(name, self.scheduler, claims, node)
        await self.api.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

    async def get_claim(self, name: str) -> JSON:
        return await self.api.get(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{name}")

    async def bound_claim(self, name: str, timeout: float = 60) -> JSON:
        async def bound() -> JSON | None:
            claim = await self.get_claim(name)
            return claim if (claim.get("status") or {}).get("phase") == "Bound" else None

        return await wait_for(bound, f"claim {self.namespace}/{name} to be Bound", timeout=timeout)

    async def bound_node(self, pod: str, timeout: float = 90) -> str:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{pod}"

        async def node() -> str | None:
            return (await self.api.get(path))["spec"].get("nodeName")

        return await wait_for(node, f"{self.who}'s pod {pod} to be bound", timeout=timeout)

    async def unschedulable(self, pod: str, timeout: float = 60, reason: str = "Unschedulable") -> str:
        """The pod's PodScheduled=False message, once the scheduler has written it with ``reason``."""
        path = f"/api/v1/namespaces/{self.namespace}/pods/{pod}"

        async def message() -> str | None:
            current = await self.api.get(path)
            assert not current["spec"].get("nodeName"), (
                f"{self.who} bound {pod} to {current['spec']['nodeName']}"
            )
            for condition in current["status"].get("conditions") or ():
                if (
                    condition["type"] == "PodScheduled"
                    and condition["status"] == "False"
                    and condition.get("reason") == reason
                ):
                    text = str(condition.get("message") or "")
                    return None if await self._claim_seen_late(text) else text or None
            return None

        return await wait_for(message, f"{self.who} to report {pod} {reason}", timeout=timeout)

    async def _claim_seen_late(self, message: str) -> bool:
        """Whether the message blames a missing claim that exists: the scheduler's claim watch had
        not delivered it when the pod (created right after it) was tried; the claim's arrival
        requeues the pod, and the next attempt's message is the one a case is about."""
        missing = re.search(r'persistentvolumeclaim "([^"]+)" not found', message)
        if missing is None:
            return False
        try:
            await self.api.get(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{missing[1]}")
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return True


Case = Callable[[Side], Awaitable[Any]]


async def both(api: ApiClient, case: Case) -> dict[str, Any]:
    """Run ``case`` for our scheduler and upstream's at once, each in a namespace of its own."""

    async def one(who: str) -> Any:
        async with fresh_namespace(api, prefix=f"vol-{who}") as namespace:
            return await case(Side(api, who, namespace))

    ours, upstream = await asyncio.gather(one("ours"), one("upstream"))
    print(f"ours: {ours!r}\nupstream: {upstream!r}")  # shown with -s, and on failure
    return {"ours": ours, "upstream": upstream}


def reasons(message: str) -> str:
    """The FitError's node summary, without the preemption sentence (not the volume plugins' part)."""
    return message.split(" preemption:")[0]


def assert_same_rejection(results: dict[str, str], expected: str) -> None:
    ours, upstream = reasons(results["ours"]), reasons(results["upstream"])
    assert upstream == expected, results
    assert ours == upstream, results


@asynccontextmanager
async def node_labels(api: ApiClient, labels: dict[str, dict[str, str]]) -> AsyncIterator[None]:
    """Set labels on shared nodes for one test, and take them off again."""
    for node, values in labels.items():
        await api.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": values}})
    try:
        yield
    finally:
        for node, values in labels.items():
            await api.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": dict.fromkeys(values)}})


async def csinode_count(api: ApiClient, node: str) -> int | None:
    try:
        csinode = await api.get(f"{provisioner.CSINODES}/{node}")
    except ApiError as error:
        if error.not_found:
            return None
        raise
    for driver in csinode["spec"].get("drivers") or ():
        if driver["name"] == provisioner.LOCAL:
            return int(driver["allocatable"]["count"])
    return None


# -- the cases ------------------------------------------------------------------------------


async def test_a_claim_of_a_wait_for_first_consumer_class_is_provisioned_on_the_pods_node(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    async def case(side: Side) -> tuple[str, str, list[str]]:
        await side.claim("disk", provisioner.LOCAL_CLASS, size="2Gi")
        await side.pod("vm", ["disk"])
        node = await side.bound_node("vm")
        claim = await side.bound_claim("disk")
        volume = await side.api.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
        terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        return (
            node,
            claim["metadata"]["annotations"][provisioner.ANN_SELECTED_NODE],
            terms[0]["matchExpressions"][0]["values"],
        )

    results = await both(api, case)
    for who, (node, selected, volume_nodes) in results.items():
        assert selected == node, (who, results)  # the scheduler chose the disk's node
        assert volume_nodes == [node], (who, results)  # and the provisioner made it there


async def test_a_missing_claim_then_its_creation(api: ApiClient, schedulers: dict[str, SchedulerRun]) -> None:
    """The pod waits with the API's words; the claim's creation (a cluster event) brings it back."""

    async def case(side: Side) -> tuple[str, str]:
        await side.pod("vm", ["missing"])
        message = await side.unschedulable("vm")
        await side.claim("missing", provisioner.LOCAL_CLASS)
        return message, await side.bound_node("vm")

    results = await both(api, case)
    expected = f'0/{CLUSTER_NODES} nodes are available: persistentvolumeclaim "missing" not found.'
    assert_same_rejection({who: message for who, (message, _) in results.items()}, expected)


async def test_an_unbound_immediate_claim(
    api: ApiClient, schedulers: dict[str, SchedulerRun], classes: None
) -> None:
    async def case(side: Side) -> str:
        await side.claim("disk", NEVER_CLASS)
        await side.pod("vm", ["disk"])
        return await side.unschedulable("vm")

    expected = f"0/{CLUSTER_NODES} nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert_same_rejection(await both(api, case), expected)


async def test_a_claim_no_node_has_room_for(api: ApiClient, schedulers: dict[str, SchedulerRun]) -> None:
    async def case(side: Side) -> str:
        await side.claim("huge", provisioner.LOCAL_CLASS, size="5Ti")
        await side.pod("vm", ["huge"])
        return await side.unschedulable("vm")

    expected = (
        f"0/{CLUSTER_NODES} nodes are available: {CLUSTER_NODES} node(s) did not have enough free storage."
    )
    assert_same_rejection(await both(api, case), expected)


async def test_a_local_volumes_node_affinity_is_honoured(
    api: ApiClient, schedulers: dict[str, SchedulerRun], classes: None
) -> None:
    node = "kwok-node-2"
    volumes: list[str] = []

    async def case(side: Side) -> tuple[str, str]:
        name = f"local-{uuid.uuid4().hex[:8]}"
        volumes.append(name)
        await side.api.create("/api/v1/persistentvolumes", volume_manifest(name, STATIC_CLASS, node=node))
        await side.claim("disk", STATIC_CLASS)
        await side.pod("db", ["disk"])
        bound_to = await side.bound_node("db")
        claim = await side.bound_claim("disk")
        return bound_to, claim["spec"]["volumeName"]

    try:
        results = await both(api, case)
    finally:
        for name in volumes:
            await api.delete(f"/api/v1/persistentvolumes/{name}")
    for who, (bound_to, volume) in results.items():
        assert bound_to == node, (who, results)
        assert volume in volumes, (who, results)


async def test_a_zonal_volume_keeps_its_pods_in_its_zone(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    zone = "zone-b"
    zone_nodes = {"kwok-node-1", "kwok-node-4"}
    volumes: list[str] = []

    async def case(side: Side) -> tuple[str, str]:
        name = f"zonal-{uuid.uuid4().hex[:8]}"
        volumes.append(name)
        manifest = volume_manifest(name, "", labels={ZONE: zone}, claim=(side.namespace, "disk"))
        await side.api.create("/api/v1/persistentvolumes", manifest)
        await side.claim("disk", "", volume=name)
        await side.bound_claim("disk")
        await side.pod("free", ["disk"])
        await side.pod("pinned", ["disk"], node="kwok-node-0")
        return await side.bound_node("free"), await side.unschedulable("pinned")

    try:
        results = await both(api, case)
    finally:
        for name in volumes:
            await api.delete(f"/api/v1/persistentvolumes/{name}")
    for who, (node, _) in results.items():
        assert node in zone_nodes, (who, results)
    expected = (
        f"0/{CLUSTER_NODES} nodes are available: 1 node(s) had no available volume zone, "
        f"{CLUSTER_NODES - 1} node(s) didn't match Pod's node affinity/selector."
    )
    assert_same_rejection({who: message for who, (_, message) in results.items()}, expected)


async def test_a_node_at_its_volume_limit(api: ApiClient, schedulers: dict[str, SchedulerRun]) -> None:
    nodes = {"ours": "kwok-node-3", "upstream": "kwok-node-4"}

    async def case(side: Side) -> str:
        node = nodes[side.who]
        await side.claim("first", provisioner.LOCAL_CLASS)
        await side.pod("first", ["first"], node=node)
        assert await side.bound_node("first") == node
        await side.claim("second", provisioner.LOCAL_CLASS)
        await side.pod("second", ["second"], node=node)
        return await side.unschedulable("second")

    async with node_labels(api, {node: {MAX_VOLUMES_LABEL: "1"} for node in nodes.values()}):
        for node in nodes.values():

            async def limited(node: str = node) -> bool:
                return await csinode_count(api, node) == 1

            await wait_for(limited, f"{node}'s CSINode to allow 1 volume", timeout=60)
        results = await both(api, case)
    expected = (
        f"0/{CLUSTER_NODES} nodes are available: 1 node(s) exceed max volume count, "
        f"{CLUSTER_NODES - 1} node(s) didn't match Pod's node affinity/selector."
    )
    assert_same_rejection(results, expected)


async def test_a_read_write_once_pod_claim_in_use(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    async def case(side: Side) -> str:
        await side.claim("solo", provisioner.LOCAL_CLASS, mode="ReadWriteOncePod")
        await side.pod("owner", ["solo"])
        await side.bound_node("owner")
        await side.pod("intruder", ["solo"])
        return await side.unschedulable("intruder")

    expected = (
        f"0/{CLUSTER_NODES} nodes are available: {CLUSTER_NODES} node(s) unavailable due to "
        "PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod."
    )
    assert_same_rejection(await both(api, case), expected)


async def test_a_provisioner_that_cannot_make_the_volume_sends_the_pod_back(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """A stale CSIStorageCapacity promises room the node's pool does not have: the provisioner
    refuses and drops the claim's selected node, and PreBind fails with upstream's error."""
    node = "kwok-node-0"

    async def case(side: Side) -> str:
        stale = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "stale"},
            "storageClassName": provisioner.LOCAL_CLASS,
            "nodeTopology": {"matchLabels": {HOSTNAME: node}},
            "capacity": "1Ti",
        }
        await side.api.create(
            f"/apis/storage.k8s.io/v1/namespaces/{side.namespace}/csistoragecapacities", stale
        )
        await side.claim("big", provisioner.LOCAL_CLASS, size="500Gi")
        await side.pod("vm", ["big"], node=node)
        return await side.unschedulable("vm", reason="SchedulerError")

    results = await both(api, case)
    expected = 'running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC "big"'
    assert results == {"ours": expected, "upstream": expected}
