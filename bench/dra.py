"""The workloads section's ``dra`` class: scheduler_perf's SchedulingWithResourceClaimTemplate.

Upstream's case (test/integration/scheduler_perf/dra/performance-config.yaml) gives every node a
ResourceSlice of ``maxClaimsPerNode`` devices of one driver, one DeviceClass selecting that
driver by CEL, and in each namespace one ResourceClaimTemplate of one device of that class; each
pod names the template, so kube-controller-manager's resourceclaim controller creates a claim per
pod, and the scheduler allocates it (structured parameters) before binding. Here the devices
are the local cluster's fake DRA driver's GPUs (``dradriver``: the same slices and class its
node labels would give), ``DEVICES_PER_NODE`` per node as upstream's 500-node cases have; the
pre-existing pods are basic ones (scheduler_perf's init pods go through the scheduler; ours are
bound directly, which allocates no claim).

The check after each run: every measured pod's claim is allocated on the pod's node, to the pod,
and no device is allocated twice. Between runs the controller deletes the claims of deleted pods;
the next run waits for them to be gone, so that each run starts with every device free.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from bench.objects import create_objects, delete_each
from secondary_scheduler.kube.client import JSON, ApiClient
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster import dradriver

DEVICES_PER_NODE = 10
"""scheduler_perf's maxClaimsPerNode in its 500-node SchedulingWithResourceClaimTemplate cases."""
TEMPLATE = "bench-gpu"
CLAIM = "gpu"


def template_path(namespace: str) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates"


def claims_path(namespace: str) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"


def slice_manifests(node_objects: Iterable[JSON]) -> list[JSON]:
    """A slice of ``DEVICES_PER_NODE`` GPUs per node, as the fake driver publishes them."""
    devices = dradriver.gpu_devices(dradriver.NodeGpus(DEVICES_PER_NODE))
    return [dradriver.resource_slice(node, devices) for node in node_objects]


def claim_template() -> JSON:
    """One device of the driver's class (upstream's templates/resourceclaimtemplate.yaml)."""
    request = {"name": "req-0", "exactly": {"deviceClassName": dradriver.DEVICE_CLASS}}
    return {
        "apiVersion": dradriver.API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def claim_pod(pod: JSON) -> None:
    """Give a pod the template's claim (upstream's templates/pod-with-claim-template.yaml)."""
    pod["spec"]["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": TEMPLATE}]
    container = pod["spec"]["containers"][0]
    container.setdefault("resources", {})["claims"] = [{"name": CLAIM}]


async def publish(api: ApiClient, node_objects: Sequence[JSON], concurrency: int) -> None:
    """The DeviceClass (a cluster running the fake driver has it already) and every node's slice."""
    await dradriver.ensure_device_class(api)
    await create_objects(api, dradriver.SLICES, slice_manifests(node_objects), concurrency)


async def unpublish(api: ApiClient, node_objects: Sequence[JSON], concurrency: int) -> None:
    names = [dradriver.slice_name(node["metadata"]["name"]) for node in node_objects]
    await delete_each(api, dradriver.SLICES, names, concurrency)
    await delete_each(api, dradriver.CLASSES, [dradriver.DEVICE_CLASS], concurrency)


async def wait_claims_gone(
    api: ApiClient, namespace: str, report: Callable[[str], None], timeout: float = 600.0
) -> float:
    """Until the resourceclaim controller has deleted the claims of the namespace's deleted pods."""
    started = time.monotonic()
    await poll_until(
        lambda: api.list_all(claims_path(namespace)),
        lambda listed: not listed["items"],
        lambda listed: (
            f"cleaning up {namespace}: after {timeout:.0f}s, {len(listed['items'])} ResourceClaims left; "
            "see the cluster's logs/kube-controller-manager.log"
        ),
        timeout,
        interval=1.0,
        waiting=lambda listed: report(f"waiting: {len(listed['items'])} ResourceClaims left"),
    )
    return time.monotonic() - started


def violations(pods: Iterable[JSON], claims: Iterable[JSON]) -> list[str]:
    """Measured pods whose claim is not allocated on their node to them, and devices given twice."""
    by_name = {claim["metadata"]["name"]: claim for claim in claims}
    found: list[str] = []
    taken: Counter[tuple[str, str, str]] = Counter()
    for claim in by_name.values():
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            taken[(result["driver"], result["pool"], result["device"])] += 1
    for device, count in sorted(taken.items()):
        if count > 1:
            found.append(f"device {'/'.join(device)} allocated to {count} claims")
    for pod in pods:
        if not (pod.get("spec") or {}).get("resourceClaims"):
            continue
        name, node = pod["metadata"]["name"], (pod.get("spec") or {}).get("nodeName")
        if not node:
            continue
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        own = by_name.get(statuses[0].get("resourceClaimName", "")) if statuses else None
        if own is None:
            found.append(f"pod {name} on {node}: its claim is missing")
            continue
        status = own.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        pools = {result["pool"] for result in results}
        if len(results) != 1 or pools != {node}:
            held = f"{len(results)} devices of pools {sorted(pools)}"
            found.append(f"pod {name} on {node}: its claim holds {held}")
        if name not in {entry.get("name") for entry in status.get("reservedFor") or []}:
            found.append(f"pod {name} on {node}: its claim is not reserved for it")
    return found
