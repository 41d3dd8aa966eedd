"""Ours' Scheduled Events keep up with its bindings under a backlog, and a SIGTERM writes what is queued.

A burst of pods is created while no scheduler runs, so ours starts with a backlog and binds
as fast as it can. A watch on the namespace's pods and one on its Events (both from this
process, so their clocks and delays are alike) note when each pod is seen bound and when its
Scheduled Event is seen: the lag between the two is what an admin's ``kubectl describe``
waits, and the pods a ``kill -9`` would leave without an Event are those inside it. The lag is
printed (``events-keep-up: ...``) for the record; only correctness is asserted: every bound
pod has exactly one Scheduled Event, and none was dropped.

The scheduler runs a profile of its own (``PROFILE``), so it sees this module's pods only: with
the session's usual ``secondary-scheduler`` it also tried the pending pods of earlier tests whose
namespaces were being deleted, and the API server refuses an Event in a terminating namespace
(counted as dropped, as client-go drops it: a CI run failed ``dropped == 0`` on that).
"""

from __future__ import annotations

import asyncio
import datetime
import re
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiUnavailable
from secondary_scheduler.kube.wait import poll_until, wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from tests.cluster.schedulerproc import SECONDARY_CONFIG, create_pods, pod_manifest, running_scheduler

pytestmark = pytest.mark.cluster

PROFILE = "events-keep-up"
"""The profile (schedulerName) of this module's scheduler and pods: no other test's pod names it."""
CONFIG = SECONDARY_CONFIG.replace("schedulerName: secondary-scheduler", f"schedulerName: {PROFILE}")
BURST = 250
"""Pods of the backlog: 10m each, so the session's five nodes (110 pods each) take them all,
with room for a few of other tests' pods that are still going away."""


@pytest.fixture
async def namespace(api: ApiClient, namespace: str) -> AsyncIterator[str]:
    """The test's namespace, emptied afterwards: its pods hold half the nodes' pod slots, and a
    namespace's deletion (the fixture's) does not wait for them to go."""
    yield namespace
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await api.delete(pods, {"gracePeriodSeconds": 0})

    async def empty() -> bool:
        return not (await api.get(pods, {"limit": 1}))["items"]

    await wait_for(empty, f"the pods of {namespace} gone", timeout=60)


@dataclass
class Seen:
    """When this process's watches first saw each pod bound and each pod's Scheduled Event."""

    bound: dict[str, float] = field(default_factory=dict)
    scheduled: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Pod -> its Scheduled Events, by uid."""
    scheduled_at: dict[str, float] = field(default_factory=dict)
    """Wall-clock time each pod's Scheduled Event was first seen."""

    watches: list[asyncio.Task[None]] = field(default_factory=list)

    async def counts(self) -> tuple[int, int]:
        """(pods seen bound, pods with a Scheduled Event seen); raises what broke a watch."""
        for task in self.watches:
            if task.done():
                task.result()
                raise AssertionError("a watch ended")
        return len(self.bound), len(self.scheduled)

    def lags(self) -> list[float]:
        """Seconds from each Scheduled Event's eventTime (the scheduler's clock when the binding
        was answered: this machine's) to the Event seen here, in the order recorded."""
        recorded = {
            name: min(_epoch(event["eventTime"]) for event in events.values())
            for name, events in self.scheduled.items()
        }
        order = sorted(recorded, key=recorded.__getitem__)
        return [self.scheduled_at[name] - recorded[name] for name in order]


