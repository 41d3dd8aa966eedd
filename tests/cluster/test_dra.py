"""DynamicResources on the real control plane: ours beside upstream's kube-scheduler 1.34.

Each case builds the same world twice (``test_fidelity.worlds``: nodes, namespace and pods
per scheduler) and labels each world's KWOK nodes for the local cluster's fake DRA driver
(``secsched_devtools.cluster.dradriver``), which publishes their ResourceSlices of GPUs
(attributes model, index, ``numa`` for matchAttribute; capacity memory) and its DeviceClass.
It then compares where the pods landed (node roles n0, n1...) and what was
written to each claim's ``status.allocation`` (devices, pools as node roles, node selector),
or the PodScheduled message when nothing fits. A template case relies on the controller
manager's resourceclaim controller to create each pod's claim.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster import dradriver
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, SchedulerRun, start_scheduler
from tests.cluster.test_fidelity import NodeSpec, World, both, same, worlds

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]
DRIVER = dradriver.DRIVER
RESOURCE = "/apis/resource.k8s.io/v1"
PROFILE = {"ours": "dra-ours", "upstream": "dra-upstream"}


@pytest.fixture(scope="module")
def schedulers(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Both schedulers with kube-scheduler's default profile (DynamicResources included)."""
    directory = tmp_path_factory.mktemp("dra-schedulers")
    runs: list[SchedulerRun] = []
    try:
        for who, kind in (("ours", OURS), ("upstream", UPSTREAM)):
            config = (
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                "leaderElection:\n  leaderElect: false\n"
                f"profiles:\n  - schedulerName: {PROFILE[who]}\n"
            )
            runs.append(start_scheduler(kind, config, cluster.kubeconfig, directory, name=f"dra-{who}"))
        yield
    finally:
        for run in runs:
            run.stop()


def gpus(count: int, model: str = "A100") -> dict[str, str]:
    """The labels that make the local cluster's fake DRA driver publish ``count`` GPUs on a node."""
    return {dradriver.COUNT_LABEL: str(count), dradriver.MODEL_LABEL: model}


@asynccontextmanager
async def devices(
    api: ApiClient, pair: dict[str, World], per_role: dict[str, dict[str, str]]
) -> AsyncIterator[str]:
    """Each world's nodes labelled ``per_role`` for the fake DRA driver, once it has published their
    slices; yields its DeviceClass. The slices go with the nodes (owned by them)."""
    for world in pair.values():
        for role, labels in per_role.items():
            node = world.nodes[int(role[1:])]
            await api.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": labels}})

    async def published() -> bool:
        listed = (await api.list_all(dradriver.SLICES))["items"]
        counts = {s["spec"]["nodeName"]: len(s["spec"]["devices"]) for s in listed}
        return all(
            counts.get(world.nodes[int(role[1:])]) == int(labels[dradriver.COUNT_LABEL])
            for world in pair.values()
            for role, labels in per_role.items()
            if int(labels[dradriver.COUNT_LABEL])
        )

    await wait_for(published, "the fake DRA driver's slices of the worlds' nodes", 30, 0.1)
    yield dradriver.DEVICE_CLASS


def claim_spec(
    class_name: str, count: int = 1, selector: str | None = None, match: str | None = None
) -> JSON:
    exactly: JSON = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    devices_: JSON = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if match:
        devices_["constraints"] = [{"matchAttribute": match}]
    return {"devices": devices_}


