"""Random Dynamic Resource Allocation for the conformance cases: classes, slices, claims, a pod using them.

What ``cases.Generator`` adds to a case of a DRA profile: DeviceClasses selecting by driver,
attribute and capacity (CEL); ResourceSlices of GPUs per node (pools of one or two slices, an
older generation left behind, a pool still being published) and of NICs for a zone
(``nodeSelector``) or for every node (``allNodes``); claims already allocated to bound pods
(their devices are taken) or shared; and an incoming pod whose claims come by name or from a
template (the controller's claim, found through ``status.resourceClaimStatuses``), with requests
``exactly`` (a count, or ``allocationMode: All``) or ``firstAvailable``, CEL selectors and
``matchAttribute`` constraints.

Everything is valid as the API server would admit it. Selectors that read another driver's
attributes (a CEL error) are only paired with classes of that driver: which device an allocator
looks at first is not fixed upstream (pools come from a Go map), so an error must not depend
on it.
"""

from __future__ import annotations

import random
from typing import Any

from secondary_scheduler.kube.client import JSON

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
RESOURCE_API = "resource.k8s.io/v1"
MODELS = ("a100", "h100", "t4")

CLASSES: dict[str, list[str]] = {
    "gpu": [f'device.driver == "{GPU_DRIVER}"'],
    "gpu-h100": [f'device.driver == "{GPU_DRIVER}"', f'device.attributes["{GPU_DRIVER}"].model == "h100"'],
    "gpu-big": [
        f'device.driver == "{GPU_DRIVER}"',
        f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    ],
    "nic": [f'device.driver == "{NIC_DRIVER}"'],
    "any-device": [],
}
DRIVER_OF_CLASS = {"gpu": GPU_DRIVER, "gpu-h100": GPU_DRIVER, "gpu-big": GPU_DRIVER, "nic": NIC_DRIVER}

GPU_SELECTORS = (
    f'device.attributes["{GPU_DRIVER}"].model in ["a100", "h100"]',
    f'device.attributes["{GPU_DRIVER}"].model == "t4"',
    f'device.capacity["{GPU_DRIVER}"].memory.isGreaterThan(quantity("16Gi"))',
    f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("80Gi")) < 0',
    f'device.attributes["{GPU_DRIVER}"].driverVersion.isGreaterThan(semver("1.4.0"))',
    f'device.attributes["{GPU_DRIVER}"].driverVersion.isLessThan(semver("2.0.0"))',
    f'device.attributes["{GPU_DRIVER}"].healthy',
    f'device.attributes["{GPU_DRIVER}"].index < 2',
    f'device.attributes["{GPU_DRIVER}"].numa == 1',
    'has(device.attributes["example.com"].rack) && device.attributes["example.com"].rack == "r1"',
    f'device.attributes["{GPU_DRIVER}"].model.startsWith("a")'
    f' || device.attributes["{GPU_DRIVER}"].index == 0',
    # Kubernetes' CEL libraries beyond standard CEL: ext.Strings, lists, ext.Sets, regex.
    f'device.attributes["{GPU_DRIVER}"].model.upperAscii() == "A100"',
    f'device.attributes["{GPU_DRIVER}"].model.indexOf("1") >= 0',
    f'device.attributes["{GPU_DRIVER}"].model.split("1").size() > 1',
    f'["a100", "h100"].indexOf(device.attributes["{GPU_DRIVER}"].model) >= 0',
    # Both elements dyn: upstream's checker refuses a list literal mixing types (homogeneous
    # aggregate literals), e.g. [dyn, 1], at compile time; ours evaluates it (docs/plugin-support.md).
    f'[device.attributes["{GPU_DRIVER}"].index, device.attributes["{GPU_DRIVER}"].numa].max() >= 1',
    f'sets.contains(["a100", "t4"], [device.attributes["{GPU_DRIVER}"].model])',
    f'device.attributes["{GPU_DRIVER}"].model.find("[0-9]+") == "100"',
)
NIC_SELECTORS = (
    f'device.attributes["{NIC_DRIVER}"].speed >= 25',
    f'device.attributes["{NIC_DRIVER}"].sriov',
    f'device.capacity["{NIC_DRIVER}"].vfs.compareTo(quantity("8")) >= 0',
)
ANY_SELECTORS = (
    f'device.driver == "{GPU_DRIVER}"',
    f'device.driver != "{NIC_DRIVER}"',
    'device.driver.endsWith(".example.com")',
)
CONSTRAINT_ATTRIBUTES = (f"{GPU_DRIVER}/numa", f"{GPU_DRIVER}/model", "example.com/rack")


