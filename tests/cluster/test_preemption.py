"""DefaultPreemption on the real control plane: ours beside upstream's kube-scheduler, same objects.

Each case builds the same small world twice, one per scheduler, side by side: two KWOK
nodes of its own (labelled for that world and tainted, so no other pod lands there), pods
already running on them (bound by ``spec.nodeName``, started one after the other so their
start times differ), PriorityClasses and PodDisruptionBudgets. Then a pod arrives for the
scheduler under test: ours (`secsched scheduler`, profile ``secondary-scheduler``) or the
cluster's upstream kube-scheduler (``default-scheduler``). A watch records what each did —
which pods got the DisruptionTarget condition and were deleted, ``nominatedNodeName``, the
final node, the FailedScheduling messages — and the test checks that both did the same,
and what kube-scheduler is known to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import NodeShape, create_nodes, is_ready, node_manifest
from tests.cluster.schedulerproc import running_scheduler
from tests.conftest import fresh_namespace

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
OURS = "secondary-scheduler"
UPSTREAM = "default-scheduler"
WORLD_LABEL = "secsched.io/preemption-world"
TAINT = {"key": "secsched.io/preemption-test", "value": "true", "effect": "NoSchedule"}
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
HIGH = 1_000_000


@dataclass
class World:
    """One scheduler's copy of a case: its namespace, its two nodes, and what the watch saw."""

    scheduler: str
    namespace: str
    nodes: list[str]
    seen: list[tuple[str, JSON]] = field(default_factory=list)
    """(watch event type, pod) in order, from before the pod under test was created."""

    def role(self, node: str | None) -> str | None:
        """A node of this world as n0/n1, so both worlds compare."""
        return f"n{self.nodes.index(node)}" if node in self.nodes else node

    def pods_path(self, name: str = "") -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods" + (f"/{name}" if name else "")

    def deleted(self) -> set[str]:
        return {pod["metadata"]["name"] for kind, pod in self.seen if kind == "DELETED"}

    def disrupted(self) -> dict[str, str]:
        """Pod -> the message of the DisruptionTarget condition (reason PreemptionByScheduler) it got."""
        found: dict[str, str] = {}
        for _kind, pod in self.seen:
            for condition in pod.get("status", {}).get("conditions") or ():
                if (
                    condition["type"] == "DisruptionTarget"
                    and condition.get("reason") == "PreemptionByScheduler"
                ):
                    assert condition["status"] == "True"
                    found[pod["metadata"]["name"]] = condition["message"]
        return found

    def nominations(self, name: str) -> list[str | None]:
        """The distinct ``status.nominatedNodeName`` values the pod showed, as roles, in order."""
        values: list[str | None] = []
        for _kind, pod in self.seen:
            if pod["metadata"]["name"] == name:
                value = self.role(pod.get("status", {}).get("nominatedNodeName"))
                if value and value not in values:
                    values.append(value)
        return values


