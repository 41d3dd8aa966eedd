"""The local cluster's storage, end to end on the real control plane.

Our provisioner (`cluster/provisioner.py`) creates the volumes; kube-controller-manager's PV
controller hands claims to it and binds them; the upstream kube-scheduler schedules pods
with volumes against the CSINodes and CSIStorageCapacities it publishes. Nothing is mocked.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.quantity import int_value
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster import provisioner
from secsched_devtools.cluster.nodes import MAX_VOLUMES_LABEL, STORAGE_LABEL

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
GI = 2**30
PV_PATH = "/api/v1/persistentvolumes"


def claim_manifest(name: str, storage_class: str, size: str = "1Gi", mode: str = "ReadWriteOnce") -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "storageClassName": storage_class,
            "accessModes": [mode],
            "resources": {"requests": {"storage": size}},
        },
    }


def pod_with_claims(name: str, claims: list[str], node: str | None = None) -> JSON:
    """A pod for the upstream default-scheduler (or pinned to `node` by a nodeSelector)."""
    spec: JSON = {
        "schedulerName": "default-scheduler",
        "containers": [
            {
                "name": "app",
                "image": "busybox",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "volumeMounts": [{"name": claim, "mountPath": f"/data/{claim}"} for claim in claims],
            }
        ],
        "volumes": [{"name": claim, "persistentVolumeClaim": {"claimName": claim}} for claim in claims],
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def get_or_none(api: ApiClient, path: str) -> JSON | None:
    try:
        return await api.get(path)
    except ApiError as error:
        if error.not_found:
            return None
        raise


async def bound_claim(api: ApiClient, namespace: str, name: str, timeout: float = 60) -> JSON:
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"

    async def bound() -> JSON | None:
        claim = await api.get(path)
        return claim if (claim.get("status") or {}).get("phase") == "Bound" else None

    return await wait_for(bound, f"claim {namespace}/{name} to be Bound", timeout=timeout)


async def capacities(api: ApiClient) -> dict[str, int]:
    """Node -> free bytes that the `local-wffc` CSIStorageCapacities announce."""
    items = (await api.list_all(provisioner.CAPACITIES))["items"]
    return {
        item["nodeTopology"]["matchLabels"][provisioner.HOSTNAME_KEY]: int_value(item["capacity"])
        for item in items
        if item["storageClassName"] == provisioner.LOCAL_CLASS
    }


async def wait_capacity(api: ApiClient, node: str, expected: int | None, timeout: float = 30) -> None:
    """Until the node's capacity is `expected` bytes (None: until it has no capacity object)."""

    async def matches() -> bool:
        return (await capacities(api)).get(node) == expected

    await wait_for(matches, f"capacity of {node} to be {expected}", timeout=timeout)


async def csinode_count(api: ApiClient, node: str) -> int | None:
    csinode = await get_or_none(api, f"{provisioner.CSINODES}/{node}")
    for driver in (csinode or {}).get("spec", {}).get("drivers") or []:
        if driver["name"] == provisioner.LOCAL:
            return int(driver["allocatable"]["count"])
    return None


async def events_for(api: ApiClient, namespace: str, name: str) -> list[JSON]:
    listing = await api.get(
        f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": f"involvedObject.name={name}"}
    )
    return list(listing["items"])


@asynccontextmanager
async def node_labels(api: ApiClient, node: str, labels: dict[str, str]) -> AsyncIterator[None]:
    """Set labels on a shared node for one test, and take them off again."""
    path = f"/api/v1/nodes/{node}"
    await api.patch(path, {"metadata": {"labels": labels}})
    try:
        yield
    finally:
        await api.patch(path, {"metadata": {"labels": dict.fromkeys(labels)}})


