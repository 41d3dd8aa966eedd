"""The overreserve cache: reservations, the resync by pod-set fingerprint, foreign pods, config changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.unit.plugins.noderesourcetopology.nrtobjects import guaranteed, nrt, zone

from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.plugins.noderesourcetopology import fingerprint
from secondary_scheduler.plugins.noderesourcetopology.cache import CacheSettings, OverReserve, PodLister
from secondary_scheduler.plugins.noderesourcetopology.topology import NODE_RESOURCE_TOPOLOGIES

JSON = dict[str, Any]


def available(obj: Mapping[str, Any] | None) -> list[str]:
    assert obj is not None
    return [next(i["available"] for i in z["resources"] if i["name"] == "cpu") for z in obj["zones"]]


def published(cpu: str, pods: list[tuple[str, str]], policy: str = "single-numa-node") -> JSON:
    obj = nrt("n", [zone(0, cpu=cpu, memory="8Gi"), zone(1, cpu=cpu, memory="8Gi")], policy=policy)
    obj["attributes"].append({"name": fingerprint.ATTRIBUTE, "value": fingerprint.sign(pods)})
    return obj


def bound(p: JSON, node: str = "n", scheduler: str = "secondary-scheduler", phase: str = "Running") -> JSON:
    return {
        **p,
        "spec": {**p["spec"], "nodeName": node, "schedulerName": scheduler},
        "status": {"phase": phase},
    }


def make(**settings: str) -> tuple[OverReserve, Informer, PodLister]:
    informer = Informer(NODE_RESOURCE_TOPOLOGIES)
    informer.replace([published("4", [])])
    pods = PodLister()
    cache = OverReserve(informer, pods, CacheSettings(**settings), {"secondary-scheduler"})
    cache.start()
    return cache, informer, pods


def test_reserved_pods_are_taken_from_every_zone_until_unreserved() -> None:
    cache, _, _ = make()
    pod = guaranteed("p", "3")
    cache.reserve("n", pod)
    obj, info = cache.get("n", pod)
    assert info.fresh and available(obj) == ["1", "1"]
    cache.reserve("n", guaranteed("q", "2"))
    assert available(cache.get("n", pod)[0]) == ["0", "0"]  # less than asked: zero, as upstream
    cache.unreserve("n", pod)
    assert available(cache.get("n", pod)[0]) == ["2", "2"]


def test_resync_trusts_the_new_object_only_when_its_fingerprint_matches() -> None:
    cache, informer, pods = make()
    first = guaranteed("p", "3")
    cache.reserve("n", first)
    cache.node_maybe_over_reserved("n", first)
    pods.replace([bound(first)])
    informer.replace([published("1", [])])  # the exporter has not seen the pod yet
    assert cache.resync() == []
    assert available(cache.get("n", first)[0]) == ["1", "1"]  # still the old object minus the reservation
    informer.replace([published("1", [("ns", "p")])])
    assert cache.resync() == ["n"]
    obj, info = cache.get("n", first)
    assert available(obj) == ["1", "1"] and info.generation == 1 and not cache.assumed.get("n")


def test_the_shared_informer_mode_counts_only_running_pods() -> None:
    cache, informer, pods = make(informer_mode="Shared")
    first = guaranteed("p", "3")
    cache.node_maybe_over_reserved("n", first)
    pods.replace([bound(first, phase="Pending")])
    informer.replace([published("1", [])])
    assert cache.resync() == []  # no running pod on the node: nothing to compare
    pods.replace([bound(first)])
    informer.replace([published("1", [("ns", "p")])])
    assert cache.resync() == ["n"]


def test_a_foreign_pod_makes_the_node_untrusted_until_resynced() -> None:
    cache, informer, pods = make()
    stranger = bound(guaranteed("s", "1"), scheduler="default-scheduler")
    pods.event("ADDED", stranger)
    assert cache.get("n", stranger) == (None, cache.get("n", stranger)[1])
    assert not cache.get("n", stranger)[1].fresh
    informer.replace([published("3", [("ns", "s")])])
    assert cache.resync() == ["n"]
    assert cache.get("n", stranger)[1].fresh


def test_foreign_pod_detection_modes() -> None:
    cache, _, pods = make(foreign_pods_detect="None")
    pods.event("ADDED", bound(guaranteed("s", "1"), scheduler="default-scheduler"))
    assert cache.get("n", {})[1].fresh
    cache, _, pods = make(foreign_pods_detect="OnlyExclusiveResources")
    shared = bound(guaranteed("s", "500m"), scheduler="default-scheduler")
    shared["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    pods.event("ADDED", shared)
    assert cache.get("n", {})[1].fresh  # burstable, no exclusive resource
    pods.event("ADDED", bound(guaranteed("t", "1"), scheduler="default-scheduler"))
    assert not cache.get("n", {})[1].fresh


def test_a_changed_topology_manager_configuration_is_taken_at_the_next_resync() -> None:
    cache, informer, _ = make()
    informer.event("MODIFIED", published("4", [], policy="restricted"))
    assert cache.resync() == ["n"]
    cache, informer, _ = make(resync_scope="OnlyResources")
    informer.event("MODIFIED", published("4", [], policy="restricted"))
    assert cache.resync() == []


def test_an_object_created_after_the_start_is_not_seen_as_upstream() -> None:
    informer = Informer(NODE_RESOURCE_TOPOLOGIES)
    informer.replace([])
    cache = OverReserve(informer, PodLister(), CacheSettings(), set())
    cache.start()
    informer.replace([published("4", [])])
    assert cache.get("n", {})[0] is None


def test_the_fingerprint_is_upstreams() -> None:
    # podfingerprint v0.2.2's own vector for one pod would be long; check stability and format instead
    signed = fingerprint.sign([("ns-1", "pod-1"), ("ns-2", "pod-2")])
    assert signed == fingerprint.sign([("ns-2", "pod-2"), ("ns-1", "pod-1")])
    assert signed.startswith("pfp0v001") and len(signed) == 24
    assert fingerprint.xxh64(b"") == 0xEF46DB3751D8E999
    fingerprint.check([("ns-1", "pod-1"), ("ns-2", "pod-2")], signed)
