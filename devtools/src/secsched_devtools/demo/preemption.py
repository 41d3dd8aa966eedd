"""The preemption scene: once the fleet is placed, a business-critical VM arrives that fits nowhere.

Its memory is sized from the node sizes (see `Scenario.heavy_size`): more than any node but the
largest can hold, and the largest each already hold one memory-heavy VM of the fleet. So it
can only run if the scheduler evicts a lower-priority VM, as kube-scheduler's DefaultPreemption
does: choose a node and the fewest, least important victims, write `status.nominatedNodeName`,
give each victim the `DisruptionTarget` condition, delete it, and bind the VM once there is
room. A watch on the VMs' namespace records each step as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.podphase import is_terminal
from secondary_scheduler.kube.quantity import int_value
from secsched_devtools.demo.storage import Disk, disks
from secsched_devtools.demo.workload import Vm

DISRUPTION_TARGET = "DisruptionTarget"


@dataclass(frozen=True)
class Victim:
    pod: str
    node: str
    priority: int
    memory: int
    """Bytes of memory the pod requested: what its eviction gave back."""
    condition: str
    """Its DisruptionTarget condition as seen before it went ("reason: message"), or ""."""
    deleted_after: float | None
    """Seconds from the preemptor's creation to the victim's deletion."""


@dataclass
class PreemptionResult:
    preemptor: str
    priority: int
    memory_request: int
    largest_free: tuple[str, int]
    """The node with the most free memory when the preemptor arrived, and how much (bytes)."""
    victims: list[Victim] = field(default_factory=list)
    nominated_node: str = ""
    nominated_after: float | None = None
    node: str = ""
    bound_after: float | None = None
    disk: Disk | None = None
    events: list[str] = field(default_factory=list)
    """The scene's events: the victims' Preempted, the preemptor's FailedScheduling and Scheduled."""
    error: str = ""

    @property
    def fits_nowhere(self) -> bool:
        return self.largest_free[1] < self.memory_request

    def summary(self) -> str:
        """One line for the console."""
        if self.error:
            return f"[red]{self.error}[/red]"
        victims = ", ".join(f"{victim.pod} on {victim.node}" for victim in self.victims) or "none"
        return (
            f"{self.preemptor} (priority {self.priority:,}, {self.memory_request / 1024**3:.1f}Gi): "
            f"victims {victims}; nominated {self.nominated_node or '-'}; bound to {self.node or '-'}"
            f"{_after(self.bound_after)}"
        )


def _after(seconds: float | None) -> str:
    return f" after {seconds:.1f}s" if seconds is not None else ""


def memory_request(pod: dict[str, Any]) -> int:
    """The pod's memory request in bytes (its containers'; init containers taken as the largest)."""
    spec = pod.get("spec") or {}

    def memory(container: dict[str, Any]) -> int:
        return int_value(((container.get("resources") or {}).get("requests") or {}).get("memory") or 0)

    containers = sum(memory(c) for c in spec.get("containers") or [])
    return max([containers, *(memory(c) for c in spec.get("initContainers") or [])])


