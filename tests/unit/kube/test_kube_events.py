"""The recorders as client-go's make them: events.k8s.io/v1 series, core/v1 correlation (fake clock, API)."""

from __future__ import annotations

import asyncio
import copy
import datetime
import uuid
from typing import Any

import pytest

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.client import ApiError, ApiUnavailable
from secondary_scheduler.kube.events import sender
from secondary_scheduler.kube.events.core import CoreEventRecorder
from secondary_scheduler.kube.events.objects import ObjectReference, event_name
from secondary_scheduler.kube.events.recorder import FINISH_SERIES, EventRecorder

START = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC).timestamp()


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeEventsApi:
    """Creates and strategic-merge patches of Events, kept by path; failures on demand."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, Any]] = []
        self.failures: list[Exception] = []

    def _fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    async def create(self, path: str, body: dict[str, Any], params: Any = None) -> dict[str, Any]:
        self.calls.append(("create", path, copy.deepcopy(body)))
        self._fail()
        key = f"{path}/{body['metadata']['name']}"
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", "exists")
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(len(self.calls))
        self.objects[key] = stored
        return copy.deepcopy(stored)

    async def patch(
        self, path: str, body: Any, *, patch_type: str = "merge", params: Any = None
    ) -> dict[str, Any]:
        self.calls.append(("patch", path, copy.deepcopy(body)))
        assert patch_type == "strategic"
        self._fail()
        if path not in self.objects:
            raise ApiError(404, "NotFound", "gone")
        stored = self.objects[path]
        for field, value in body.items():
            stored[field] = copy.deepcopy(value)
        stored["metadata"]["resourceVersion"] = str(len(self.calls))
        return copy.deepcopy(stored)

    def events(self) -> list[dict[str, Any]]:
        return list(self.objects.values())


def pod(name: str = "web-0", resource_version: str = "7") -> PodInfo:
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": resource_version}
    return PodInfo.from_pod({"metadata": metadata, "spec": {"containers": []}})


def recorder(api: FakeEventsApi, clock: Clock) -> EventRecorder:
    return EventRecorder(api, clock=clock, retry_sleep=0.0)  # type: ignore[arg-type]


async def occur(rec: EventRecorder, body: dict[str, Any]) -> None:
    """What the sending task does with one dequeued event."""
    write = rec.observe(body)
    if write is not None:
        await rec.attempt(write)


def failed(rec: EventRecorder, target: PodInfo, note: str = "0/3 nodes are available") -> dict[str, Any]:
    return rec.event(target, "secondary-scheduler", "Warning", "FailedScheduling", "Scheduling", note)


def scheduled(rec: EventRecorder, target: PodInfo, reporter: str = "s", note: str = "assigned") -> None:
    rec.record(target, reporter, "Normal", "Scheduled", "Binding", note)


async def test_first_event_is_created_with_kube_scheduler_fields() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    await occur(rec, failed(rec, pod()))
    [(verb, path, body)] = api.calls
    assert (verb, path) == ("create", "/apis/events.k8s.io/v1/namespaces/ns/events")
    assert body["metadata"]["name"] == f"web-0.{int(START * 1e9):x}"
    assert body["eventTime"] == "2025-01-02T03:04:05.000000Z"
    assert body["reportingController"] == "secondary-scheduler"
    assert body["reportingInstance"] == f"secondary-scheduler-{rec.hostname}"
    assert (body["type"], body["reason"], body["action"]) == ("Warning", "FailedScheduling", "Scheduling")
    assert body["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "web-0",
        "uid": "uid-web-0",
        "resourceVersion": "7",
    }
    assert "series" not in body


async def test_second_isomorphic_event_patches_a_series_of_two_later_ones_only_count() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    await occur(rec, failed(rec, pod()))
    clock.advance(10)
    await occur(rec, failed(rec, pod()))
    assert [call[0] for call in api.calls] == ["create", "patch"]
    first_name = api.calls[0][2]["metadata"]["name"]
    assert api.calls[1][1].endswith(f"/events/{first_name}")
    assert api.calls[1][2] == {"series": {"count": 2, "lastObservedTime": "2025-01-02T03:04:15.000000Z"}}
    for _ in range(3):
        clock.advance(10)
        await occur(rec, failed(rec, pod()))
    assert len(api.calls) == 2, "occurrences after the second are only counted"
    [cached] = rec.cache.values()
    assert cached["series"] == {"count": 5, "lastObservedTime": "2025-01-02T03:04:45.000000Z"}
    [stored] = api.events()
    assert stored["series"]["count"] == 2


async def test_the_note_is_not_part_of_the_key_the_first_note_stays() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    await occur(rec, failed(rec, pod(), note="first"))
    await occur(rec, failed(rec, pod(), note="second"))
    [stored] = api.events()
    assert stored["note"] == "first"
    assert stored["series"]["count"] == 2


async def test_a_different_object_version_reason_or_type_starts_another_event() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    bodies = [
        failed(rec, pod()),
        failed(rec, pod(resource_version="8")),
        failed(rec, pod(name="web-1")),
        rec.event(pod(), "secondary-scheduler", "Normal", "Scheduled", "Binding", "ok"),
        rec.event(pod(), "other-scheduler", "Warning", "FailedScheduling", "Scheduling", "x"),
    ]
    for body in bodies:
        clock.advance(0.001)
        await occur(rec, body)
    assert [call[0] for call in api.calls] == ["create"] * 5
    assert len(rec.cache) == 5


async def test_related_object_is_part_of_the_key() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    one, two = failed(rec, pod()), failed(rec, pod())
    two["related"] = {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "preemptor"}
    await occur(rec, one)
    await occur(rec, two)
    assert [call[0] for call in api.calls] == ["create", "create"]


async def test_finish_series_writes_the_final_count_and_forgets_it() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    for _ in range(4):
        await occur(rec, failed(rec, pod()))
        clock.advance(60)
    # Last observed 1 minute ago: the series stays open.
    await rec.finish_series()
    assert len(api.calls) == 2 and len(rec.cache) == 1
    clock.advance(FINISH_SERIES)
    await rec.finish_series()
    assert api.calls[-1][0] == "patch"
    assert api.calls[-1][2]["series"]["count"] == 4
    assert api.calls[-1][2]["series"]["lastObservedTime"] == "2025-01-02T03:07:05.000000Z"
    assert rec.cache == {}
    [stored] = api.events()
    assert stored["series"]["count"] == 4
    # The next occurrence starts a new Event.
    await occur(rec, failed(rec, pod()))
    assert api.calls[-1][0] == "create"
    assert len(api.events()) == 2


async def test_a_single_event_is_forgotten_after_the_finish_time_without_a_write() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    await occur(rec, failed(rec, pod()))
    clock.advance(FINISH_SERIES - 1)
    await rec.finish_series()
    assert len(rec.cache) == 1
    clock.advance(2)
    await rec.finish_series()
    assert rec.cache == {}
    assert len(api.calls) == 1
    await occur(rec, failed(rec, pod()))
    assert [call[0] for call in api.calls] == ["create", "create"]


async def test_refresh_writes_live_series_and_caches_the_answer() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    await occur(rec, failed(rec, pod(name="single")))
    for _ in range(3):
        await occur(rec, failed(rec, pod()))
    await rec.refresh_series()
    assert [call[0] for call in api.calls] == ["create", "create", "patch", "patch"]
    assert api.calls[-1][2]["series"]["count"] == 3
    cached = next(event for event in rec.cache.values() if event.get("series"))
    assert cached["metadata"]["resourceVersion"] == "4", "the server's answer replaces the cached event"
    await occur(rec, failed(rec, pod()))
    assert cached["series"]["count"] == 4


async def test_a_series_whose_event_is_gone_is_created_again_with_its_series() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    await occur(rec, failed(rec, pod()))
    api.objects.clear()
    await occur(rec, failed(rec, pod()))
    assert [call[0] for call in api.calls] == ["create", "patch", "create"]
    [stored] = api.events()
    assert stored["series"]["count"] == 2
    assert stored["metadata"]["name"] == api.calls[0][2]["metadata"]["name"]


async def test_write_retries_only_what_got_no_answer_or_a_series_conflict() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    single = failed(rec, pod())
    api.failures = [ApiUnavailable("down")]
    assert await rec.write(copy.deepcopy(single)) == (None, True)
    api.failures = [ApiError(422, "Invalid", "note too long")]
    assert await rec.write(copy.deepcopy(single)) == (None, False)
    written, retry = await rec.write(copy.deepcopy(single))
    assert written is not None and not retry
    assert await rec.write(copy.deepcopy(single)) == (None, False), "AlreadyExists: not a series, dropped"
    series = copy.deepcopy(single)
    series["series"] = {"count": 2, "lastObservedTime": "2025-01-02T03:04:05.000000Z"}
    api.failures = [ApiError(409, "AlreadyExists", "exists")]
    assert await rec.write(series) == (None, True)


async def test_a_write_without_answer_is_tried_again_in_the_background() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    api.failures = [ApiUnavailable("down"), OSError("reset")]
    await occur(rec, failed(rec, pod()))
    await asyncio.gather(*rec._retries)
    assert [call[0] for call in api.calls] == ["create"] * 3
    assert len(api.events()) == 1


async def test_retries_stop_after_twelve_tries() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    api.failures = [ApiUnavailable("down")] * 20
    await occur(rec, failed(rec, pod()))
    await asyncio.gather(*rec._retries)
    assert len(api.calls) == 12


async def test_record_queue_and_stop_send_the_aggregate() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    rec.start()
    target = pod()
    for _ in range(5):
        rec.record(target, "secondary-scheduler", "Warning", "FailedScheduling", "Scheduling", "0/1 nodes")
    clock.advance(1)  # names are the regarding name and the time: one nanosecond apart is enough
    scheduled(rec, target, "secondary-scheduler", "to node-a")
    rec.record(target, "secondary-scheduler", "Bogus", "Reason", "Action", "dropped: not Normal or Warning")
    await rec.stop()
    assert [call[0] for call in api.calls] == ["create", "patch", "create"]
    notes = sorted(event["note"] for event in api.events())
    assert notes == ["0/1 nodes", "to node-a"]


def test_the_note_is_not_truncated_by_the_recorder() -> None:
    rec = EventRecorder(FakeEventsApi())  # type: ignore[arg-type]
    assert rec.event(pod(), "s", "Normal", "Preempted", "Preempting", "z" * 2000)["note"] == "z" * 2000


class GatedEventsApi(FakeEventsApi):
    """Creates wait at a gate (an API server that is slow to answer), counting those in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def create(self, path: str, body: dict[str, Any], params: Any = None) -> dict[str, Any]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
            return await super().create(path, body, params)
        finally:
            self.in_flight -= 1


