"""One demo run: a workload submitted to one scheduler on a fresh cluster, with load sampled throughout;
then, for VMs with disks, where each disk was made and the preemption scene."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from secondary_scheduler.httpsession import TRANSPORT_ERRORS
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.kube.wait import poll_until
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.demo.preemption import PreemptionResult, run_scene
from secsched_devtools.demo.storage import Disk, disks, wait_claims_bound
from secsched_devtools.demo.workload import Vm, priority_classes
from secsched_devtools.quality import Quality, measure

VM_NAMESPACE = "vms"
WEB_NAMESPACE = "web"

Progress = Callable[[str], None]


@dataclass
class RunResult:
    label: str
    before: dict[str, tuple[float, float]]
    after: dict[str, tuple[float, float]] = field(default_factory=dict)
    timeline: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    placements: dict[str, str] = field(default_factory=dict)
    """VM pod -> node."""
    web_placements: dict[str, str] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)
    """The VMs' Scheduled events: (reporting controller, message)."""
    limits_ratio: dict[str, float] = field(default_factory=dict)
    """Node -> its pods' CPU limits over its allocatable CPU, at the end."""
    quality: Quality | None = None
    seconds: float = 0.0
    disks: list[Disk] = field(default_factory=list)
    """The fleet's root disks once every VM is placed."""
    preemption: PreemptionResult | None = None
    postfilter: str = ""
    """The scheduler's PostFilter plugins (DefaultPreemption or not), and where that was read."""

    @property
    def all_disks(self) -> list[Disk]:
        """The fleet's disks and the preemptor's."""
        return [*self.disks, *([self.preemption.disk] if self.preemption and self.preemption.disk else [])]

    @property
    def disks_on_pod_node(self) -> tuple[int, int]:
        """(disks on their VM's node, disks), the preemptor's included."""
        return sum(disk.on_pod_node for disk in self.all_disks), len(self.all_disks)


def current_load(cluster: LocalCluster) -> dict[str, tuple[float, float]]:
    """Each node's (cpu, memory) ratio as the exporter computes it now, without noise."""
    current = cluster.load()["current"]
    return {node: (values["cpu"], values["memory"]) for node, values in sorted(current.items())}


async def _sample(cluster: LocalCluster, result: RunResult, started: float, stop: asyncio.Event) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        while not stop.is_set():
            try:
                async with client.get(f"{cluster.exporter_url}/load") as response:
                    current = (await response.json())["current"]
                result.timeline.append(
                    (time.monotonic() - started, {n: v["cpu"] for n, v in current.items()})
                )
            except TRANSPORT_ERRORS:
                pass
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)


async def run_workload(
    cluster: LocalCluster,
    label: str,
    vms: Sequence[Vm] | Sequence[dict[str, Any]],
    web: list[dict[str, Any]],
    arrival_seconds: float,
    target: int,
    progress: Progress,
    preemptor: Vm | None = None,
) -> RunResult:
    """Submit the web pods at once and the VMs spread over `arrival_seconds` (a VM's disk claim
    just before its pod); wait until all are bound and every disk Bound; measure; then, with a
    `preemptor`, run the preemption scene. `vms` may also be bare launcher pods (no disks)."""
    pods = [vm.pod if isinstance(vm, Vm) else vm for vm in vms]
    claims = {vm.pod_name: vm.claim for vm in vms if isinstance(vm, Vm)}
    result = RunResult(label, before=current_load(cluster))
    started = time.monotonic()
    stop = asyncio.Event()
    async with cluster.api() as api:
        for namespace in (VM_NAMESPACE, WEB_NAMESPACE):
            await ensure_namespace(api, namespace)
        for priority_class in priority_classes():
            await api.apply(priority_class, "secsched-demo")
        sampler = asyncio.create_task(_sample(cluster, result, started, stop))
        try:
            for pod in web:
                await api.create(f"/api/v1/namespaces/{WEB_NAMESPACE}/pods", pod)
            gap = arrival_seconds / max(1, len(pods))
            for index, pod in enumerate(pods, start=1):
                claim = claims.get(pod["metadata"]["name"])
                if claim is not None:
                    await api.create(f"/api/v1/namespaces/{VM_NAMESPACE}/persistentvolumeclaims", claim)
                await api.create(f"/api/v1/namespaces/{VM_NAMESPACE}/pods", pod)
                if index % 10 == 0 or index == len(pods):
                    progress(f"{label}: {index}/{len(pods)} VMs submitted")
                await asyncio.sleep(gap)
            await _wait_bound(api, len(pods), len(web), progress, label)
            claim_names = [claim["metadata"]["name"] for claim in claims.values()]
            if claim_names:
                await wait_claims_bound(api, VM_NAMESPACE, claim_names, progress, label)
            await asyncio.sleep(6)  # a few scrapes, so the last VMs' load is in every sample
        finally:
            stop.set()
            await sampler
        result.after = current_load(cluster)
        vm_pods = await _pods(api, VM_NAMESPACE)
        result.placements = {name: pod["spec"].get("nodeName", "") for name, pod in vm_pods.items()}
        result.web_placements = await _placements(api, WEB_NAMESPACE)
        result.events = await _scheduled_events(api)
        result.disks = await disks(
            api, VM_NAMESPACE, {name: vm_pods[name] for name in claims if name in vm_pods}
        )
        result.seconds = time.monotonic() - started
        result.limits_ratio = await _limits_ratio(api)
        result.quality = measure(
            {node: cpu for node, (cpu, _) in result.after.items()},
            result.placements,
            target,
            result.limits_ratio,
        )
        if preemptor is not None:
            result.preemption = await run_scene(api, VM_NAMESPACE, preemptor, progress, label)
    return result