async def create_claim(world: World, name: str, spec: JSON) -> None:
    await world.api.create(
        f"{RESOURCE}/namespaces/{world.namespace}/resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


async def claimed_pod(world: World, name: str, **claim: str) -> None:
    """A pod of the world's DRA profile with one claim (by ``resourceClaimName`` or template)."""
    await world.pod(name, scheduler=PROFILE, resourceClaims=[{"name": "gpu", **claim}], cpu="100m")


async def allocation(world: World, claim: str) -> JSON:
    """The claim's allocation with node names replaced by roles, once written; and who it is reserved for."""

    async def written() -> JSON | None:
        got = await world.api.get(f"{RESOURCE}/namespaces/{world.namespace}/resourceclaims/{claim}")
        status = got.get("status") or {}
        if not status.get("allocation") or not status.get("reservedFor"):
            return None
        return status

    status = await wait_for(written, f"{world.who}'s claim {claim} to be allocated", 60, 0.1)
    results = [
        (r["request"], r["driver"], world.role(r["pool"]), r["device"])
        for r in status["allocation"]["devices"]["results"]
    ]
    terms = (status["allocation"].get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    selector = [
        [
            (f["key"], f["operator"], [world.role(v) for v in f["values"]])
            for f in term.get("matchFields") or ()
        ]
        for term in terms
    ]
    return {
        "results": results,
        "nodeSelector": selector,
        "reservedFor": [r["name"] for r in status["reservedFor"]],
    }


async def test_single_gpu_goes_to_the_node_with_the_model(api: ApiClient, schedulers: None) -> None:
    async with (
        worlds(api, [NodeSpec(), NodeSpec()]) as pair,
        devices(api, pair, {"n0": gpus(1, "T4"), "n1": gpus(2, "A100")}) as gpu_class,
    ):

        async def case(world: World) -> JSON:
            selector = f'device.attributes["{DRIVER}"].model == "A100"'
            await create_claim(world, "one", claim_spec(gpu_class, selector=selector))
            await claimed_pod(world, "p", resourceClaimName="one")
            return {"node": await world.node_of("p"), "claim": await allocation(world, "one")}

        result = same(await both("dra/single", pair, case))
        assert result["node"] == "n1"
        assert result["claim"]["results"] == [("gpu", DRIVER, "n1", "gpu-0")]


async def test_two_gpus_on_one_node_with_match_attribute(api: ApiClient, schedulers: None) -> None:
    # Two NUMA zones: n0's two GPUs sit in one each, n1's three as [0, 0, 1].
    per_role = {"n0": gpus(2), "n1": gpus(3)}
    async with worlds(api, [NodeSpec(), NodeSpec()]) as pair, devices(api, pair, per_role) as gpu_class:

        async def case(world: World) -> JSON:
            await create_claim(world, "pair", claim_spec(gpu_class, count=2, match=f"{DRIVER}/numa"))
            await claimed_pod(world, "p", resourceClaimName="pair")
            return {"node": await world.node_of("p"), "claim": await allocation(world, "pair")}

        result = same(await both("dra/matchAttribute", pair, case))
        assert result["node"] == "n1"
        assert [device for *_, device in result["claim"]["results"]] == ["gpu-0", "gpu-1"]


async def test_no_device_left(api: ApiClient, schedulers: None) -> None:
    async with (
        worlds(api, [NodeSpec(), NodeSpec()]) as pair,
        devices(api, pair, {"n0": gpus(1), "n1": gpus(0)}) as gpu_class,
    ):

        async def case(world: World) -> JSON:
            await create_claim(world, "first", claim_spec(gpu_class))
            await create_claim(world, "second", claim_spec(gpu_class))
            await claimed_pod(world, "a", resourceClaimName="first")
            placed = {"a": await world.node_of("a"), "claim": await allocation(world, "first")}
            await claimed_pod(world, "b", resourceClaimName="second")
            placed["b"] = await world.condition("b")
            return placed

        result = same(await both("dra/none-left", pair, case))
        assert result["a"] == "n0"
        assert "cannot allocate all claims" in result["b"]


async def test_a_claim_per_pod_from_a_template(api: ApiClient, schedulers: None) -> None:
    # n1 is the larger node: the scores, not a tie broken at random, decide where "a" goes.
    async with (
        worlds(api, [NodeSpec(), NodeSpec(cpu="8")]) as pair,
        devices(api, pair, {"n0": gpus(1), "n1": gpus(1)}) as gpu_class,
    ):

        async def case(world: World) -> JSON:
            await world.api.create(
                f"{RESOURCE}/namespaces/{world.namespace}/resourceclaimtemplates",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "gpu"},
                    "spec": {"spec": claim_spec(gpu_class)},
                },
            )
            outcome: JSON = {}
            for name in ("a", "b"):
                await claimed_pod(world, name, resourceClaimTemplateName="gpu")
                node = await world.node_of(name)
                pod = await world.api.get(world.pods(name))
                claim = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
                outcome[name] = {"node": node, "claim": (await allocation(world, claim))["results"]}
            return outcome

        result = same(await both("dra/template", pair, case))
        assert (result["a"]["node"], result["b"]["node"]) == ("n1", "n0")


async def test_a_claim_shared_by_two_pods(api: ApiClient, schedulers: None) -> None:
    """The second pod follows the allocation's node selector and is added to reservedFor."""
    async with (
        worlds(api, [NodeSpec(), NodeSpec(cpu="8")]) as pair,
        devices(api, pair, {"n0": gpus(1), "n1": gpus(0)}) as gpu_class,
    ):

        async def case(world: World) -> JSON:
            await create_claim(world, "shared", claim_spec(gpu_class))
            await claimed_pod(world, "a", resourceClaimName="shared")
            first = await world.node_of("a")
            await claimed_pod(world, "b", resourceClaimName="shared")
            second = await world.node_of("b")

            async def both_reserved() -> JSON | None:
                claim = await allocation(world, "shared")
                return claim if len(claim["reservedFor"]) == 2 else None

            claim = await wait_for(both_reserved, f"{world.who}'s shared claim reserved twice", 60, 0.1)
            return {"a": first, "b": second, "claim": claim}

        result = same(await both("dra/shared", pair, case))
        assert (result["a"], result["b"]) == ("n0", "n0")
        assert result["claim"]["reservedFor"] == ["a", "b"]


async def test_a_device_freed_by_a_deleted_pod_goes_to_the_waiting_one(
    api: ApiClient, schedulers: None
) -> None:
    """The controller deallocates the claim of a deleted pod; the claim event requeues the waiting pod."""
    async with (
        worlds(api, [NodeSpec(), NodeSpec()]) as pair,
        devices(api, pair, {"n0": gpus(1), "n1": gpus(0)}) as gpu_class,
    ):

        async def case(world: World) -> JSON:
            await create_claim(world, "first", claim_spec(gpu_class))
            await create_claim(world, "second", claim_spec(gpu_class))
            await claimed_pod(world, "a", resourceClaimName="first")
            await world.node_of("a")
            await claimed_pod(world, "b", resourceClaimName="second")
            await world.condition("b")
            await world.gone("a")
            return {"b": await world.node_of("b"), "claim": await allocation(world, "second")}

        result = same(await both("dra/freed", pair, case))
        assert result["b"] == "n0"
        assert result["claim"]["results"] == [("gpu", DRIVER, "n0", "gpu-0")]
