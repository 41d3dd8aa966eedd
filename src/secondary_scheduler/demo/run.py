"""One demo run: a workload submitted to one scheduler on a fresh cluster, with load sampled throughout."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from secondary_scheduler.cluster.localcluster import LocalCluster
from secondary_scheduler.httpsession import TRANSPORT_ERRORS
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.quantity import milli_value

from .quality import Quality, measure

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
    vms: list[dict[str, Any]],
    web: list[dict[str, Any]],
    arrival_seconds: float,
    target: int,
    progress: Progress,
) -> RunResult:
    """Submit the web pods at once and the VMs spread over `arrival_seconds`; wait until all are bound."""
    result = RunResult(label, before=current_load(cluster))
    started = time.monotonic()
    stop = asyncio.Event()
    async with cluster.api() as api:
        for namespace in (VM_NAMESPACE, WEB_NAMESPACE):
            await ensure_namespace(api, namespace)
        sampler = asyncio.create_task(_sample(cluster, result, started, stop))
        for pod in web:
            await api.create(f"/api/v1/namespaces/{WEB_NAMESPACE}/pods", pod)
        gap = arrival_seconds / max(1, len(vms))
        for index, pod in enumerate(vms, start=1):
            await api.create(f"/api/v1/namespaces/{VM_NAMESPACE}/pods", pod)
            if index % 10 == 0 or index == len(vms):
                progress(f"{label}: {index}/{len(vms)} VMs submitted")
            await asyncio.sleep(gap)
        await _wait_bound(api, len(vms), len(web), progress, label)
        await asyncio.sleep(6)  # a few scrapes, so the last VMs' load is in every sample
        stop.set()
        await sampler
        result.after = current_load(cluster)
        result.placements = await _placements(api, VM_NAMESPACE)
        result.web_placements = await _placements(api, WEB_NAMESPACE)
        result.events = await _scheduled_events(api)
    result.seconds = time.monotonic() - started
    result.quality = measure(
        {node: cpu for node, (cpu, _) in result.after.items()}, result.placements, target
    )
    return result


async def _placements(api: ApiClient, namespace: str) -> dict[str, str]:
    pods = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    return {pod["metadata"]["name"]: pod["spec"].get("nodeName", "") for pod in pods}


async def _wait_bound(
    api: ApiClient, vms: int, web: int, progress: Progress, label: str, timeout: float = 180
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        bound = {
            ns: sum(1 for node in (await _placements(api, ns)).values() if node)
            for ns in (VM_NAMESPACE, WEB_NAMESPACE)
        }
        if bound[VM_NAMESPACE] >= vms and bound[WEB_NAMESPACE] >= web:
            progress(f"{label}: all {vms} VMs and {web} web pods bound")
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{label}: only {bound[VM_NAMESPACE]}/{vms} VMs and {bound[WEB_NAMESPACE]}/{web} "
                f"web pods bound after {timeout:.0f}s"
            )
        await asyncio.sleep(1)


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