def _metadata(name: str, namespace: str | None = None, **extra: Any) -> JSON:
    metadata: JSON = {"name": name, **extra}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def device_classes() -> list[JSON]:
    return [
        {
            "apiVersion": RESOURCE_API,
            "kind": "DeviceClass",
            "metadata": _metadata(name),
            "spec": {"selectors": [{"cel": {"expression": expression}} for expression in selectors]},
        }
        for name, selectors in CLASSES.items()
    ]


def _gpu(rng: random.Random, index: int) -> JSON:
    attributes: JSON = {
        "model": {"string": rng.choice(MODELS)},
        "index": {"int": index},
        "numa": {"int": index % 2 if rng.random() < 0.8 else rng.randint(0, 1)},
        "driverVersion": {"version": rng.choice(("1.2.0", "1.5.3", "2.0.0"))},
        "healthy": {"bool": rng.random() < 0.9},
    }
    if rng.random() < 0.6:
        attributes["example.com/rack"] = {"string": rng.choice(("r1", "r2"))}
    return {
        "name": f"gpu-{index}",
        "attributes": attributes,
        "capacity": {"memory": {"value": rng.choice(("16Gi", "40Gi", "80Gi"))}},
    }


def _nic(rng: random.Random, index: int) -> JSON:
    return {
        "name": f"nic-{index}",
        "attributes": {"speed": {"int": rng.choice((10, 25, 100))}, "sriov": {"bool": rng.random() < 0.5}},
        "capacity": {"vfs": {"value": str(rng.choice((4, 8, 16)))}},
    }


def _slice(
    name: str,
    driver: str,
    pool: str,
    devices: list[JSON],
    *,
    generation: int = 1,
    count: int = 1,
    **where: Any,
) -> JSON:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": _metadata(name),
        "spec": {
            "driver": driver,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            **where,
            "devices": devices,
        },
    }


def resource_slices(rng: random.Random, nodes: list[JSON], features: set[str]) -> list[JSON]:
    """GPU pools on some nodes (one slice or two; a stale generation; an incomplete pool) and NIC
    pools for a zone and for all nodes."""
    slices: list[JSON] = []
    for node in nodes:
        name = node["metadata"]["name"]
        if rng.random() < 0.3:
            continue
        gpus = [_gpu(rng, index) for index in range(rng.randint(1, 6))]
        roll = rng.random()
        if roll < 0.15 and len(gpus) > 1:  # one pool published as two slices
            half = len(gpus) // 2
            slices.append(_slice(f"{name}-gpu-a", GPU_DRIVER, name, gpus[:half], count=2, nodeName=name))
            slices.append(_slice(f"{name}-gpu-b", GPU_DRIVER, name, gpus[half:], count=2, nodeName=name))
            features.add("dra:pool-of-two-slices")
        elif roll < 0.25:  # the driver republished: the older generation's slice no longer counts
            stale = [_gpu(rng, index) for index in range(4, 4 + rng.randint(1, 3))]
            slices.append(_slice(f"{name}-gpu-old", GPU_DRIVER, name, stale, generation=1, nodeName=name))
            slices.append(_slice(f"{name}-gpu", GPU_DRIVER, name, gpus, generation=2, nodeName=name))
            features.add("dra:stale-generation")
        elif roll < 0.32:  # one of two slices published so far
            slices.append(_slice(f"{name}-gpu", GPU_DRIVER, name, gpus, count=2, nodeName=name))
            features.add("dra:incomplete-pool")
        else:
            slices.append(_slice(f"{name}-gpu", GPU_DRIVER, name, gpus, nodeName=name))
        features.add("dra:node-local-slice")
    if rng.random() < 0.5:
        zone = rng.choice(("zone-a", "zone-b", "zone-c"))
        selector = {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
                    ]
                }
            ]
        }
        nics = [_nic(rng, index) for index in range(rng.randint(1, 3))]
        slices.append(_slice(f"nics-{zone}", NIC_DRIVER, f"rack-{zone}", nics, nodeSelector=selector))
        features.add("dra:nodeSelector-slice")
    if rng.random() < 0.4:
        nics = [_nic(rng, index) for index in range(rng.randint(1, 3))]
        slices.append(_slice("nics-shared", NIC_DRIVER, "shared", nics, allNodes=True))
        features.add("dra:allNodes-slice")
    return slices