async def test_storage_classes_and_csidriver_are_installed(api: ApiClient) -> None:
    local = await api.get(f"/apis/storage.k8s.io/v1/storageclasses/{provisioner.LOCAL_CLASS}")
    assert local["provisioner"] == provisioner.LOCAL
    assert local["volumeBindingMode"] == "WaitForFirstConsumer"
    assert local["reclaimPolicy"] == "Delete"
    assert local["allowVolumeExpansion"] is False
    assert local["metadata"]["annotations"][provisioner.ANN_DEFAULT_CLASS] == "true"
    zonal = await api.get(f"/apis/storage.k8s.io/v1/storageclasses/{provisioner.ZONAL_CLASS}")
    assert zonal["provisioner"] == provisioner.ZONAL
    assert zonal["volumeBindingMode"] == "Immediate"
    driver = await api.get(f"/apis/storage.k8s.io/v1/csidrivers/{provisioner.LOCAL}")
    assert driver["spec"]["storageCapacity"] is True
    assert driver["spec"]["attachRequired"] is False


async def test_local_claim_waits_for_a_node_then_binds_there_and_its_volume_goes_with_it(
    api: ApiClient, namespace: str
) -> None:
    node = "kwok-node-1"
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    before = (await capacities(api))[node]
    claim = await api.create(claims, claim_manifest("data", provisioner.LOCAL_CLASS, "1Gi"))
    volume_name = f"pvc-{claim['metadata']['uid']}"

    # WaitForFirstConsumer: the PV controller says so and hands nothing over without a node.
    async def waiting_event() -> bool:
        return any(e["reason"] == "WaitForFirstConsumer" for e in await events_for(api, namespace, "data"))

    # The event is the controller's decision for this claim: it waits for a node, provisions nothing.
    await wait_for(waiting_event, "the PV controller's WaitForFirstConsumer event", timeout=30)
    claim = await api.get(f"{claims}/data")
    assert claim["status"]["phase"] == "Pending"
    assert provisioner.ANN_STORAGE_PROVISIONER not in (claim["metadata"].get("annotations") or {})
    assert await get_or_none(api, f"{PV_PATH}/{volume_name}") is None

    # What the scheduler's VolumeBinding does once it has chosen a node.
    await api.patch(f"{claims}/data", {"metadata": {"annotations": {provisioner.ANN_SELECTED_NODE: node}}})
    claim = await bound_claim(api, namespace, "data")
    assert claim["spec"]["volumeName"] == volume_name
    # The PV controller handed the claim to our provisioner (it does so for any non-in-tree one).
    assert claim["metadata"]["annotations"][provisioner.ANN_STORAGE_PROVISIONER] == provisioner.LOCAL
    volume = await api.get(f"{PV_PATH}/{volume_name}")
    assert volume["status"]["phase"] == "Bound"
    assert volume["metadata"]["annotations"][provisioner.ANN_PROVISIONED_BY] == provisioner.LOCAL
    spec = volume["spec"]
    assert spec["capacity"]["storage"] == "1Gi"
    assert spec["accessModes"] == ["ReadWriteOnce"]
    assert spec["volumeMode"] == "Filesystem"
    assert spec["storageClassName"] == provisioner.LOCAL_CLASS
    assert spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["csi"]["driver"] == provisioner.LOCAL
    assert (spec["claimRef"]["namespace"], spec["claimRef"]["name"]) == (namespace, "data")
    assert spec["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    ]
    await wait_capacity(api, node, before - GI)

    await api.delete(f"{claims}/data")

    async def volume_gone() -> bool:
        return await get_or_none(api, f"{PV_PATH}/{volume_name}") is None

    await wait_for(volume_gone, f"PV {volume_name} to be deleted after its claim", timeout=60)
    await wait_capacity(api, node, before)


async def test_local_claim_too_big_for_its_node_is_handed_back_to_the_scheduler(
    api: ApiClient, namespace: str
) -> None:
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    await api.create(claims, claim_manifest("huge", provisioner.LOCAL_CLASS, "500Gi"))
    await api.patch(
        f"{claims}/huge", {"metadata": {"annotations": {provisioner.ANN_SELECTED_NODE: "kwok-node-2"}}}
    )

    async def handed_back() -> JSON | None:
        claim = await api.get(f"{claims}/huge")
        annotations = claim["metadata"].get("annotations") or {}
        return claim if provisioner.ANN_SELECTED_NODE not in annotations else None

    claim = await wait_for(handed_back, "the provisioner to drop the selected node", timeout=30)
    assert claim["status"]["phase"] == "Pending"
    assert not claim["spec"].get("volumeName")
    failures = [e for e in await events_for(api, namespace, "huge") if e["reason"] == "ProvisioningFailed"]
    assert failures and "not enough storage on node kwok-node-2" in failures[0]["message"]
    assert await get_or_none(api, f"{PV_PATH}/pvc-{claim['metadata']['uid']}") is None


async def test_zonal_claims_bind_at_once_each_in_a_zone_in_turn(api: ApiClient, namespace: str) -> None:
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    for index in range(3):
        await api.create(claims, claim_manifest(f"z{index}", provisioner.ZONAL_CLASS, "2Gi"))
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    node_zones = {node["metadata"]["labels"][provisioner.ZONE_KEY] for node in nodes}
    zones = []
    for index in range(3):
        claim = await bound_claim(api, namespace, f"z{index}")
        assert claim["metadata"]["annotations"][provisioner.ANN_STORAGE_PROVISIONER] == provisioner.ZONAL
        assert provisioner.ANN_SELECTED_NODE not in claim["metadata"]["annotations"]
        volume = await api.get(f"{PV_PATH}/{claim['spec']['volumeName']}")
        zone = volume["metadata"]["labels"][provisioner.ZONE_KEY]
        assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
            {"matchExpressions": [{"key": provisioner.ZONE_KEY, "operator": "In", "values": [zone]}]}
        ]
        assert volume["spec"]["csi"]["driver"] == provisioner.ZONAL
        zones.append(zone)
    assert set(zones) == node_zones  # three claims, three zones: round-robin


