"""Rows 1-4 and 8 of the fidelity table on the real control plane: ours beside upstream's binary.

Each row was once a difference between our scheduler and kube-scheduler 1.34; these tests
prove that, on a real apiserver, ours now decides as upstream does. Both schedulers run as
processes (ours: `secsched scheduler`; upstream: the scheduler-plugins build of
kube-scheduler) with the same two profiles — kube-scheduler's defaults, and the same with
PodTopologySpread's ``defaultingType: List`` — only the scheduler names differ. Every case
builds the same small world twice, one per scheduler: nodes of its own (labelled for that
world and tainted, so the session's other pods stay away and its pods stay on them), a
namespace of its own, the same pods. Both worlds exist while either runs, so "0/N nodes"
counts the same nodes for both. The test then compares what happened: where pods landed
(as node roles n0, n1, ...), the PodScheduled condition's reason and message, and how soon
a waiting pod was scheduled after the pod it waited for appeared.

Each case prints a one-line figure per scheduler: ``fidelity[row/kind]: ...``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import (
    KWOK_ANNOTATION,
    LIFECYCLE_TAINTS,
    NodeShape,
    create_nodes,
    is_settled,
    node_manifest,
)
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, SchedulerRun, start_scheduler
from tests.conftest import fresh_namespace

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
KINDS = {"ours": OURS, "upstream": UPSTREAM}
DEFAULT = {"ours": "fidelity-ours", "upstream": "fidelity-upstream"}
"""kube-scheduler's default profile (PodTopologySpread's system default constraints)."""
LISTED = {"ours": "fidelity-list-ours", "upstream": "fidelity-list-upstream"}
"""The same with ``defaultingType: List``: the admin's hostname maxSkew 1 DoNotSchedule."""
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
WORLD_LABEL = "fidelity.secsched.io/world"
TAINT = {"key": "fidelity.secsched.io/test", "value": "true", "effect": "NoSchedule"}
CLOSED = {"key": "fidelity.secsched.io/closed", "value": "true", "effect": "NoSchedule"}
"""On a node some pods must not use, though it still counts as a spreading domain
(nodeTaintsPolicy defaults to Ignore)."""
REQUEUE_BOUND = 5.0
"""Seconds a waiting pod may take to be scheduled once what it waited for is there: queueing
hints do it in ~1-2 s (the initial backoff); the flush of unschedulable pods takes 5 minutes."""
PAUSE = "registry.k8s.io/pause:3.10"


def profiles(who: str) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  qps: 100
  burst: 200
profiles:
  - schedulerName: {DEFAULT[who]}
  - schedulerName: {LISTED[who]}
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - maxSkew: 1
              topologyKey: {HOSTNAME}
              whenUnsatisfiable: DoNotSchedule