async def _pods(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    return {pod["metadata"]["name"]: pod for pod in pods}


async def _placements(api: ApiClient, namespace: str) -> dict[str, str]:
    pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    return {pod["metadata"]["name"]: pod["spec"].get("nodeName", "") for pod in pods}


async def _wait_bound(
    api: ApiClient, vms: int, web: int, progress: Progress, label: str, timeout: float = 180
) -> None:
    """Until every VM and web pod is bound; the error says why the first pending ones are not."""
    Pods = dict[str, dict[str, dict[str, Any]]]

    async def read() -> Pods:
        return {ns: await _pods(api, ns) for ns in (VM_NAMESPACE, WEB_NAMESPACE)}

    def bound(pods: Pods) -> dict[str, int]:
        return {ns: sum(1 for pod in pods[ns].values() if pod["spec"].get("nodeName")) for ns in pods}

    def timed_out(pods: Pods) -> str:
        count = bound(pods)
        pending = [pod for ns in pods for pod in pods[ns].values() if not pod["spec"].get("nodeName")]
        why = "; ".join(f"{pod['metadata']['name']}: {_unscheduled_reason(pod)}" for pod in pending[:3])
        return (
            f"{label}: only {count[VM_NAMESPACE]}/{vms} VMs and {count[WEB_NAMESPACE]}/{web} "
            f"web pods bound after {timeout:.0f}s ({why}); the scheduler's log is in the run's folder"
        )

    await poll_until(
        read,
        lambda pods: (count := bound(pods))[VM_NAMESPACE] >= vms and count[WEB_NAMESPACE] >= web,
        timed_out,
        timeout,
        interval=1,
        waiting=lambda pods: progress(f"{label}: {bound(pods)[VM_NAMESPACE]}/{vms} VMs bound"),
    )
    progress(f"{label}: all {vms} VMs and {web} web pods bound")


def _unscheduled_reason(pod: dict[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"{condition.get('reason', '')}: {condition.get('message', '')}"
    return "no scheduling attempt reported yet"


async def _limits_ratio(api: ApiClient) -> dict[str, float]:
    """Per node: CPU limits of the pods on it (a container without a limit counts its request)."""
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    allocatable = {
        node["metadata"]["name"]: milli_value(node["status"]["allocatable"]["cpu"]) for node in nodes
    }
    limits = dict.fromkeys(allocatable, 0)
    for pod in (await api.list_all("/api/v1/pods"))["items"]:
        node = pod["spec"].get("nodeName")
        if node not in limits:
            continue
        for container in pod["spec"].get("containers", []):
            resources = container.get("resources") or {}
            value = (
                (resources.get("limits") or {}).get("cpu")
                or (resources.get("requests") or {}).get("cpu")
                or 0
            )
            limits[node] += milli_value(value)
    return {node: limits[node] / allocatable[node] for node in allocatable if allocatable[node]}


async def _scheduled_events(api: ApiClient) -> list[str]:
    events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{VM_NAMESPACE}/events"))["items"]
    scheduled = [event for event in events if event.get("reason") == "Scheduled"]
    scheduled.sort(key=lambda event: event.get("eventTime") or "")
    return [f"{event.get('reportingController', '')}  {event.get('note', '')}" for event in scheduled]