async def test_zonal_class_with_allowed_topologies_provisions_in_that_zone(
    api: ApiClient, namespace: str
) -> None:
    name = f"zone-b-{namespace}"
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner.ZONAL,
        "volumeBindingMode": "Immediate",
        "reclaimPolicy": "Delete",
        "allowedTopologies": [
            {"matchLabelExpressions": [{"key": provisioner.ZONE_KEY, "values": ["zone-b"]}]}
        ],
    }
    await api.create("/apis/storage.k8s.io/v1/storageclasses", storage_class)
    try:
        claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
        for index in range(2):
            await api.create(claims, claim_manifest(f"b{index}", name))
        for index in range(2):
            claim = await bound_claim(api, namespace, f"b{index}")
            volume = await api.get(f"{PV_PATH}/{claim['spec']['volumeName']}")
            assert volume["metadata"]["labels"][provisioner.ZONE_KEY] == "zone-b"
    finally:
        await api.delete(f"/apis/storage.k8s.io/v1/storageclasses/{name}")


async def test_every_node_has_a_csinode_with_its_volume_limit_and_a_capacity(api: ApiClient) -> None:
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    announced = await capacities(api)
    for node in nodes:
        name = node["metadata"]["name"]
        if STORAGE_LABEL in node["metadata"]["labels"]:
            continue  # another test is changing it
        csinode = await api.get(f"{provisioner.CSINODES}/{name}")
        [driver] = [d for d in csinode["spec"]["drivers"] if d["name"] == provisioner.LOCAL]
        assert driver["nodeID"] == name
        assert driver["topologyKeys"] == ["kubernetes.io/hostname"]
        assert driver["allocatable"]["count"] == 16
        assert announced[name] <= 100 * GI


async def test_node_labels_tune_limit_and_pool_and_csi_objects_follow_the_node(api: ApiClient) -> None:
    name = f"storage-probe-{uuid.uuid4().hex[:8]}"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                provisioner.ZONE_KEY: "zone-a",
                MAX_VOLUMES_LABEL: "3",
                STORAGE_LABEL: "5Gi",
            },
        },
        "spec": {"unschedulable": True},  # not a KWOK node: nothing should land on it
    }
    await api.create("/api/v1/nodes", node)
    try:

        async def limit_is(count: int) -> bool:
            return await csinode_count(api, name) == count

        await wait_for(lambda: limit_is(3), f"the CSINode of {name} with a limit of 3", timeout=30)
        await wait_capacity(api, name, 5 * GI)
        await api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {MAX_VOLUMES_LABEL: "7"}}})
        await wait_for(lambda: limit_is(7), f"the CSINode of {name} with a limit of 7", timeout=30)
        await api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {STORAGE_LABEL: None}}})
        await wait_capacity(api, name, 100 * GI)
    finally:
        await api.delete(f"/api/v1/nodes/{name}")

    async def csinode_gone() -> bool:
        return await get_or_none(api, f"{provisioner.CSINODES}/{name}") is None

    await wait_for(csinode_gone, f"the CSINode of deleted node {name} to go", timeout=30)
    await wait_capacity(api, name, None)