"""


@pytest.fixture(scope="module")
def schedulers(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SchedulerRun]]:
    directory = tmp_path_factory.mktemp("fidelity-schedulers")
    runs: dict[str, SchedulerRun] = {}
    try:
        for who, kind in KINDS.items():
            runs[who] = start_scheduler(kind, profiles(who), cluster.kubeconfig, directory, name=who)
        yield runs
    finally:
        for run in runs.values():
            run.stop()


# -- worlds -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    cpu: str = "4"
    zone: str = "zone-a"
    managed: bool = True
    """KWOK runs its pods; an unmanaged node keeps a deleted pod terminating (no kubelet confirms)."""
    closed: bool = False


@dataclass
class World:
    """One scheduler's copy of a case: its namespace, its nodes, its pods."""

    api: ApiClient
    who: str
    namespace: str
    label: str
    nodes: list[str]
    extra_namespaces: list[str] = field(default_factory=list)

    def role(self, node: str | None) -> str | None:
        return f"n{self.nodes.index(node)}" if node in self.nodes else node

    def pods(self, name: str = "", namespace: str | None = None) -> str:
        return f"/api/v1/namespaces/{namespace or self.namespace}/pods" + (f"/{name}" if name else "")

    def template(
        self,
        *,
        cpu: str = "100m",
        labels: dict[str, str] | None = None,
        scheduler: dict[str, str] | None = None,
        node: str | None = None,
        **spec: Any,
    ) -> JSON:
        """Pod metadata+spec: bound to ``node`` (a role) when given, else for the world's scheduler."""
        tolerations = [{**TAINT, "operator": "Equal"}]
        tolerations += [{"key": key, "operator": "Exists"} for key in LIFECYCLE_TAINTS]
        body: JSON = {
            "containers": [{"name": "app", "image": PAUSE, "resources": {"requests": {"cpu": cpu}}}],
            "tolerations": tolerations,
            "terminationGracePeriodSeconds": 30,
            **spec,
        }
        if node is not None:
            body["nodeName"] = self.nodes[int(node[1:])]
        else:
            body["schedulerName"] = (scheduler or DEFAULT)[self.who]
            body["nodeSelector"] = {WORLD_LABEL: self.label, **body.get("nodeSelector", {})}
        return {"metadata": {"labels": dict(labels or {})}, "spec": body}

    async def pod(self, name: str, namespace: str | None = None, **options: Any) -> None:
        manifest = {"apiVersion": "v1", "kind": "Pod", **self.template(**options)}
        manifest["metadata"]["name"] = name
        await self.api.create(self.pods(namespace=namespace), manifest)

    async def node_of(self, name: str, timeout: float = 60) -> str:
        async def bound() -> str | None:
            return (await self.api.get(self.pods(name)))["spec"].get("nodeName")

        node = await wait_for(bound, f"{self.who}'s {self.namespace}/{name} to be bound", timeout, 0.1)
        return str(self.role(node))

    async def condition(self, name: str, reason: str = "Unschedulable", timeout: float = 60) -> str:
        """The PodScheduled=False message once the scheduler has written it with ``reason``."""

        async def message() -> str | None:
            pod = await self.api.get(self.pods(name))
            node = pod["spec"].get("nodeName")
            assert not node, f"{self.who} bound {self.namespace}/{name} to {self.role(node)}"
            for condition in pod["status"].get("conditions") or ():
                if (
                    condition["type"] == "PodScheduled"
                    and condition["status"] == "False"
                    and condition.get("reason") == reason
                ):
                    return str(condition.get("message") or "") or None
            return None

        return await wait_for(message, f"{self.who} to report {name} {reason}", timeout, 0.1)

    async def seen(self) -> None:
        """Wait until the world's scheduler has seen every pod created so far, before a case
        creates the pod whose placement depends on them (on a fast machine a pod created at once
        after a bound one was scheduled before the watch delivered the bound one).

        The proof: it reports a pod created after them that fits nowhere; one pods watch
        delivers the changes in the order they were made.
        """
        name = f"seen-{uuid.uuid4().hex[:6]}"
        await self.pod(name, nodeSelector={"fidelity.secsched.io/nowhere": "true"})
        await self.condition(name)
        await self.gone(name)

    async def gone(self, name: str) -> None:
        with contextlib.suppress(ApiError):
            await self.api.delete(self.pods(name), {"gracePeriodSeconds": 0})

        async def absent() -> bool:
            try:
                await self.api.get(self.pods(name))
            except ApiError as error:
                if error.not_found:
                    return True
                raise
            return False

        await wait_for(absent, f"{self.namespace}/{name} to be deleted", 30, 0.1)

    async def placements(self, selector: str, count: int) -> dict[str, int]:
        """Pods per node role, once ``count`` pods matching ``selector`` are all bound."""

        async def bound() -> dict[str, int] | None:
            items = (await self.api.list_all(self.pods(), {"labelSelector": selector}))["items"]
            nodes = [pod["spec"].get("nodeName") for pod in items]
            if len(nodes) < count or not all(nodes):
                return None
            counts = {role: 0 for role in (f"n{index}" for index in range(len(self.nodes)))}
            for node in nodes:
                counts[str(self.role(node))] += 1
            return counts

        return await wait_for(bound, f"{count} pods of {self.who}'s {selector} to be bound", 90, 0.2)