def pod(
    name: str,
    *,
    cpu: str,
    world: World,
    node: str | None = None,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> JSON:
    """A pod of ``world``: bound to ``node`` when given, else for the world's scheduler, on its nodes only."""
    body: JSON = {
        "containers": [
            {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
        ],
        "tolerations": [{**TAINT, "operator": "Equal"}],
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    else:
        body["schedulerName"] = world.scheduler
        body["nodeSelector"] = {WORLD_LABEL: world.namespace}
    if priority_class:
        body["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": body,
    }


class Case:
    """Both worlds of one test, and the cluster-wide objects they share (PriorityClasses)."""

    def __init__(self, api: ApiClient, prefix: str) -> None:
        self.api = api
        self.prefix = prefix
        self.worlds: list[World] = []
        self.priority_classes: list[str] = []

    async def priority_class(self, suffix: str, value: int, preemption_policy: str | None = None) -> str:
        name = f"{self.prefix}-{suffix}"
        body: JSON = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
        }
        body["value"] = value
        if preemption_policy:
            body["preemptionPolicy"] = preemption_policy
        await self.api.create(PRIORITY_CLASSES, body)
        self.priority_classes.append(name)
        return name

    async def add_world(self, scheduler: str, namespace: str, cpu: str) -> World:
        nodes = [f"{namespace}-{index}" for index in range(2)]
        manifests = []
        for name in nodes:
            manifest = node_manifest(name, NodeShape(cpu=cpu, memory="8Gi"), zone="zone-a")
            manifest["metadata"]["labels"][WORLD_LABEL] = namespace
            manifest["spec"]["taints"] = [TAINT]
            manifests.append(manifest)
        await create_nodes(self.api, manifests)
        world = World(scheduler, namespace, nodes)
        self.worlds.append(world)

        async def ready() -> bool:
            listed = (
                await self.api.list_all("/api/v1/nodes", {"labelSelector": f"{WORLD_LABEL}={namespace}"})
            )["items"]
            return len(listed) == len(nodes) and all(is_ready(node) for node in listed)

        await wait_for(ready, f"the nodes of {namespace} to be Ready", timeout=60)
        return world

    async def cleanup(self) -> None:
        for world in self.worlds:
            for name in world.nodes:
                with contextlib.suppress(ApiError):
                    await self.api.delete(f"/api/v1/nodes/{name}")
        for name in self.priority_classes:
            with contextlib.suppress(ApiError):
                await self.api.delete(f"{PRIORITY_CLASSES}/{name}")


@asynccontextmanager
async def case(api: ApiClient, namespace: str, cpu: str) -> AsyncIterator[tuple[Case, World, World]]:
    """Two worlds with nodes of ``cpu`` cores: (case, ours, upstream)."""
    prefix = f"pre-{uuid.uuid4().hex[:8]}"
    test = Case(api, prefix)
    async with fresh_namespace(api, "up") as upstream_namespace:
        try:
            ours = await test.add_world(OURS, namespace, cpu)
            upstream = await test.add_world(UPSTREAM, upstream_namespace, cpu)
            yield test, ours, upstream
        finally:
            await test.cleanup()


async def run_running(api: ApiClient, world: World, pods: list[JSON]) -> None:
    """Create bound pods one by one, each Running (with a later start time) before the next."""
    previous_start = 0.0
    for manifest in pods:
        # startTime has a resolution of one second: the next pod starts in a later second.
        await wait_for(
            lambda after=previous_start + 1: _clock_passed(after), "the next second", timeout=5, interval=0.05
        )
        await api.create(world.pods_path(), manifest)
        path = world.pods_path(manifest["metadata"]["name"])

        async def started(path: str = path) -> str | None:
            status = (await api.get(path)).get("status", {})
            return status.get("startTime") if status.get("phase") == "Running" else None

        previous_start = _parse_time(await wait_for(started, f"{path} to run", timeout=30))


async def _clock_passed(moment: float) -> bool:
    return time.time() >= moment


def _parse_time(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@asynccontextmanager
async def watching(api: ApiClient, world: World) -> AsyncIterator[None]:
    """Record every pod event of the world's namespace while the block runs."""
    listing = await api.get(world.pods_path())
    version = listing["metadata"]["resourceVersion"]

    async def follow() -> None:
        nonlocal version
        while True:
            try:
                async for event in api.watch(world.pods_path(), {"resourceVersion": version}):
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        world.seen.append((event["type"], event["object"]))
                        version = event["object"]["metadata"]["resourceVersion"]
            except ApiUnavailable:
                await asyncio.sleep(0.2)

    task = asyncio.create_task(follow())
    try:
        yield
        await caught_up(api, world)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def caught_up(api: ApiClient, world: World) -> None:
    """Until the watch has delivered every change made so far: it delivers them in order, so
    once it shows a marker pod created now, it has shown everything before it."""
    marker = f"watch-marker-{uuid.uuid4().hex[:6]}"
    await api.create(world.pods_path(), pod(marker, cpu="1m", world=world, schedulerName="nobody"))

    async def seen() -> bool:
        return any(kind == "ADDED" and obj["metadata"]["name"] == marker for kind, obj in world.seen)

    await wait_for(seen, f"the watch of {world.namespace} to deliver {marker}", timeout=30, interval=0.05)


async def node_of(api: ApiClient, world: World, name: str, timeout: float = 60) -> str:
    async def bound() -> str | None:
        return (await api.get(world.pods_path(name)))["spec"].get("nodeName")

    return await wait_for(bound, f"{world.namespace}/{name} to be bound", timeout=timeout)


async def failed_scheduling(api: ApiClient, world: World, name: str, ending: str = "") -> str:
    """The newest FailedScheduling message for the pod (one that ends with ``ending``)."""

    async def message() -> str | None:
        node = (await api.get(world.pods_path(name)))["spec"].get("nodeName")
        assert not node, f"{world.scheduler} bound {world.namespace}/{name} to {world.role(node)}"
        events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{world.namespace}/events"))["items"]
        notes = [
            event["note"]
            for event in sorted(events, key=lambda event: event.get("eventTime") or "")
            if event["reason"] == "FailedScheduling"
            and event["regarding"]["name"] == name
            and event["note"].endswith(ending)
        ]
        return notes[-1] if notes else None

    return await wait_for(message, f"a FailedScheduling event for {world.namespace}/{name}", timeout=30)


async def scheduler_has_seen(api: ApiClient, world: World) -> None:
    """Until the world's scheduler has seen every change made so far: it reports a pod created
    now that fits nowhere, and its one pods watch delivers the changes in the order made."""
    probe = f"seen-{uuid.uuid4().hex[:6]}"
    await api.create(world.pods_path(), pod(probe, cpu="1000", world=world))

    async def unschedulable() -> bool:
        conditions = (await api.get(world.pods_path(probe))).get("status", {}).get("conditions") or ()
        return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)

    await wait_for(unschedulable, f"{world.scheduler} to report {probe} unschedulable", timeout=60)
    await api.delete(world.pods_path(probe), {"gracePeriodSeconds": 0})

    async def gone() -> bool:
        try:
            await api.get(world.pods_path(probe))
        except ApiError as error:
            if error.not_found:
                return True
            raise
        return False

    await wait_for(gone, f"{probe} deleted", timeout=30)


def node_count(message: str) -> int:
    """N of "0/N nodes are available" (the base nodes, both worlds', and any other test's)."""
    return int(message.split("/", 1)[1].split(" ", 1)[0])


async def first_failure(api: ApiClient, world: World, name: str) -> str:
    """The first FailedScheduling message of the pod (a scheduler writes it after the cycle: wait for it)."""

    async def first() -> str | None:
        events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{world.namespace}/events"))["items"]
        notes = [
            event["note"]
            for event in sorted(events, key=lambda event: event.get("eventTime") or "")
            if event["reason"] == "FailedScheduling" and event["regarding"]["name"] == name
        ]
        return notes[0] if notes else None

    return await wait_for(first, f"a FailedScheduling event for {world.namespace}/{name}", timeout=30)


async def preempted_events(api: ApiClient, world: World) -> dict[str, str]:
    """Victim -> the note of its Preempted event, for every pod the watch saw deleted (a
    scheduler writes the Event after the eviction: wait until each is there)."""
    victims = world.deleted()

    async def all_there() -> dict[str, str] | None:
        events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{world.namespace}/events"))["items"]
        notes = {
            event["regarding"]["name"]: event["note"] for event in events if event["reason"] == "Preempted"
        }
        return notes if victims <= set(notes) else None

    return await wait_for(all_there, f"a Preempted event for each of {sorted(victims)}", timeout=30)


async def both(
    ours: World, upstream: World, scenario: Callable[[World], Awaitable[JSON]]
) -> tuple[JSON, JSON]:
    """Run the scenario in both worlds at once; return what each world observed."""
    results = await asyncio.gather(scenario(ours), scenario(upstream))
    return results[0], results[1]


# -- the cases -----------------------------------------------------------------------------------


async def test_a_high_priority_pod_preempts_the_lowest_priority_newest_pod(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    async with case(api, namespace, cpu="3") as (test, ours, upstream):  # 2900m allocatable per node
        mid = await test.priority_class("mid", 10)
        high = await test.priority_class("high", HIGH)

        async def scenario(world: World) -> JSON:
            n0, n1 = world.nodes
            await run_running(
                api,
                world,
                [
                    pod("a-old", cpu="900m", world=world, node=n0),
                    pod("a-new", cpu="900m", world=world, node=n0),
                    pod("a-mid", cpu="900m", world=world, node=n0, priority_class=mid),
                    *(
                        pod(f"b-{index}", cpu="900m", world=world, node=n1, priority_class=mid)
                        for index in range(3)
                    ),
                ],
            )
            async with watching(api, world):
                await api.create(world.pods_path(), pod("vip", cpu="900m", world=world, priority_class=high))
                node = await node_of(api, world, "vip")
            vip = await api.get(world.pods_path("vip"))
            return {
                "bound": world.role(node),
                "nominated": world.nominations("vip"),
                "deleted": world.deleted(),
                "disrupted": {
                    name: message.replace(world.scheduler, "<scheduler>")
                    for name, message in world.disrupted().items()
                },
                "preempted": {
                    name: note.replace(vip["metadata"]["uid"], "<vip>").replace(n0, "n0")
                    for name, note in (await preempted_events(api, world)).items()
                },
                "failed": await first_failure(api, world, "vip"),
            }

        with running_scheduler(cluster.kubeconfig, tmp_path):
            seen_ours, seen_upstream = await both(ours, upstream, scenario)
    assert seen_ours == seen_upstream
    total = node_count(seen_ours["failed"])
    assert seen_ours == {
        # A successful preemption adds nothing to the FitError: the pod waits for its victims.
        "failed": f"0/{total} nodes are available: 2 Insufficient cpu, {total - 2} node(s) didn't match "
        "Pod's node affinity/selector.",
        "bound": "n0",
        "nominated": ["n0"],
        "deleted": {"a-new"},  # priority 0 on n0, the newer of the two: n1 would cost a priority-10 pod
        "disrupted": {"a-new": "<scheduler>: preempting to accommodate a higher priority pod"},
        "preempted": {"a-new": "Preempted by pod <vip> on node n0"},
    }


async def pdb_status(api: ApiClient, world: World, name: str) -> JSON | None:
    budget = await api.get(f"/apis/policy/v1/namespaces/{world.namespace}/poddisruptionbudgets/{name}")
    status = budget.get("status") or {}
    settled = status.get("observedGeneration") == budget["metadata"].get("generation")
    return status if settled and status.get("currentHealthy") == 1 else None


async def test_preemption_spares_a_pod_its_disruption_budget_protects(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    async with case(api, namespace, cpu="1") as (test, ours, upstream):  # 900m allocatable per node
        mid = await test.priority_class("mid", 10)
        high = await test.priority_class("high", HIGH)

        async def scenario(world: World) -> JSON:
            n0, n1 = world.nodes
            await api.create(
                f"/apis/policy/v1/namespaces/{world.namespace}/poddisruptionbudgets",
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "guarded"},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
                },
            )
            await run_running(
                api,
                world,
                [
                    pod("guarded", cpu="800m", world=world, node=n0, labels={"app": "guarded"}),
                    pod("plain", cpu="800m", world=world, node=n1, priority_class=mid),
                ],
            )
            # kube-controller-manager's disruption controller: the guarded pod is Running and Ready.
            status = await wait_for(
                lambda: pdb_status(api, world, "guarded"), "the PDB's status", timeout=60, interval=0.5
            )
            assert status["disruptionsAllowed"] == 0
            async with watching(api, world):
                await api.create(world.pods_path(), pod("vip", cpu="800m", world=world, priority_class=high))
                node = await node_of(api, world, "vip")
            return {
                "bound": world.role(node),
                "nominated": world.nominations("vip"),
                "deleted": world.deleted(),
                "disrupted": set(world.disrupted()),
                "failed": await first_failure(api, world, "vip"),
            }

        with running_scheduler(cluster.kubeconfig, tmp_path):
            seen_ours, seen_upstream = await both(ours, upstream, scenario)
    assert seen_ours == seen_upstream
    total = node_count(seen_ours["failed"])
    # Without the budget n0 would go first (its victim has priority 0, n1's has 10).
    assert seen_ours == {
        "failed": f"0/{total} nodes are available: 2 Insufficient cpu, {total - 2} node(s) didn't match "
        "Pod's node affinity/selector.",
        "bound": "n1",
        "nominated": ["n1"],
        "deleted": {"plain"},
        "disrupted": {"plain"},
    }


async def test_a_pod_with_preemption_policy_never_preempts_nothing(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    async with case(api, namespace, cpu="1") as (test, ours, upstream):
        polite = await test.priority_class("polite", HIGH, preemption_policy="Never")
        ending = "preemption: not eligible due to preemptionPolicy=Never."

        async def scenario(world: World) -> JSON:
            await run_running(
                api,
                world,
                [pod(f"filler-{i}", cpu="800m", world=world, node=n) for i, n in enumerate(world.nodes)],
            )
            async with watching(api, world):
                await api.create(
                    world.pods_path(), pod("polite", cpu="500m", world=world, priority_class=polite)
                )
                # The scheduler's decision: PostFilter found the pod not eligible to preempt.
                message = await failed_scheduling(api, world, "polite", ending)
            current = await api.get(world.pods_path("polite"))
            return {
                "message": message,
                "bound": current["spec"].get("nodeName"),
                "nominated": world.nominations("polite"),
                "deleted": world.deleted(),
                "disrupted": set(world.disrupted()),
            }

        with running_scheduler(cluster.kubeconfig, tmp_path):
            seen_ours, seen_upstream = await both(ours, upstream, scenario)
    assert seen_upstream["message"] == seen_ours["message"]
    assert {**seen_upstream, "message": ""} == {**seen_ours, "message": ""}
    total = node_count(seen_ours["message"])
    assert seen_ours == {
        "message": f"0/{total} nodes are available: 2 Insufficient cpu, {total - 2} node(s) didn't match "
        f"Pod's node affinity/selector. no new claims to deallocate, {ending}",
        "bound": None,
        "nominated": [],
        "deleted": set(),
        "disrupted": set(),
    }


async def test_a_nominated_pods_room_is_kept_from_lower_priority_pods(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    async with case(api, namespace, cpu="2") as (test, ours, upstream):  # 1900m allocatable per node
        high = await test.priority_class("high", HIGH)
        half = await test.priority_class("half", HIGH // 2)

        async def scenario(world: World) -> JSON:
            n0, n1 = world.nodes
            # n1 is full with a pod nobody here may preempt; n0 is empty.
            await run_running(
                api, world, [pod("vip-filler", cpu="1800m", world=world, node=n1, priority_class=high)]
            )
            # A pod that preemption nominated to n0 (set here by hand), held back by a gate.
            held = pod(
                "reserved",
                cpu="1500m",
                world=world,
                priority_class=high,
                schedulingGates=[{"name": "secsched.io/hold"}],
            )
            await api.create(world.pods_path(), held)
            await api.patch(
                world.pods_path("reserved") + "/status",
                {"status": {"nominatedNodeName": n0}},
                patch_type="strategic",
            )
            await scheduler_has_seen(api, world)  # the nomination, before the latecomer comes
            async with watching(api, world):
                await api.create(
                    world.pods_path(), pod("latecomer", cpu="1000m", world=world, priority_class=half)
                )
                message = await failed_scheduling(api, world, "latecomer")
                latecomer_node = (await api.get(world.pods_path("latecomer")))["spec"].get("nodeName")
                # Released, the nominated pod takes the room kept for it.
                await api.patch(world.pods_path("reserved"), {"spec": {"schedulingGates": None}})
                reserved_node = await node_of(api, world, "reserved")
                after = (await api.get(world.pods_path("latecomer")))["spec"].get("nodeName")
            return {
                "message": message,
                "latecomer while reserved": world.role(latecomer_node),
                "reserved": world.role(reserved_node),
                "latecomer after": world.role(after),
                "deleted": world.deleted(),
            }

        with running_scheduler(cluster.kubeconfig, tmp_path):
            seen_ours, seen_upstream = await both(ours, upstream, scenario)
    assert seen_upstream["message"] == seen_ours["message"]
    assert {**seen_upstream, "message": ""} == {**seen_ours, "message": ""}
    total = node_count(seen_ours["message"])
    assert seen_ours == {
        # n0 has room for the latecomer, but it is kept for the nominated pod of higher priority.
        "message": f"0/{total} nodes are available: 2 Insufficient cpu, {total - 2} node(s) didn't match "
        f"Pod's node affinity/selector. no new claims to deallocate, preemption: 0/{total} nodes are "
        f"available: 2 No preemption victims "
        f"found for incoming pod, {total - 2} Preemption is not helpful for scheduling.",
        "latecomer while reserved": None,
        "reserved": "n0",
        "latecomer after": None,
        "deleted": set(),
    }