def _node_pin(node: str) -> JSON:
    return {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
    }


def held_claims(rng: random.Random, slices: list[JSON], pods: list[JSON], features: set[str]) -> list[JSON]:
    """Claims already allocated (some reserved for bound pods): their devices are taken."""
    claims: list[JSON] = []
    newest: dict[str, int] = {}
    for slice_obj in slices:
        pool = slice_obj["spec"]["pool"]
        newest[pool["name"]] = max(newest.get(pool["name"], 0), pool["generation"])
    candidates = [
        (slice_obj, device["name"])
        for slice_obj in slices
        if slice_obj["spec"]["pool"]["generation"] == newest[slice_obj["spec"]["pool"]["name"]]
        for device in slice_obj["spec"]["devices"]
    ]
    rng.shuffle(candidates)
    for index in range(min(len(candidates), rng.randint(0, 4))):
        slice_obj, device = candidates[index]
        spec = slice_obj["spec"]
        namespace = rng.choice(("default", "team-a", "team-b"))
        allocation: JSON = {
            "devices": {
                "results": [
                    {
                        "request": "dev",
                        "driver": spec["driver"],
                        "pool": spec["pool"]["name"],
                        "device": device,
                    }
                ]
            }
        }
        if spec.get("nodeName"):
            allocation["nodeSelector"] = _node_pin(spec["nodeName"])
        elif spec.get("nodeSelector"):
            allocation["nodeSelector"] = spec["nodeSelector"]
        status: JSON = {"allocation": allocation}
        consumers = [pod for pod in pods if pod["metadata"]["namespace"] == namespace]
        if consumers and rng.random() < 0.7:
            consumer = rng.choice(consumers)
            status["reservedFor"] = [
                {"resource": "pods", "name": consumer["metadata"]["name"], "uid": consumer["metadata"]["uid"]}
            ]
        class_name = "nic" if spec["driver"] == NIC_DRIVER else "gpu"
        exactly = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": 1}
        claims.append(
            {
                "apiVersion": RESOURCE_API,
                "kind": "ResourceClaim",
                "metadata": _metadata(f"held-{index}", namespace, uid=f"uid-held-{index}"),
                "spec": {"devices": {"requests": [{"name": "dev", "exactly": exactly}]}},
                "status": status,
            }
        )
        features.add("dra:devices-in-use")
    return claims


def _selectors(rng: random.Random, class_name: str) -> list[JSON]:
    if rng.random() < 0.55:
        return []
    driver = DRIVER_OF_CLASS.get(class_name)
    pool = GPU_SELECTORS if driver == GPU_DRIVER else NIC_SELECTORS if driver == NIC_DRIVER else ANY_SELECTORS
    return [{"cel": {"expression": expression}} for expression in rng.sample(pool, rng.randint(1, 2))]