@asynccontextmanager
async def worlds(api: ApiClient, specs: list[NodeSpec]) -> AsyncIterator[dict[str, World]]:
    """A world per scheduler, each with a namespace and nodes as ``specs`` say (ready when managed)."""
    token = uuid.uuid4().hex[:6]
    made: list[str] = []
    async with AsyncExitStack() as stack:
        result: dict[str, World] = {}
        for who in KINDS:
            namespace = await stack.enter_async_context(fresh_namespace(api, prefix=f"fid-{who}"))
            label = f"{token}-{who}"
            names = [f"fid-{token}-{who}-{index}" for index in range(len(specs))]
            manifests = []
            for name, spec in zip(names, specs, strict=True):
                manifest = node_manifest(name, NodeShape(cpu=spec.cpu, memory="16Gi"), spec.zone)
                manifest["metadata"]["labels"][WORLD_LABEL] = label
                manifest["spec"]["taints"] = [TAINT] + ([CLOSED] if spec.closed else [])
                if not spec.managed:
                    del manifest["metadata"]["annotations"][KWOK_ANNOTATION]
                manifests.append(manifest)
            made += names
            await create_nodes(api, manifests)
            result[who] = World(api, who, namespace, label, names)
        managed = {name for name, spec in zip(made, specs * 2, strict=True) if spec.managed}

        async def ready() -> bool:
            # Ready, and the not-ready taint admission puts on a new node lifted: the controller
            # lifts it some time after Ready, and that taint change would requeue (with a Queue
            # hint from PodTopologySpread and others) a pod a case is watching wait.
            listed = (await api.list_all("/api/v1/nodes", {"labelSelector": f"{WORLD_LABEL}"}))["items"]
            settled = {node["metadata"]["name"] for node in listed if is_settled(node)}
            return managed <= settled

        try:
            await wait_for(ready, "the worlds' nodes to be Ready and untainted not-ready", 60)
            yield result
        finally:
            for world in result.values():
                for namespace in world.extra_namespaces:
                    with contextlib.suppress(ApiError):
                        await api.delete(f"/api/v1/namespaces/{namespace}")
            for name in made:
                with contextlib.suppress(ApiError):
                    await api.delete(f"/api/v1/nodes/{name}")


async def both(
    row: str, worlds_: dict[str, World], case: Callable[[World], Awaitable[Any]]
) -> dict[str, Any]:
    """Run ``case`` in both worlds at once; print one figure per scheduler."""
    results = await asyncio.gather(*(case(world) for world in worlds_.values()))
    outcome = dict(zip(worlds_, results, strict=True))
    for who, result in outcome.items():
        print(f"fidelity[{row}/{who}]: {result!r}")
    return outcome


def same(outcome: dict[str, Any]) -> Any:
    assert outcome["ours"] == outcome["upstream"], outcome
    return outcome["upstream"]


def spread(key: str, app: str, max_skew: int = 1) -> JSON:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
    }


# -- row 1: PodTopologySpread's default constraints ---------------------------------------------


async def test_row1_system_default_spreading_of_deployment_replicas(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """Replicas without constraints of their own, spread by the system defaults (ScheduleAnyway):
    two nodes in zone-a, one in zone-b already half full (LeastAllocated pulls away from it,
    zone spreading pulls towards it)."""
    specs = [NodeSpec("16", "zone-a"), NodeSpec("16", "zone-a"), NodeSpec("16", "zone-b")]
    async with worlds(api, specs) as pair:

        async def case(world: World) -> JSON:
            await world.pod("filler", node="n2", cpu="8")
            await world.seen()
            template = world.template(cpu="500m", labels={"app": "web"})
            deployment = {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 9,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": template,
                },
            }
            await world.api.create(f"/apis/apps/v1/namespaces/{world.namespace}/deployments", deployment)
            counts = await world.placements("app=web", 9)
            return {"zone-a": sorted([counts["n0"], counts["n1"]]), "zone-b": counts["n2"]}

        result = same(await both("1/system-defaults", pair, case))
        assert result["zone-b"] > 0, result


async def test_row1_listed_default_constraints_do_not_schedule(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """``defaultingType: List``: the admin's hostname maxSkew 1 DoNotSchedule binds a StatefulSet's
    replicas and a Service-selected pod, against LeastAllocated's pull to the emptier node."""
    async with worlds(api, [NodeSpec("4"), NodeSpec("4")]) as pair:

        async def case(world: World) -> JSON:
            await world.pod("filler", node="n1", cpu="3")
            await world.seen()
            service = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web"},
                "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]},
            }
            await world.api.create(f"/api/v1/namespaces/{world.namespace}/services", service)
            template = world.template(labels={"app": "web"}, scheduler=LISTED)
            statefulset = {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 4,
                    "serviceName": "web",
                    "podManagementPolicy": "Parallel",
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": template,
                },
            }
            await world.api.create(f"/apis/apps/v1/namespaces/{world.namespace}/statefulsets", statefulset)
            counts = await world.placements("app=web", 4)
            # Selected by the Service only: no owner.
            await world.pod("extra", labels={"app": "web"}, scheduler=LISTED, cpu="2500m")
            extra = await world.node_of("extra")
            await world.pod("refused", labels={"app": "web"}, scheduler=LISTED, cpu="1")
            return {"statefulset": counts, "extra": extra, "refused": await world.condition("refused")}

        result = same(await both("1/list-do-not-schedule", pair, case))
        assert result["statefulset"] == {"n0": 2, "n1": 2}, result
        assert "didn't match pod topology spread constraints" in result["refused"], result