def _epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def _follow(api: ApiClient, path: str, version: str, on_object: Any) -> None:
    """Hand every object a watch from `version` delivers to `on_object` (until cancelled); a
    watch the server ends or drops goes on from the last version seen, as an informer's does."""
    while True:
        try:
            async for event in api.watch(path, {"resourceVersion": version, "allowWatchBookmarks": "true"}):
                version = event["object"]["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    on_object(event["object"])
        except ApiUnavailable:
            continue


@asynccontextmanager
async def watching(api: ApiClient, namespace: str) -> AsyncIterator[Seen]:
    """Watch the namespace's pods and Events from now on, noting bindings and Scheduled Events."""
    seen = Seen()

    def pod(obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if obj["spec"].get("nodeName") and name not in seen.bound:
            seen.bound[name] = time.monotonic()

    def event(obj: dict[str, Any]) -> None:
        if obj.get("reason") != "Scheduled":
            return
        name = obj["regarding"]["name"]
        seen.scheduled_at.setdefault(name, time.time())
        seen.scheduled.setdefault(name, {})[obj["metadata"]["uid"]] = obj

    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    events_path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    pods_version = (await api.get(pods_path, {"limit": 1}))["metadata"]["resourceVersion"]
    events_version = (await api.get(events_path, {"limit": 1}))["metadata"]["resourceVersion"]
    seen.watches = [
        asyncio.create_task(_follow(api, pods_path, pods_version, pod)),
        asyncio.create_task(_follow(api, events_path, events_version, event)),
    ]
    try:
        yield seen
    finally:
        for task in seen.watches:
            task.cancel()
        await asyncio.gather(*seen.watches, return_exceptions=True)


def assert_one_scheduled_event_per_bound_pod(seen: Seen, namespace: str, pods: dict[str, str]) -> None:
    """`pods`: name -> node, as the API server has them bound."""
    missing = sorted(set(pods) - set(seen.scheduled))
    assert not missing, f"{len(missing)} bound pods without a Scheduled Event: {missing[:10]}"
    for name, node in pods.items():
        [event] = seen.scheduled[name].values()
        assert event["reportingController"] == PROFILE, event
        assert event["note"] == f"Successfully assigned {namespace}/{name} to {node}"


def report(case: str, **figures: object) -> None:
    print(f"events-keep-up[{case}]: " + ", ".join(f"{key}={value}" for key, value in figures.items()))


async def bound_pods(api: ApiClient, namespace: str) -> dict[str, str]:
    items = (await api.list_all(f"/api/v1/namespaces/{namespace}/pods"))["items"]
    return {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in items if pod["spec"].get("nodeName")}


async def test_every_pod_of_a_backlog_gets_its_scheduled_event_soon_after_its_binding(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    await create_pods(
        api, namespace, [pod_manifest(f"burst-{i}", PROFILE, cpu="10m", memory="16Mi") for i in range(BURST)]
    )
    async with watching(api, namespace) as seen:
        with running_scheduler(cluster.kubeconfig, tmp_path, CONFIG) as scheduler:
            await poll_until(
                lambda: seen.counts(),
                lambda counts: counts == (BURST, BURST),
                lambda counts: (
                    f"(bound, Scheduled Events) seen: {counts}, not {BURST} of each\n{scheduler.tail()}"
                ),
                timeout=120,
            )
            dropped = scheduler.metric("scheduler_events_dropped_total")
            assert scheduler.stop() == 0, scheduler.tail()
        pods = await bound_pods(api, namespace)
    assert len(pods) == BURST
    assert_one_scheduled_event_per_bound_pod(seen, namespace, pods)
    assert dropped == 0
    in_order = seen.lags()
    lags = sorted(in_order)
    span = max(seen.bound.values()) - min(seen.bound.values())
    tenth = len(in_order) // 10
    report(
        "burst",
        pods=BURST,
        binding_span_s=f"{span:.2f}",
        lag_p50_ms=f"{statistics.median(lags) * 1000:.0f}",
        lag_p99_ms=f"{lags[int(len(lags) * 0.99) - 1] * 1000:.0f}",
        lag_max_ms=f"{lags[-1] * 1000:.0f}",
        # Whether Events fall behind as the burst goes on: the median lag of each tenth of it.
        lag_p50_by_tenth_ms="/".join(
            f"{statistics.median(in_order[i : i + tenth]) * 1000:.0f}" for i in range(0, tenth * 10, tenth)
        ),
    )


async def test_sigterm_in_the_middle_of_a_burst_writes_every_bound_pods_event(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    await create_pods(
        api, namespace, [pod_manifest(f"term-{i}", PROFILE, cpu="10m", memory="16Mi") for i in range(BURST)]
    )
    async with watching(api, namespace) as seen:
        with running_scheduler(cluster.kubeconfig, tmp_path, CONFIG) as scheduler:

            async def a_third_bound() -> bool:
                return len(seen.bound) >= BURST // 3

            await wait_for(a_third_bound, f"{BURST // 3} pods bound", timeout=120, interval=0.05)
            assert scheduler.stop() == 0, scheduler.tail()  # SIGTERM mid-burst
        log = scheduler.log.read_text()
        pods = await bound_pods(api, namespace)

        async def every_event_seen() -> bool:
            return set(pods) <= set(seen.scheduled)

        # The scheduler has exited: what it wrote is in the API server; the watch just delivers it.
        await wait_for(every_event_seen, "the Scheduled Event of every bound pod", timeout=30)
    assert len(pods) >= BURST // 3
    assert_one_scheduled_event_per_bound_pod(seen, namespace, pods)
    assert "events not written" not in log, log
    queued = re.findall(r"stopping: writing (\d+) queued events", log)
    report("sigterm", bound_before_exit=len(pods), events_queued_at_stop=queued[0] if queued else 0)