async def test_upstream_scheduler_places_a_pod_with_a_local_claim_and_respects_capacity(
    api: ApiClient, namespace: str
) -> None:
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await api.create(claims, claim_manifest("data", provisioner.LOCAL_CLASS, "2Gi"))
    await api.create(claims, claim_manifest("toobig", provisioner.LOCAL_CLASS, "200Gi"))
    await api.create(pods, pod_with_claims("app", ["data"]))
    await api.create(pods, pod_with_claims("greedy", ["toobig"]))

    async def running() -> JSON | None:
        pod = await api.get(f"{pods}/app")
        return pod if pod["status"].get("phase") == "Running" else None

    pod = await wait_for(running, "pod app with a local-wffc claim to run", timeout=90)
    claim = await bound_claim(api, namespace, "data")
    volume = await api.get(f"{PV_PATH}/{claim['spec']['volumeName']}")
    [term] = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == [pod["spec"]["nodeName"]]

    async def unschedulable() -> str | None:
        pod = await api.get(f"{pods}/greedy")
        for condition in pod["status"].get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return str(condition.get("message"))
        return None

    message = await wait_for(unschedulable, "pod greedy to be unschedulable", timeout=60)
    assert "did not have enough free storage" in message, message


async def test_upstream_scheduler_honours_the_csinode_volume_limit(api: ApiClient, namespace: str) -> None:
    node = "kwok-node-3"
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    pods = f"/api/v1/namespaces/{namespace}/pods"
    async with node_labels(api, node, {MAX_VOLUMES_LABEL: "1"}):

        async def limited() -> bool:
            return await csinode_count(api, node) == 1

        await wait_for(limited, f"the CSINode of {node} with a limit of 1", timeout=30)
        for name in ("first", "second"):
            await api.create(claims, claim_manifest(name, provisioner.LOCAL_CLASS))
        await api.create(pods, pod_with_claims("first", ["first"], node=node))

        async def first_running() -> bool:
            return (await api.get(f"{pods}/first"))["status"].get("phase") == "Running"

        await wait_for(first_running, "pod first to run on the limited node", timeout=90)
        await api.create(pods, pod_with_claims("second", ["second"], node=node))

        async def refused() -> str | None:
            pod = await api.get(f"{pods}/second")
            for condition in pod["status"].get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                    return str(condition.get("message"))
            return None

        message = await wait_for(refused, "pod second to be refused by the volume limit", timeout=60)
        assert "exceed max volume count" in message, message
        await api.delete(f"{pods}/second")

    async def restored() -> bool:
        return await csinode_count(api, node) == 16

    await wait_for(restored, f"the CSINode of {node} back to 16", timeout=30)


async def test_pod_disruption_budget_status_is_computed(api: ApiClient, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    for index in range(3):
        manifest = pod_with_claims(f"guarded-{index}", [])
        manifest["metadata"]["labels"] = {"app": "guarded"}
        manifest["spec"]["nodeName"] = f"kwok-node-{index}"  # bound already: KWOK runs it
        del manifest["spec"]["volumes"]
        await api.create(pods, manifest)
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    await api.create(path, budget)

    async def status_is(expected: JSON) -> JSON | None:
        status = (await api.get(f"{path}/guarded")).get("status") or {}
        return status if all(status.get(key) == value for key, value in expected.items()) else None

    status = await wait_for(
        lambda: status_is(
            {"expectedPods": 3, "currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1}
        ),
        "the disruption controller to count 3 healthy pods",
        timeout=60,
    )
    assert status["observedGeneration"] == 1
    await api.delete(f"{pods}/guarded-0", {"gracePeriodSeconds": 0})
    await wait_for(
        lambda: status_is({"expectedPods": 2, "currentHealthy": 2, "disruptionsAllowed": 0}),
        "the disruption controller to see a pod gone",
        timeout=60,
    )