def _class(rng: random.Random) -> str:
    return rng.choice(("gpu", "gpu", "gpu", "gpu-h100", "gpu-big", "nic", "nic", "any-device"))


def _exactly(rng: random.Random, features: set[str]) -> JSON:
    class_name = _class(rng)
    spec: JSON = {"deviceClassName": class_name}
    selectors = _selectors(rng, class_name)
    if selectors:
        spec["selectors"] = selectors
        features.add("dra:cel-selector")
    # As the API server stores it: allocationMode defaulted to ExactCount, count to 1.
    if rng.random() < 0.15:
        spec["allocationMode"] = "All"
        features.add("dra:allocationMode-All")
    else:
        spec |= {"allocationMode": "ExactCount", "count": rng.choice((1, 1, 1, 2, 3))}
        features.add("dra:count")
    return spec


def _claim_spec(rng: random.Random, features: set[str]) -> JSON:
    requests: list[JSON] = []
    for index in range(1 if rng.random() < 0.6 else 2):
        name = f"req-{index}"
        if rng.random() < 0.3:
            subrequests = []
            for sub in range(rng.randint(2, 3)):
                subrequest = {"name": f"sub-{sub}", **_exactly(rng, features)}
                subrequests.append(subrequest)
            requests.append({"name": name, "firstAvailable": subrequests})
            features.add("dra:firstAvailable")
            modes = [subrequest["allocationMode"] for subrequest in subrequests]
            if "All" in modes[1:]:  # upstream's recursion continues it as the first subrequest
                features.add("dra:firstAvailable-All-later")
            if modes[:2] == ["All", "All"]:  # upstream's second reads the first one's devices
                features.add("dra:firstAvailable-All-twice")
        else:
            requests.append({"name": name, "exactly": _exactly(rng, features)})
    devices: JSON = {"requests": requests}
    if rng.random() < 0.3:
        constraint: JSON = {"matchAttribute": rng.choice(CONSTRAINT_ATTRIBUTES)}
        if len(requests) > 1 and rng.random() < 0.5:
            constraint["requests"] = [request["name"] for request in requests]
        elif rng.random() < 0.3:
            constraint["requests"] = [requests[0]["name"]]
        devices["constraints"] = [constraint]
        features.add("dra:matchAttribute")
    return {"devices": devices}


def _claim(name: str, namespace: str, spec: JSON, **metadata: Any) -> JSON:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": _metadata(name, namespace, uid=f"uid-claim-{namespace}-{name}", **metadata),
        "spec": spec,
    }