# -- row 2: namespaceSelector on namespace labels --------------------------------------------------


async def test_row2_namespace_selector_matches_namespace_labels(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    async with worlds(api, [NodeSpec("4"), NodeSpec("4")]) as pair:

        async def case(world: World) -> JSON:
            team_label = {"fidelity.secsched.io/team": world.label}
            front_label = {"fidelity.secsched.io/role": f"front-{world.label}"}
            team = f"{world.namespace}-team"
            await world.api.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team, "labels": team_label}},
            )
            world.extra_namespaces.append(team)
            await world.api.patch(
                f"/api/v1/namespaces/{world.namespace}", {"metadata": {"labels": front_label}}
            )
            # The db the client wants is in the team namespace (on n1); a decoy in its own (on n0).
            await world.pod("db", namespace=team, node="n1", cpu="1", labels={"app": "db"})
            await world.pod("decoy", node="n0", labels={"app": "db"})
            await world.seen()
            term = {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "namespaceSelector": {"matchLabels": team_label},
                "topologyKey": HOSTNAME,
            }
            affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
            await world.pod("client", affinity=affinity)
            client = await world.node_of("client")
            # An existing pod in the team namespace keeps app=web pods of front namespaces off n0.
            guard_term = {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "namespaceSelector": {"matchLabels": front_label},
                "topologyKey": HOSTNAME,
            }
            guard_affinity = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [guard_term]}
            }
            await world.pod("guard", namespace=team, node="n0", affinity=guard_affinity)
            await world.seen()
            await world.pod("web", labels={"app": "web"})
            web = await world.node_of("web")
            pinned = {HOSTNAME: world.nodes[0]}
            await world.pod("web-pinned", labels={"app": "web"}, nodeSelector=pinned)
            return {"client": client, "web": web, "web-pinned": await world.condition("web-pinned")}

        result = same(await both("2/namespace-selector", pair, case))
        assert result["client"] == "n1" and result["web"] == "n1", result
        assert "didn't satisfy existing pods anti-affinity rules" in result["web-pinned"], result


# -- row 3: a waiting pod is requeued when the pod it waits for appears ---------------------------


async def timed_requeue(world: World, waiter: str, appear: Callable[[], Awaitable[None]]) -> JSON:
    """Seconds from ``appear()`` having made the awaited pod bound to ``waiter`` being bound."""
    message = await world.condition(waiter)
    await appear()
    start = time.monotonic()
    node = await world.node_of(waiter, timeout=60)
    return {"unschedulable": message, "node": node, "requeued_s": round(time.monotonic() - start, 2)}