async def settle() -> None:
    """Let every ready task run until it waits (the senders take what they can)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def test_senders_write_events_concurrently_but_never_more_than_their_number() -> None:
    api = GatedEventsApi()
    rec = EventRecorder(api, senders=4, queue_length=100)  # type: ignore[arg-type]
    rec.start()
    try:
        for i in range(10):
            scheduled(rec, pod(f"web-{i}"))
        await settle()
        assert api.in_flight == 4, "four writes wait for the server at once, not one"
        api.gate.set()
        await rec.stop()
    finally:
        api.gate.set()
    assert api.most_in_flight == 4
    assert sorted(event["regarding"]["name"] for event in api.events()) == [f"web-{i}" for i in range(10)]
    assert rec.dropped == {}


async def test_a_full_queue_drops_the_new_event_counts_it_and_logs_once_in_a_while(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = GatedEventsApi()
    told: list[tuple[str, int]] = []
    rec = EventRecorder(api, senders=2, queue_length=3, on_dropped=lambda *drop: told.append(drop))  # type: ignore[arg-type]
    rec.start()
    try:
        for i in range(2):
            scheduled(rec, pod(f"sending-{i}"))
        await settle()  # two being written, the queue empty again
        with caplog.at_level("WARNING", logger=sender.__name__):
            for i in range(8):
                scheduled(rec, pod(f"queued-{i}"))
        api.gate.set()
        await rec.stop()
    finally:
        api.gate.set()
    written = sorted(event["regarding"]["name"] for event in api.events())
    assert written == ["queued-0", "queued-1", "queued-2", "sending-0", "sending-1"], "the newest are dropped"
    assert rec.dropped == {"queue_full": 5}
    assert told == [("queue_full", 1)] * 5
    [line] = [r.getMessage() for r in caplog.records if "event queue full" in r.getMessage()]
    assert "dropped Scheduled on ns/queued-3" in line and "1 dropped for a full queue so far" in line


async def test_stop_writes_what_is_queued_then_counts_and_logs_what_it_could_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = GatedEventsApi()
    rec = EventRecorder(api, senders=2, queue_length=100)  # type: ignore[arg-type]
    rec.start()
    for i in range(5):
        scheduled(rec, pod(f"web-{i}"))
    await settle()
    with caplog.at_level("WARNING", logger=sender.__name__):
        await rec.stop(drain_seconds=0.05)  # the server never answers
    assert api.events() == []
    assert rec.dropped == {"shutdown": 5}
    assert any("5 events not written (5 still queued" in r.getMessage() for r in caplog.records)

    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    rec.start()
    for i in range(50):
        scheduled(rec, pod(f"web-{i}"))
    await rec.stop()  # a server that answers: every queued event is written before the senders stop
    assert len(api.events()) == 50 and rec.dropped == {}


async def test_refused_events_and_events_out_of_retries_are_counted() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = recorder(api, clock)
    api.failures = [ApiError(422, "Invalid", "bad note")]
    await occur(rec, failed(rec, pod("refused")))
    api.failures = [ApiUnavailable("down")] * 12
    await occur(rec, failed(rec, pod("unanswered")))
    await asyncio.gather(*rec._retries)
    assert rec.dropped == {"rejected": 1, "retry_limit": 1}


def test_event_names_follow_client_go() -> None:
    assert event_name("web-0", 0x17F) == "web-0.17f"
    invalid = event_name("Not_A_Name", 1)
    assert str(uuid.UUID(invalid)) == invalid
    assert str(uuid.UUID(event_name("a" * 250, 1 << 60))) != ""


async def test_the_operators_core_v1_events_are_posted_at_once_and_not_repeated() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = CoreEventRecorder(api, repeat_after=60, clock=clock)  # type: ignore[arg-type]
    regarding = ObjectReference("operator.openshift.io/v1", "SecondaryScheduler", "ns", "cluster", "u1")
    await rec.post(regarding, "secondary-scheduler-operator", "Warning", "Invalid", "Reconcile", "bad spec")
    await rec.post(regarding, "secondary-scheduler-operator", "Warning", "Invalid", "Reconcile", "bad spec")
    [(verb, path, body)] = api.calls
    assert (verb, path) == ("create", "/api/v1/namespaces/ns/events")
    assert body["involvedObject"]["kind"] == "SecondaryScheduler"
    assert (body["count"], body["message"], body["source"]) == (
        1,
        "bad spec",
        {"component": "secondary-scheduler-operator"},
    )
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2025-01-02T03:04:05Z"
    rec.forget("u1")
    clock.advance(30)
    await rec.post(regarding, "secondary-scheduler-operator", "Warning", "Invalid", "Reconcile", "bad spec")
    assert api.calls[1] == (
        "patch",
        f"/api/v1/namespaces/ns/events/{body['metadata']['name']}",
        {"count": 2, "lastTimestamp": "2025-01-02T03:04:35Z", "message": "bad spec"},
    )
    [stored] = api.events()
    assert (stored["count"], stored["firstTimestamp"]) == (2, "2025-01-02T03:04:05Z")


def core_recorder(api: FakeEventsApi, clock: Clock) -> CoreEventRecorder:
    return CoreEventRecorder(api, clock=clock)  # type: ignore[arg-type]


CR = ObjectReference("operator.openshift.io/v1", "SecondaryScheduler", "ns", "cluster", "u1")


async def post(rec: CoreEventRecorder, clock: Clock, note: str, reason: str = "Invalid") -> None:
    clock.advance(1)
    await rec.post(CR, "secondary-scheduler-operator", "Warning", reason, "Reconcile", note)


async def test_core_v1_identical_events_count_on_one_event() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = core_recorder(api, clock)
    for _ in range(4):
        await post(rec, clock, "same")
    assert [call[0] for call in api.calls] == ["create", "patch", "patch", "patch"]
    [stored] = api.events()
    assert stored["count"] == 4
    assert stored["firstTimestamp"] == "2025-01-02T03:04:06Z"
    assert stored["lastTimestamp"] == "2025-01-02T03:04:09Z"
    await post(rec, clock, "other")
    assert len(api.events()) == 2
    # The counted Event was deleted: the next repeat creates it again, with the count so far.
    api.objects.clear()
    await post(rec, clock, "same")
    assert [call[0] for call in api.calls][-2:] == ["patch", "create"]
    [again] = api.events()
    assert again["count"] == 5


async def test_core_v1_ten_messages_for_one_reason_are_combined() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = core_recorder(api, clock)
    for i in range(9):
        await post(rec, clock, f"message {i}")
    assert len(api.events()) == 9
    await post(rec, clock, "message 9")
    await post(rec, clock, "message 10")
    combined = [event for event in api.events() if event["message"].startswith("(combined")]
    assert len(combined) == 1
    assert api.calls[-2][0] == "create"
    assert api.calls[-2][2]["message"] == "(combined from similar events): message 9"
    assert combined[0]["count"] == 2, "the next similar event counts on the combined one"
    assert combined[0]["message"] == "(combined from similar events): message 10"
    # Ten minutes of quiet: messages are told apart again.
    clock.advance(601)
    await post(rec, clock, "message 11")
    assert api.calls[-1][2]["message"] == "message 11"


async def test_core_v1_spam_filter_allows_25_then_one_per_five_minutes() -> None:
    api, clock = FakeEventsApi(), Clock()
    rec = core_recorder(api, clock)
    for i in range(30):
        await post(rec, clock, f"m{i % 3}", reason=f"R{i}")
    assert len(api.calls) == 25 + 0, "1 token back every 300 s: none within 30 s"
    clock.advance(300)
    await post(rec, clock, "late", reason="Late")
    await post(rec, clock, "later", reason="Later")
    assert len(api.calls) == 26


@pytest.mark.parametrize("rv", ["", "5"])
def test_reference_resource_version_only_when_known(rv: str) -> None:
    rec = EventRecorder(FakeEventsApi())  # type: ignore[arg-type]
    regarding = rec.event(pod(resource_version=rv), "s", "Normal", "Scheduled", "Binding", "n")["regarding"]
    assert regarding.get("resourceVersion", "") == rv