async def free_memory(api: ApiClient) -> dict[str, int]:
    """Node -> allocatable memory minus the requests of the pods bound there (every namespace)."""
    nodes = (await api.list_all("/api/v1/nodes"))["items"]
    free = {node["metadata"]["name"]: int_value(node["status"]["allocatable"]["memory"]) for node in nodes}
    for pod in (await api.list_all("/api/v1/pods"))["items"]:
        node = pod["spec"].get("nodeName")
        if node in free and not is_terminal(pod):
            free[node] -= memory_request(pod)
    return free


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _condition(pod: dict[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == DISRUPTION_TARGET and condition.get("status") == "True":
            return f"{condition.get('reason', '')}: {condition.get('message', '')}"
    return ""


class _Recorder:
    """What a watch of the namespace's pods shows while the scene runs, with times."""

    def __init__(self, preemptor: str, started: float) -> None:
        self.preemptor = preemptor
        self.started = started
        self.last: dict[str, dict[str, Any]] = {}
        self.deleted: dict[str, float | None] = {}
        self.nominated: tuple[str, float] | None = None
        self.lost = ""

    def see(self, kind: str, pod: dict[str, Any]) -> None:
        name = _key(pod)
        now = time.monotonic() - self.started
        if name == self.preemptor:
            nominated = (pod.get("status") or {}).get("nominatedNodeName")
            if nominated and self.nominated is None:
                self.nominated = (nominated, now)
            return
        if kind == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            self.deleted.setdefault(name, now)  # the deletion asked for (KWOK finishes it at once)
        # Keep the last view that had a node and the condition, should the final one lack them.
        previous = self.last.get(name, {})
        if _condition(previous) and not _condition(pod):
            pod.setdefault("status", {}).setdefault("conditions", []).extend(
                c for c in previous["status"]["conditions"] if c.get("type") == DISRUPTION_TARGET
            )
        self.last[name] = pod

    async def follow(self, api: ApiClient, path: str, resource_version: str) -> None:
        """Watch from `resource_version`; resumes once if the connection drops; notes if it is lost."""
        version = resource_version
        for _attempt in range(3):
            try:
                async for event in api.watch(
                    path, {"resourceVersion": version, "allowWatchBookmarks": "true"}
                ):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.see(str(event["type"]), obj)
            except (ApiUnavailable, ApiError) as error:
                self.lost = str(error)
                await asyncio.sleep(0.5)
        self.lost = self.lost or "the watch ended"


async def run_scene(
    api: ApiClient,
    namespace: str,
    vm: Vm,
    progress: Callable[[str], None],
    label: str,
    timeout: float = 180,
) -> PreemptionResult:
    """Submit `vm` (its disk, then its launcher pod) and follow it until it is bound and its disk
    Bound, or `timeout`; never raises for what the scheduler does, the result says it."""
    free = await free_memory(api)
    largest = max(free.items(), key=lambda item: (item[1], item[0]), default=("", 0))
    request = memory_request(vm.pod)
    # Victims may be in any namespace: every pod of lower priority is a candidate.
    listing = await api.get("/api/v1/pods")
    before = {_key(pod): pod for pod in listing["items"]}
    started = time.monotonic()
    recorder = _Recorder(f"{namespace}/{vm.pod_name}", started)
    recorder.last.update(before)
    watcher = asyncio.create_task(
        recorder.follow(api, "/api/v1/pods", listing["metadata"]["resourceVersion"])
    )
    result = PreemptionResult(vm.pod_name, 0, request, largest)
    progress(
        f"{label}: {vm.pod_name} ({request / 1024**3:.1f}Gi) arrives; the most free memory is "
        f"{largest[1] / 1024**3:.1f}Gi on {largest[0]}"
    )
    pod: dict[str, Any] | None = None
    try:
        await api.create(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", vm.claim)
        created = await api.create(f"/api/v1/namespaces/{namespace}/pods", vm.pod)
        result.priority = int(created["spec"].get("priority") or 0)
        pod = await _wait_bound(api, namespace, vm, started, timeout, progress, label, result)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    if recorder.nominated is not None:
        result.nominated_node, result.nominated_after = recorder.nominated
    gone = dict(recorder.deleted)
    if recorder.lost:
        # Without the whole watch, the victims are also the pods that were there and are gone.
        after = {_key(item) for item in (await api.list_all("/api/v1/pods"))["items"]}
        gone.update({key: None for key in before if key not in after and key not in gone})
    result.victims = [
        _victim(key, recorder.last.get(key) or before[key], deleted_after, namespace)
        for key, deleted_after in sorted(gone.items(), key=lambda item: (item[1] is None, item[1] or 0))
        if key in before
    ]
    if pod is not None:
        found = await disks(api, namespace, {vm.pod_name: pod})
        result.disk = found[0] if found else None
    result.events = await _scene_events(api, vm.pod_name, {key.split("/", 1)[1] for key in gone})
    return result


def _victim(key: str, pod: dict[str, Any], deleted_after: float | None, namespace: str) -> Victim:
    """A victim; pods of the VMs' namespace by name, others as namespace/name."""
    return Victim(
        pod=key.removeprefix(f"{namespace}/"),
        node=str(pod["spec"].get("nodeName") or ""),
        priority=int(pod["spec"].get("priority") or 0),
        memory=memory_request(pod),
        condition=_condition(pod),
        deleted_after=deleted_after,
    )


async def _wait_bound(
    api: ApiClient,
    namespace: str,
    vm: Vm,
    started: float,
    timeout: float,
    progress: Callable[[str], None],
    label: str,
    result: PreemptionResult,
) -> dict[str, Any] | None:
    """The preemptor once it is bound and its claim Bound; None (and `result.error`) at the timeout."""
    pod_path = f"/api/v1/namespaces/{namespace}/pods/{vm.pod_name}"
    claim_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{vm.claim_name}"
    while True:
        pod = await api.get(pod_path)
        node = pod["spec"].get("nodeName")
        if node and result.bound_after is None:
            result.node, result.bound_after = node, time.monotonic() - started
        claim = await api.get(claim_path)
        if node and (claim.get("status") or {}).get("phase") == "Bound":
            progress(f"{label}: {vm.pod_name} bound to {node} after {result.bound_after:.1f}s")
            return pod
        elapsed = time.monotonic() - started
        if elapsed > timeout:
            scheduled: dict[str, Any] = next(
                (
                    c
                    for c in (pod.get("status") or {}).get("conditions") or []
                    if c.get("type") == "PodScheduled"
                ),
                {},
            )
            state = (
                f"bound to {node}, but its disk {vm.claim_name} is {(claim.get('status') or {}).get('phase')}"
                if node
                else f"not bound: PodScheduled={scheduled.get('status', '?')} {scheduled.get('reason', '')}: "
                f"{scheduled.get('message', 'no message')}"
            )
            result.error = (
                f"the high-priority VM {vm.pod_name} was {state} after {timeout:.0f}s "
                f"(nominatedNodeName: {(pod.get('status') or {}).get('nominatedNodeName') or 'none'})"
            )
            progress(f"{label}: {result.error}")
            return None
        progress(f"{label}: waiting for {vm.pod_name} ({elapsed:.0f}s)")
        await asyncio.sleep(0.25)


async def _scene_events(api: ApiClient, preemptor: str, victims: set[str]) -> list[str]:
    """The events of the scene, oldest first: "object: reason (reporter): note"."""
    try:
        items = (await api.list_all("/apis/events.k8s.io/v1/events"))["items"]
    except ApiError:
        return []
    shown = []
    for event in items:
        name = (event.get("regarding") or {}).get("name", "")
        if name == preemptor or (name in victims and event.get("reason") == "Preempted"):
            when = event.get("eventTime") or (event.get("metadata") or {}).get("creationTimestamp") or ""
            reporter = event.get("reportingController", "")
            shown.append((when, f"{name}: {event.get('reason', '')} ({reporter}): {event.get('note', '')}"))
    return [line for _, line in sorted(shown)]
