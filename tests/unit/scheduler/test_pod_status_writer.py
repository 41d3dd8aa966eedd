"""PodStatusWriter: one patch per pod however many failures came in between, a few at a time."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.unit.framework.kubeobjects import make_pod

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.client import ApiError
from secondary_scheduler.scheduler.podstatus import UNSCHEDULABLE, PodStatusWriter, status_patch


class GatedApi:
    """Records status patches; each waits until the test opens the gate."""

    def __init__(self, missing: frozenset[str] = frozenset()) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate = asyncio.Event()
        self.missing = missing

    async def patch(self, path: str, body: Any, *, patch_type: str = "merge", params: Any = None) -> Any:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
        finally:
            self.in_flight -= 1
        name = path.split("/")[-2]
        if name in self.missing:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        self.patches.append((name, body["status"]))
        return {}


def pod(name: str, **status: Any) -> PodInfo:
    obj = make_pod(name)
    obj["metadata"]["uid"] = f"uid-{name}"
    obj["status"] = status
    return PodInfo.from_pod(obj)


async def drained(writer: PodStatusWriter, api: GatedApi) -> None:
    api.gate.set()
    await writer.close(grace=5)


def condition_message(status: dict[str, Any]) -> str:
    [condition] = status["conditions"]
    assert condition["type"] == "PodScheduled" and condition["status"] == "False"
    return str(condition["message"])


async def test_the_condition_and_the_nomination_go_in_one_patch() -> None:
    api = GatedApi()
    writer = PodStatusWriter(api)  # type: ignore[arg-type]
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="0/3 nodes are available", nominated="node-a")
    await drained(writer, api)
    [(name, status)] = api.patches
    assert name == "p" and status["nominatedNodeName"] == "node-a"
    assert condition_message(status) == "0/3 nodes are available"


async def test_failures_of_a_pod_not_yet_written_are_merged_newest_first() -> None:
    api = GatedApi()
    writer = PodStatusWriter(api, lanes=1)  # type: ignore[arg-type]
    writer.update(pod("busy"), reason=UNSCHEDULABLE, message="first")  # takes the only lane
    await asyncio.sleep(0)
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="old", nominated="node-a")
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="new")  # keeps the nomination
    writer.update(pod("q"), nominated="")
    assert writer.backlog == 2
    await drained(writer, api)
    assert [name for name, _ in api.patches] == ["busy", "p", "q"]  # in the order they first came
    assert condition_message(api.patches[1][1]) == "new"
    assert api.patches[1][1]["nominatedNodeName"] == "node-a"
    assert api.patches[2][1] == {"nominatedNodeName": None}  # null clears it


async def test_an_update_while_the_pods_patch_is_on_the_way_is_sent_after_it() -> None:
    api = GatedApi()
    writer = PodStatusWriter(api)  # type: ignore[arg-type]
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="first")
    await asyncio.sleep(0)
    assert api.in_flight == 1
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="second")
    await asyncio.sleep(0)
    assert api.in_flight == 1  # never two patches of one pod at once
    await drained(writer, api)
    assert [condition_message(status) for _, status in api.patches] == ["first", "second"]


async def test_a_pod_being_bound_has_its_unsent_failure_dropped() -> None:
    api = GatedApi()
    writer = PodStatusWriter(api, lanes=1)  # type: ignore[arg-type]
    writer.update(pod("busy"), reason=UNSCHEDULABLE, message="x")
    await asyncio.sleep(0)
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="x", nominated="node-a")
    writer.update(pod("q"), reason=UNSCHEDULABLE, message="x")
    writer.forget("uid-p")
    writer.forget("uid-unknown")
    assert writer.backlog == 1
    await drained(writer, api)
    assert [name for name, _ in api.patches] == ["busy", "q"]


async def test_no_more_than_the_lanes_are_in_flight() -> None:
    api = GatedApi()
    writer = PodStatusWriter(api, lanes=3)  # type: ignore[arg-type]
    for index in range(20):
        writer.update(pod(f"p{index}"), reason=UNSCHEDULABLE, message="no room")
    await asyncio.sleep(0)
    assert api.in_flight == 3 and writer.backlog == 17
    await drained(writer, api)
    assert api.most_in_flight == 3
    assert sorted(name for name, _ in api.patches) == sorted(f"p{index}" for index in range(20))


async def test_a_gone_pod_does_not_stop_the_others() -> None:
    api = GatedApi(missing=frozenset({"gone"}))
    writer = PodStatusWriter(api, lanes=1)  # type: ignore[arg-type]
    writer.update(pod("gone"), reason=UNSCHEDULABLE, message="x")
    writer.update(pod("p"), reason=UNSCHEDULABLE, message="x")
    await drained(writer, api)
    assert [name for name, _ in api.patches] == ["p"]


def test_a_condition_the_pod_already_shows_is_not_written_again() -> None:
    shown = {"type": "PodScheduled", "status": "False", "reason": UNSCHEDULABLE, "message": "same"}
    already = pod("p", conditions=[shown], nominatedNodeName="node-a")
    assert status_patch(already, UNSCHEDULABLE, "same", None) == {}
    assert condition_message(status_patch(already, UNSCHEDULABLE, "other", None)) == "other"
    # A nomination is written whenever given: the pod's copy may predate our last patch.
    assert status_patch(already, UNSCHEDULABLE, "same", "") == {"nominatedNodeName": None}
    assert status_patch(already, None, "", "node-a") == {"nominatedNodeName": "node-a"}