def pod_claims(
    rng: random.Random, pod: JSON, held: list[JSON], features: set[str]
) -> tuple[list[JSON], list[JSON]]:
    """The pod's ``spec.resourceClaims`` (written into ``pod``) and the claims and templates behind them."""
    metadata = pod["metadata"]
    namespace = metadata["namespace"]
    entries: list[JSON] = []
    statuses: list[JSON] = []
    objects: list[JSON] = []
    shareable = [claim for claim in held if claim["metadata"]["namespace"] == namespace]
    for index in range(1 if rng.random() < 0.6 else 2):
        entry_name = f"claim-{index}"
        roll = rng.random()
        if roll < 0.5:
            name = f"standalone-{index}"
            entries.append({"name": entry_name, "resourceClaimName": name})
            objects.append(_claim(name, namespace, _claim_spec(rng, features)))
            features.add("dra:claim-by-name")
        elif roll < 0.85:
            template = f"template-{index}"
            generated = f"{metadata['name']}-{entry_name}-x7k2p"
            entries.append({"name": entry_name, "resourceClaimTemplateName": template})
            spec = _claim_spec(rng, features)
            objects.append(
                {
                    "apiVersion": RESOURCE_API,
                    "kind": "ResourceClaimTemplate",
                    "metadata": _metadata(template, namespace),
                    "spec": {"spec": spec},
                }
            )
            owner = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": metadata["name"],
                "uid": metadata["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            if rng.random() < 0.05:
                owner["uid"] = "uid-someone-else"  # not the pod's own: refused
                features.add("dra:template-claim-not-owned")
            if rng.random() < 0.05:
                features.add("dra:template-claim-not-created")  # status says nothing yet
            else:
                statuses.append({"name": entry_name, "resourceClaimName": generated})
                objects.append(_claim(generated, namespace, spec, ownerReferences=[owner]))
            features.add("dra:claim-from-template")
        elif roll < 0.97 and shareable:
            claim = rng.choice(shareable)
            entries.append({"name": entry_name, "resourceClaimName": claim["metadata"]["name"]})
            features.add("dra:shared-allocated-claim")
        elif roll < 0.97:
            name = f"standalone-{index}"
            entries.append({"name": entry_name, "resourceClaimName": name})
            objects.append(_claim(name, namespace, _claim_spec(rng, features)))
            features.add("dra:claim-by-name")
        else:
            entries.append({"name": entry_name, "resourceClaimName": f"missing-{index}"})
            features.add("dra:claim-missing")
    pod["spec"]["resourceClaims"] = entries
    if statuses:
        pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
    return entries, objects


POOL_ORDER_DEPENDENT = "dra:pool-order-dependent"
"""A case whose devices per claim depend on which pool the allocator visits first (see below)."""

_PINNED_TO_GPU = {f'device.driver == "{GPU_DRIVER}"', f'device.driver != "{NIC_DRIVER}"'}


def pool_order_matters(slices: list[JSON], objects: list[JSON]) -> bool:
    """Whether the pod's claims may get different subrequests depending on the pools' order.

    Upstream visits a node's pools in Go map order (random). Which devices a search takes
    first then differs by run; whether it succeeds does not (it backtracks through every
    choice), but the subrequest of a ``firstAvailable`` list it settles on can: an earlier
    request that takes a GPU instead of a NIC leaves the list's first subrequest a GPU short
    (one such case: upstream answered ``sub-0`` in 7 of 12 runs, ``sub-1`` in 5). So when a
    request can draw from two pools of a node (an ``any-device`` request not pinned to the GPU
    driver, or a NIC request with both the zone's and the shared NIC pool published) and a
    ``firstAvailable`` list of the pod wants devices of the same drivers, only feasibility and
    messages are comparable.
    """
    specs = [
        (obj.get("spec") or {}).get("spec", obj.get("spec")) or {}
        for obj in objects
        if obj.get("kind") in ("ResourceClaim", "ResourceClaimTemplate")
    ]
    requests = [request for spec in specs for request in (spec.get("devices") or {}).get("requests") or ()]
    listed = [alternative for request in requests for alternative in request.get("firstAvailable") or ()]
    if not listed:
        return False
    alternatives = [*listed, *(request["exactly"] for request in requests if "exactly" in request)]
    nic_pools = sum(1 for slice_obj in slices if slice_obj["spec"]["driver"] == NIC_DRIVER)
    wanted_by_lists = set().union(*(_drivers(alternative) for alternative in listed))
    for alternative in alternatives:
        drivers = _drivers(alternative)
        several_pools = (len(drivers) > 1 and nic_pools > 0) or (drivers == {NIC_DRIVER} and nic_pools > 1)
        if several_pools and drivers & wanted_by_lists:
            return True
    return False


def _drivers(request: JSON) -> set[str]:
    """The drivers whose devices a request (or subrequest) can take."""
    class_name = request["deviceClassName"]
    if class_name != "any-device":
        return {DRIVER_OF_CLASS[class_name]}
    expressions = {selector["cel"]["expression"] for selector in request.get("selectors") or ()}
    return {GPU_DRIVER} if expressions & _PINNED_TO_GPU else {GPU_DRIVER, NIC_DRIVER}