async def test_row3_required_pod_affinity_waits_for_its_pod(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    async with worlds(api, [NodeSpec("4"), NodeSpec("4")]) as pair:

        async def case(world: World) -> JSON:
            term = {"labelSelector": {"matchLabels": {"app": "leader"}}, "topologyKey": HOSTNAME}
            await world.pod(
                "waiter", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
            )
            leader: list[str] = []

            async def appear() -> None:
                await world.pod("leader", labels={"app": "leader"})
                leader.append(await world.node_of("leader"))

            figure = await timed_requeue(world, "waiter", appear)
            figure["with_leader"] = figure["node"] == leader[0]
            return figure

        outcome = await both("3/pod-affinity", pair, case)
        for who, figure in outcome.items():
            assert figure["with_leader"], (who, outcome)
            assert figure["requeued_s"] < REQUEUE_BOUND, (who, outcome)
        assert outcome["ours"]["unschedulable"] == outcome["upstream"]["unschedulable"], outcome


async def test_row3_spreading_waits_for_a_pod_in_the_other_domain(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """n1 is closed to the waiter yet counts as a domain: the waiter fits n0 only once a pod of
    its app is bound on n1."""
    async with worlds(api, [NodeSpec("4"), NodeSpec("4", closed=True)]) as pair:

        async def case(world: World) -> JSON:
            await world.pod("s0", node="n0", labels={"app": "s"})
            await world.seen()
            constraint = spread(HOSTNAME, "s")
            await world.pod("waiter", labels={"app": "s"}, topologySpreadConstraints=[constraint])

            async def appear() -> None:
                await world.pod("s1", node="n1", labels={"app": "s"})

            return await timed_requeue(world, "waiter", appear)

        outcome = await both("3/spreading", pair, case)
        for who, figure in outcome.items():
            assert figure["node"] == "n0", (who, outcome)
            assert figure["requeued_s"] < REQUEUE_BOUND, (who, outcome)
        assert outcome["ours"]["unschedulable"] == outcome["upstream"]["unschedulable"], outcome


# -- row 4: the cache re-reads a bound pod resized in place or terminating --------------------------


async def test_row4_in_place_resize_counts_max_of_spec_status_and_allocated(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """A bound pod (1 cpu of the node's 3900m) is resized; a 2-cpu probe after each step fits only
    if the node's requested cpu (max(spec, status, allocated) while resizing) leaves room."""
    async with worlds(api, [NodeSpec("4", managed=False)]) as pair:

        async def resize(world: World, cpu: str) -> None:
            body = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]}}
            await world.api.patch(world.pods("resized") + "/resize", body, patch_type="strategic")

        async def kubelet(world: World, cpu: str, condition: JSON | None) -> None:
            """Write the status a kubelet would: what it has allocated and actuated, and why."""
            pod = await world.api.get(world.pods("resized"))
            status = {
                "name": "app",
                "image": PAUSE,
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
                "allocatedResources": {"cpu": cpu},
                "resources": {"requests": {"cpu": cpu}},
            }
            conditions = [
                c
                for c in pod["status"].get("conditions") or ()
                if c["type"] not in ("PodResizePending", "PodResizeInProgress")
            ]
            if condition is not None:
                conditions.append({"status": "True", **condition})
            pod["status"]["containerStatuses"] = [status]
            pod["status"]["conditions"] = conditions
            await world.api.replace(world.pods("resized") + "/status", pod)

        async def probe(world: World, name: str) -> str:
            await world.pod(name, cpu="2")
            bound_or_refused: list[str] = []

            async def decided() -> bool:
                pod = await world.api.get(world.pods(name))
                if pod["spec"].get("nodeName"):
                    bound_or_refused.append(str(world.role(pod["spec"]["nodeName"])))
                    return True
                for condition in pod["status"].get("conditions") or ():
                    if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                        bound_or_refused.append(str(condition.get("message")))
                        return True
                return False

            await wait_for(decided, f"{world.who} to decide {name}", 60, 0.1)
            await world.gone(name)
            return bound_or_refused[0]

        async def case(world: World) -> JSON:
            await world.pod("resized", node="n0", cpu="1")
            await world.seen()
            await kubelet(world, "1", None)
            steps: JSON = {"before": await probe(world, "p0")}
            await resize(world, "3")  # spec 3, actuated 1: deferred -> 3
            await kubelet(world, "1", {"type": "PodResizePending", "reason": "Deferred"})
            steps["deferred"] = await probe(world, "p1")
            await kubelet(world, "1", {"type": "PodResizePending", "reason": "Infeasible"})  # -> 1
            steps["infeasible"] = await probe(world, "p2")
            await kubelet(world, "3", {"type": "PodResizeInProgress"})  # actuated 3
            await resize(world, "500m")  # spec 500m, allocated 3: -> 3
            steps["shrinking"] = await probe(world, "p3")
            await kubelet(world, "500m", None)  # -> 500m
            steps["shrunk"] = await probe(world, "p4")
            return steps

        steps = same(await both("4/resize", pair, case))
        assert steps["before"] == "n0" and steps["infeasible"] == "n0" and steps["shrunk"] == "n0", steps
        assert "Insufficient cpu" in steps["deferred"] and "Insufficient cpu" in steps["shrinking"], steps


