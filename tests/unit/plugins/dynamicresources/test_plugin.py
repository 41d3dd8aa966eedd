"""The DynamicResources plugin's PreFilter/Filter/PostFilter/Reserve in memory, with upstream's messages."""

from __future__ import annotations

from typing import Any, cast

from tests.unit.framework.kubeobjects import make_node, pod_info, table_of
from tests.unit.plugins.pluginruns import rejections

from secondary_scheduler.framework import CycleState, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.status import Code
from secondary_scheduler.plugins.dynamicresources.dynamic_resources import (
    CANNOT_ALLOCATE,
    NO_CLAIMS_TO_DEALLOCATE,
    NOT_AVAILABLE,
    DynamicResources,
)

DRIVER = "gpu.example.com"
UNRESOLVABLE = " [unresolvable]"


def gpu_slice(node: str, *models: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{index}", "attributes": {"model": {"string": model}}}
                for index, model in enumerate(models)
            ],
        },
    }


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def gpu_claim(name: str, count: int = 1, model: str | None = None, **status: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}
    if model:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        "status": status,
    }


def pod_with(*claims: str, **status: Any) -> PodInfo:
    info = pod_info(
        "p", resourceClaims=[{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    )
    if status:
        return PodInfo.from_pod({**info.obj, "status": status})
    return info


def plugin_with(*objects: dict[str, Any]) -> DynamicResources:
    handle = Handle()
    plugin = DynamicResources(None, handle)
    handle.informers.fill([GPU_CLASS, *objects])
    return plugin


def two_nodes() -> NodeTable:
    return table_of([make_node("n1"), make_node("n2")])


def test_pods_without_claims_skip() -> None:
    plugin = plugin_with()
    assert plugin.pre_filter(CycleState(), pod_info("plain"), NodeTable()).is_skip
    result = plugin.post_filter(CycleState(), pod_info("plain"), NodeTable(), Diagnosis(2))
    assert result.status.message == NO_CLAIMS_TO_DEALLOCATE


def test_missing_claim_is_unschedulable_with_upstreams_words() -> None:
    status = plugin_with().pre_filter(CycleState(), pod_with("gone"), NodeTable())
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == 'could not find ResourceClaim "default/gone"'


def test_template_claim_not_created_yet() -> None:
    pod = pod_info("p", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    status = plugin_with().pre_filter(CycleState(), pod, NodeTable())
    assert status.message == 'pod "default/p": ResourceClaim not created yet'


def test_template_claim_must_be_owned_by_the_pod() -> None:
    pod = pod_with()
    pod = PodInfo.from_pod(
        {
            **pod.obj,
            "spec": {
                **pod.obj["spec"],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            },
            "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}]},
        }
    )
    status = plugin_with(gpu_claim("p-gpu")).pre_filter(CycleState(), pod, NodeTable())
    assert (
        status.message == "ResourceClaim default/p-gpu was not created for pod default/p (pod is not owner)"
    )
    owned = gpu_claim("p-gpu")
    owned["metadata"]["ownerReferences"] = [{"uid": "uid-p", "controller": True, "kind": "Pod", "name": "p"}]
    plugin = plugin_with(owned, gpu_slice("n1", "A100"))
    assert rejections(plugin, pod, two_nodes()) == {"n2": [CANNOT_ALLOCATE + UNRESOLVABLE]}


def test_missing_class_is_unschedulable() -> None:
    claim = gpu_claim("c")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nope"
    status = plugin_with(claim).pre_filter(CycleState(), pod_with("c"), NodeTable())
    assert status.message == "request gpu: device class nope does not exist"


def test_filter_allocates_on_the_node_with_the_device() -> None:
    plugin = plugin_with(gpu_claim("c", model="A100"), gpu_slice("n1", "T4"), gpu_slice("n2", "A100"))
    assert rejections(plugin, pod_with("c"), two_nodes()) == {"n1": [CANNOT_ALLOCATE + UNRESOLVABLE]}


def test_devices_held_by_other_claims_and_reserved_pods_are_not_given_twice() -> None:
    held = gpu_claim(
        "held",
        allocation={
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}
        },
    )
    plugin = plugin_with(held, gpu_claim("a"), gpu_claim("b"), gpu_slice("n1", "A100", "A100"))
    table = table_of([make_node("n1")])
    state = CycleState()
    assert plugin.pre_filter(state, pod_with("a"), table).is_success
    assert not any(
        mask.any() for mask, *_ in plugin.filter(state, pod_with("a"), table, table.active_slots())
    )
    assert plugin.reserve(state, pod_with("a"), "n1").is_success
    assert rejections(plugin, pod_with("b"), table) == {"n1": [CANNOT_ALLOCATE + UNRESOLVABLE]}
    plugin.unreserve(state, pod_with("a"), "n1")
    assert rejections(plugin, pod_with("b"), table) == {}


def test_claim_being_allocated_by_another_cycle() -> None:
    plugin = plugin_with(gpu_claim("c"), gpu_slice("n1", "A100"))
    table = table_of([make_node("n1")])
    state = CycleState()
    plugin.pre_filter(state, pod_with("c"), table)
    plugin.filter(state, pod_with("c"), table, table.active_slots())
    plugin.reserve(state, pod_with("c"), "n1")
    status = plugin.pre_filter(
        CycleState(), pod_info("q", resourceClaims=[{"name": "x", "resourceClaimName": "c"}]), table
    )
    assert status.message == "resource claim default/c is in the process of being allocated"


def test_allocated_claim_is_honoured_through_its_node_selector() -> None:
    selector = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    }
    allocated = gpu_claim("c", allocation={"devices": {"results": []}, "nodeSelector": selector})
    plugin = plugin_with(allocated)
    state = CycleState()
    pod = pod_with("c")
    assert rejections(plugin, pod, two_nodes()) == {"n1": [NOT_AVAILABLE + UNRESOLVABLE]}
    plugin.pre_filter(state, pod, two_nodes())
    plugin.filter(state, pod, two_nodes(), two_nodes().active_slots())
    # The claim is reserved for nobody: PostFilter frees it (in the background), as upstream.
    handle_spawned: list[str] = []
    plugin.handle.spawn = lambda coroutine, name: (coroutine.close(), handle_spawned.append(name))  # type: ignore[method-assign]
    result = plugin.post_filter(state, pod, two_nodes(), Diagnosis(2))
    assert result.status.message == "deallocation of ResourceClaim completed"
    assert handle_spawned == []  # in memory (secsched score): the same answer, nothing written
    plugin.handle.client = cast(Any, object())
    result = plugin.post_filter(state, pod, two_nodes(), Diagnosis(2))
    assert result.status.message == "deallocation of ResourceClaim completed"
    assert handle_spawned == ["deallocate-default/c"]


def test_gated_fields_are_refused_naming_the_field() -> None:
    claim = gpu_claim("c")
    claim["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [{"operator": "Exists"}]
    status = plugin_with(claim).pre_filter(CycleState(), pod_with("c"), NodeTable())
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "spec.devices.requests[0].exactly.tolerations" in status.message
    assert "DRADeviceTaints" in status.message


def test_claim_events_requeue_only_what_may_help() -> None:
    """isSchedulableAfterClaimChange: the pod's own claim changing status, or any deallocation."""
    mine, other = gpu_claim("c"), gpu_claim("other")
    plugin = plugin_with(mine, other)
    pod = pod_with("c")
    allocated = {"devices": {"results": []}}
    assert plugin._claim_may_help(pod, None, mine)
    assert plugin._claim_may_help(pod, mine, gpu_claim("c", allocation=allocated))
    assert not plugin._claim_may_help(
        pod, mine, {**mine, "metadata": {**mine["metadata"], "labels": {"a": "b"}}}
    )
    assert not plugin._claim_may_help(pod, other, gpu_claim("other", allocation=allocated))
    assert plugin._claim_may_help(pod, gpu_claim("other", allocation=allocated), other)
