"""Scheduler extenders on the real control plane: ours and upstream's kube-scheduler, one extender.

An aiohttp server in this process plays the extenders (one URL prefix per scheduler, so
each scheduler's calls are told apart). Both schedulers get the same configuration:

- ``cache``: a nodeCacheCapable filter (it gets NodeNames): rejects the first node, or
  every node for a pod labelled ``reject: all``.
- ``full``: filter (gets full Nodes; rejects the second node as unresolvable), prioritize
  (prefers the fourth node, weight 5) and bind (creates the Binding itself).
- ``ignorable`` and ``strict``: nobody listens at their URL; each manages one extended
  resource (ignoredByScheduler, so no node needs it) and so is asked only about the pods
  that request it.

Each case makes the same pod in a namespace per scheduler and compares the node each pod
was bound to (or the PodScheduled message each scheduler wrote) and the calls the
extender received: verb, NodeNames or Nodes, and which nodes.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import (
    OURS,
    UPSTREAM,
    SchedulerRun,
    scheduler_config,
    start_scheduler,
)

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
SCHEDULERS = {"ours": "secondary-scheduler", "upstream": "upstream-scheduler"}
REJECTED = "node(s) rejected by the test extender"
UNRESOLVABLE = "node(s) can never run this pod, says the test extender"
IGNORABLE_RESOURCE = "example.com/via-ignorable"
STRICT_RESOURCE = "example.com/via-strict"

Call = tuple[str, str, str, tuple[str, ...]]
"""(extender, verb, "NodeNames" | "Nodes" | "bind", the nodes sent or the node to bind to)."""


@dataclass
class ExtenderServer:
    """The extender server: what it was asked, per scheduler and pod name, and its node picks."""

    api: ApiClient
    nodes: list[str]
    port: int = 0
    calls: dict[tuple[str, str], set[Call]] = field(default_factory=dict)

    @property
    def favourite(self) -> str:
        return self.nodes[3]

    async def handle(self, request: web.Request) -> web.Response:
        who, extender, verb = (request.match_info[key] for key in ("who", "extender", "verb"))
        body = orjson.loads(await request.read())
        if verb == "bind":
            return await self._bind(who, extender, body)
        pod = body["Pod"]
        if body.get("NodeNames") is not None:
            kind, names = "NodeNames", list(body["NodeNames"])
        else:
            kind = "Nodes"
            items = body["Nodes"]["items"] or []
            names = [item["metadata"]["name"] for item in items]
        calls = self.calls.setdefault((who, pod["metadata"]["name"]), set())
        calls.add((extender, verb, kind, tuple(sorted(names))))
        if verb == "prioritize":
            reply: Any = [{"Host": name, "Score": 10 if name == self.favourite else 1} for name in names]
        elif extender == "cache":
            everywhere = (pod["metadata"].get("labels") or {}).get("reject") == "all"
            failed = set(names) if everywhere else {self.nodes[0]} & set(names)
            reply = {
                "NodeNames": [name for name in names if name not in failed],
                "FailedNodes": dict.fromkeys(sorted(failed), REJECTED),
            }
        else:
            kept = [item for item in body["Nodes"]["items"] if item["metadata"]["name"] != self.nodes[1]]
            reply = {
                "Nodes": {"items": kept},
                "FailedAndUnresolvableNodes": {self.nodes[1]: UNRESOLVABLE} if self.nodes[1] in names else {},
            }
        return web.Response(body=orjson.dumps(reply), content_type="application/json")

    async def _bind(self, who: str, extender: str, body: JSON) -> web.Response:
        self.calls.setdefault((who, body["PodName"]), set()).add((extender, "bind", "bind", (body["Node"],)))
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": body["PodName"], "namespace": body["PodNamespace"], "uid": body["PodUID"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": body["Node"]},
        }
        path = f"/api/v1/namespaces/{body['PodNamespace']}/pods/{body['PodName']}/binding"
        try:
            await self.api.create(path, binding)
        except Exception as error:  # the scheduler reports it as the extender's error
            return web.Response(body=orjson.dumps({"Error": str(error)}), content_type="application/json")
        return web.Response(body=orjson.dumps({"Error": ""}), content_type="application/json")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
async def extender(cluster: LocalCluster) -> AsyncIterator[ExtenderServer]:
    async with cluster.api() as api:
        nodes = sorted(node["metadata"]["name"] for node in (await api.get("/api/v1/nodes"))["items"])
        assert len(nodes) >= 4, nodes
        server = ExtenderServer(api, nodes)
        app = web.Application()
        app.router.add_post("/{who}/{extender}/{verb}", server.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server.port = runner.addresses[0][1]
        try:
            yield server
        finally:
            await runner.cleanup()


def _config(who: str, port: int, down: int) -> str:
    base = f"http://127.0.0.1:{port}/{who}"
    return (
        scheduler_config(SCHEDULERS[who])
        + f"""\
extenders:
  - urlPrefix: http://127.0.0.1:{down}/ignorable
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 1
    ignorable: true
    managedResources: [{{name: {IGNORABLE_RESOURCE}, ignoredByScheduler: true}}]
  - urlPrefix: {base}/cache
    filterVerb: filter
    nodeCacheCapable: true
  - urlPrefix: {base}/full/
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: 5
    bindVerb: bind
    httpTimeout: 10s
  - urlPrefix: http://127.0.0.1:{down}/strict
    filterVerb: filter
    managedResources: [{{name: {STRICT_RESOURCE}, ignoredByScheduler: true}}]