async def test_row4_a_terminating_pod_no_longer_counts_for_spreading(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """Zone spreading: s0 (on n2, a node no kubelet runs, so its deletion never completes) holds
    zone-a at one pod against zone-b's none; once s0 has a deletionTimestamp a pod fits n0."""
    specs = [
        NodeSpec("4", "zone-a"),
        NodeSpec("4", "zone-b", closed=True),
        NodeSpec("4", "zone-a", managed=False, closed=True),
    ]
    async with worlds(api, specs) as pair:

        async def case(world: World) -> JSON:
            await world.pod("s0", node="n2", labels={"app": "s"})
            await world.seen()
            await world.pod("waiter", labels={"app": "s"}, topologySpreadConstraints=[spread(ZONE, "s")])

            message = await world.condition("waiter")
            await world.api.delete(world.pods("s0"))
            pod = await world.api.get(world.pods("s0"))
            assert pod["metadata"].get("deletionTimestamp"), pod["metadata"]
            try:
                # Whether the deletionTimestamp update alone requeues the waiter is compared as
                # observed (kube-scheduler 1.34 does not, within the bound: the update is a general
                # Pod/Update event). A pod arriving now shows what the cache holds.
                await asyncio.sleep(REQUEUE_BOUND)
                waiter = (await world.api.get(world.pods("waiter")))["spec"].get("nodeName")
                await world.pod("late", labels={"app": "s"}, topologySpreadConstraints=[spread(ZONE, "s")])
                late = await world.node_of("late")
            finally:
                await world.gone("s0")
            return {"unschedulable": message, "waiter": world.role(waiter), "late": late}

        outcome = same(await both("4/terminating", pair, case))
        assert outcome["late"] == "n0", outcome


# -- row 8: binding failure: SchedulerError, and the forgotten pod's room -----------------------------

DENY_LABEL = "fidelity.secsched.io/deny-binding"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
POLICY_BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


@asynccontextmanager
async def binding_denied(api: ApiClient, token: str) -> AsyncIterator[str]:
    """A ValidatingAdmissionPolicy refusing pods/binding of pods named unbindable* in namespaces
    labelled ``DENY_LABEL=token``."""
    name = f"fidelity-deny-binding-{token}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {DENY_LABEL: token}},
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods/binding"],
                    }
                ],
            },
            "validations": [
                {
                    "expression": "!object.metadata.name.startsWith('unbindable')",
                    "message": "this pod may not be bound",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    await api.create(POLICIES, policy)
    try:
        await api.create(POLICY_BINDINGS, binding)
        try:
            yield name
        finally:
            with contextlib.suppress(ApiError):
                await api.delete(f"{POLICY_BINDINGS}/{name}")
    finally:
        with contextlib.suppress(ApiError):
            await api.delete(f"{POLICIES}/{name}")


async def test_row8_binding_failure_is_a_scheduler_error_and_frees_the_room(
    api: ApiClient, schedulers: dict[str, SchedulerRun]
) -> None:
    """unbindable (3 cpu of n0's 3900m) is assumed, then refused at Bind: SchedulerError with
    DefaultBinder's words; forgetting it frees the room for small (2 cpu), which is bound; then
    unbindable no longer fits."""
    token = uuid.uuid4().hex[:6]
    async with worlds(api, [NodeSpec("4")]) as pair, binding_denied(api, token):

        async def case(world: World) -> JSON:
            await world.api.patch(
                f"/api/v1/namespaces/{world.namespace}", {"metadata": {"labels": {DENY_LABEL: token}}}
            )
            probe = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "unbindable-probe"}}
            probe["target"] = {"apiVersion": "v1", "kind": "Node", "name": world.nodes[0]}

            async def denying() -> bool:
                try:
                    await world.api.create(world.pods("unbindable-probe") + "/binding", probe)
                except ApiError as error:
                    return "ValidatingAdmissionPolicy" in str(error)
                return False

            await wait_for(denying, "the binding policy to be in force", 30, 0.2)
            await world.pod("unbindable", cpu="3")
            await world.pod("small", cpu="2")
            error = await world.condition("unbindable", reason="SchedulerError")
            small = await world.node_of("small")
            final = await world.condition("unbindable", timeout=60)
            return {"error": error, "small": small, "then": final}

        result = same(await both("8/binding-failure", pair, case))
        assert result["error"].startswith('running Bind plugin "DefaultBinder": '), result
        assert result["small"] == "n0" and "Insufficient cpu" in result["then"], result