"""
    )


@pytest.fixture(scope="module")
def schedulers(
    cluster: LocalCluster, extender: ExtenderServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, SchedulerRun]]:
    directory = tmp_path_factory.mktemp("extender-schedulers")
    down = _free_port()  # nothing listens there
    runs: dict[str, SchedulerRun] = {}
    try:
        for who, kind in (("ours", OURS), ("upstream", UPSTREAM)):
            runs[who] = start_scheduler(
                kind, _config(who, extender.port, down), cluster.kubeconfig, directory, name=who
            )
        yield runs
    finally:
        for run in runs.values():
            run.stop()


def _pod(
    name: str, scheduler: str, labels: dict[str, str] | None = None, resource: str | None = None
) -> JSON:
    requests = {"cpu": "100m", "memory": "64Mi"} | ({resource: "1"} if resource else {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    # Extended resources cannot be overcommitted: their limit must equal the request.
                    "resources": {"requests": requests, "limits": {resource: "1"} if resource else {}},
                }
            ],
        },
    }


async def _node(api: ApiClient, namespace: str, pod: str, timeout: float = 60) -> str:
    async def node() -> str | None:
        return (await api.get(f"/api/v1/namespaces/{namespace}/pods/{pod}"))["spec"].get("nodeName")

    return await wait_for(node, f"pod {namespace}/{pod} to be bound", timeout=timeout)


async def _not_scheduled(api: ApiClient, namespace: str, pod: str, reason: str, timeout: float = 60) -> str:
    """The pod's PodScheduled=False message with ``reason``, once written; the pod must stay unbound."""

    async def message() -> str | None:
        current = await api.get(f"/api/v1/namespaces/{namespace}/pods/{pod}")
        assert not current["spec"].get("nodeName"), f"{pod} was bound to {current['spec']['nodeName']}"
        for condition in current["status"].get("conditions") or ():
            if condition["type"] == "PodScheduled" and condition.get("reason") == reason:
                return str(condition.get("message") or "") or None
        return None

    return await wait_for(message, f"{namespace}/{pod} to be {reason}", timeout=timeout)


async def _both(api: ApiClient, name: str, **pod: Any) -> dict[str, str]:
    """Make the pod for each scheduler, each in its own namespace: who -> namespace."""
    namespaces: dict[str, str] = {}
    for who, scheduler in SCHEDULERS.items():
        namespace = f"ext-{who}-{uuid.uuid4().hex[:8]}"
        await api.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        namespaces[who] = namespace
        await api.create(f"/api/v1/namespaces/{namespace}/pods", _pod(name, scheduler, **pod))
    return namespaces


@pytest.fixture
async def cleanup(api: ApiClient) -> AsyncIterator[list[str]]:
    made: list[str] = []
    yield made
    for namespace in made:
        await api.delete(f"/api/v1/namespaces/{namespace}")


async def test_filter_prioritize_and_bind_alike(
    api: ApiClient, schedulers: dict[str, SchedulerRun], extender: ExtenderServer, cleanup: list[str]
) -> None:
    namespaces = await _both(api, "placed")
    cleanup += namespaces.values()
    nodes = {who: await _node(api, namespace, "placed") for who, namespace in namespaces.items()}
    assert nodes == {"ours": extender.favourite, "upstream": extender.favourite}
    everything = tuple(extender.nodes)
    expected = {
        ("cache", "filter", "NodeNames", everything),
        ("full", "filter", "Nodes", everything[1:]),
        ("full", "prioritize", "Nodes", everything[2:]),
        ("full", "bind", "bind", (extender.favourite,)),
    }
    assert extender.calls[("upstream", "placed")] == expected
    assert extender.calls[("ours", "placed")] == expected


async def test_a_pod_the_extender_rejects_everywhere(
    api: ApiClient, schedulers: dict[str, SchedulerRun], extender: ExtenderServer, cleanup: list[str]
) -> None:
    namespaces = await _both(api, "nowhere", labels={"reject": "all"})
    cleanup += namespaces.values()
    messages = {
        who: await _not_scheduled(api, namespace, "nowhere", "Unschedulable")
        for who, namespace in namespaces.items()
    }
    count = len(extender.nodes)
    assert messages["upstream"].startswith(f"0/{count} nodes are available: {count} {REJECTED}.")
    assert messages["ours"] == messages["upstream"]
    assert (
        extender.calls[("ours", "nowhere")]
        == extender.calls[("upstream", "nowhere")]
        == {("cache", "filter", "NodeNames", tuple(extender.nodes))}
    )


async def test_an_ignorable_extender_that_is_down_is_skipped(
    api: ApiClient, schedulers: dict[str, SchedulerRun], extender: ExtenderServer, cleanup: list[str]
) -> None:
    namespaces = await _both(api, "lenient", resource=IGNORABLE_RESOURCE)
    cleanup += namespaces.values()
    nodes = {who: await _node(api, namespace, "lenient") for who, namespace in namespaces.items()}
    assert nodes == {"ours": extender.favourite, "upstream": extender.favourite}
    assert extender.calls[("ours", "lenient")] == extender.calls[("upstream", "lenient")]


async def test_a_strict_extender_that_is_down_fails_the_cycle(
    api: ApiClient, schedulers: dict[str, SchedulerRun], extender: ExtenderServer, cleanup: list[str]
) -> None:
    namespaces = await _both(api, "strict", resource=STRICT_RESOURCE)
    cleanup += namespaces.values()
    messages = {
        who: await _not_scheduled(api, namespace, "strict", "SchedulerError")
        for who, namespace in namespaces.items()
    }
    assert "connection refused" in messages["upstream"] and "/strict/filter" in messages["upstream"]
    assert messages["ours"] == messages["upstream"]
    assert extender.calls[("ours", "strict")] == extender.calls[("upstream", "strict")]
