"""The structured-parameters allocator, on cases shaped after upstream's allocator test table
(``structured/internal/allocatortesting/allocator_testing.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from secondary_scheduler.plugins.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    DeviceID,
    SelectorResults,
    allocated_device_ids,
)
from secondary_scheduler.plugins.dynamicresources.pools import UnsupportedFeature, gather_pools

DRIVER = "driver-a"
NODE = {"metadata": {"name": "node-1", "labels": {"zone": "a"}}}
OTHER_NODE = {"metadata": {"name": "node-2", "labels": {"zone": "b"}}}


def device(name: str, **attributes: Any) -> dict[str, Any]:
    attrs = {key: ({"int": v} if isinstance(v, int) else {"string": v}) for key, v in attributes.items()}
    return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": "40Gi"}}}


def slice_(
    name: str,
    *devices: dict[str, Any],
    node: str | None = "node-1",
    pool: str = "pool-1",
    generation: int = 1,
    count: int = 1,
    **where: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if node is not None and not where:
        spec["nodeName"] = node
    spec.update(where)
    return {"metadata": {"name": name}, "spec": spec}


def device_class(name: str = "class-a", *selectors: str, config: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": s}} for s in selectors]}
    if config:
        spec["config"] = config
    return {"metadata": {"name": name}, "spec": spec}


def claim(
    *requests: dict[str, Any], constraints: list[Any] | None = None, name: str = "claim-1"
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def request(
    name: str = "req-0", count: int = 1, mode: str = "ExactCount", *selectors: str, **extra: Any
) -> dict[str, Any]:
    exactly = {"deviceClassName": "class-a", "allocationMode": mode, "count": count, **extra}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def allocate(
    claims: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    classes: list[dict[str, Any]] | None = None,
    allocated: set[DeviceID] | None = None,
    node: dict[str, Any] = NODE,
) -> list[dict[str, Any]] | None:
    by_name = {c["metadata"]["name"]: c for c in (classes if classes is not None else [device_class()])}
    placement = Allocator(claims, by_name.get, slices, allocated or set(), SelectorResults()).place(node)
    return None if placement is None else placement.results()


def devices_of(results: list[dict[str, Any]] | None) -> list[list[str]]:
    assert results is not None
    return [[f"{r['request']}:{r['device']}" for r in result["devices"]["results"]] for result in results]


def test_simple_allocation_on_the_nodes_slice() -> None:
    results = allocate([claim(request())], [slice_("s", device("gpu-0"), device("gpu-1"))])
    assert devices_of(results) == [["req-0:gpu-0"]]
    assert results is not None
    assert results[0]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        ]
    }


def test_slice_of_another_node_is_not_used() -> None:
    assert allocate([claim(request())], [slice_("s", device("gpu-0"), node="node-2")]) is None


def test_all_nodes_slice_has_no_node_selector() -> None:
    results = allocate([claim(request())], [slice_("s", device("gpu-0"), allNodes=True)])
    assert results is not None and "nodeSelector" not in results[0]


def test_node_selector_slice_matches_labels_and_is_copied() -> None:
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    }
    slices = [slice_("s", device("nic-0"), nodeSelector=selector)]
    results = allocate([claim(request())], slices)
    assert results is not None and results[0]["nodeSelector"] == selector
    assert allocate([claim(request())], slices, node=OTHER_NODE) is None


def test_allocated_devices_are_skipped_and_none_left_fails() -> None:
    slices = [slice_("s", device("gpu-0"), device("gpu-1"))]
    taken = {DeviceID(DRIVER, "pool-1", "gpu-0")}
    assert devices_of(allocate([claim(request())], slices, allocated=taken)) == [["req-0:gpu-1"]]
    taken.add(DeviceID(DRIVER, "pool-1", "gpu-1"))
    assert allocate([claim(request())], slices, allocated=taken) is None


def test_admin_access_may_use_an_allocated_device() -> None:
    slices = [slice_("s", device("gpu-0"))]
    taken = {DeviceID(DRIVER, "pool-1", "gpu-0")}
    results = allocate([claim(request(adminAccess=True))], slices, allocated=taken)
    assert results is not None and results[0]["devices"]["results"][0]["adminAccess"] is True


def test_two_claims_do_not_share_a_device() -> None:
    slices = [slice_("s", device("gpu-0"), device("gpu-1"))]
    results = allocate([claim(request(), name="a"), claim(request(), name="b")], slices)
    assert devices_of(results) == [["req-0:gpu-0"], ["req-0:gpu-1"]]
    assert allocate([claim(request(count=2), name="a"), claim(request(), name="b")], slices) is None


def test_count_and_all_modes() -> None:
    slices = [slice_("s", device("gpu-0"), device("gpu-1"), device("gpu-2"))]
    assert devices_of(allocate([claim(request(count=2))], slices)) == [["req-0:gpu-0", "req-0:gpu-1"]]
    assert allocate([claim(request(count=4))], slices) is None
    assert devices_of(allocate([claim(request(mode="All"))], slices)) == [
        ["req-0:gpu-0", "req-0:gpu-1", "req-0:gpu-2"]
    ]


def test_all_mode_fails_when_one_device_is_taken_or_pool_incomplete() -> None:
    slices = [slice_("s", device("gpu-0"), device("gpu-1"))]
    assert (
        allocate([claim(request(mode="All"))], slices, allocated={DeviceID(DRIVER, "pool-1", "gpu-0")})
        is None
    )
    incomplete = [slice_("s", device("gpu-0"), count=2)]
    with pytest.raises(AllocationError, match="is currently being updated"):
        allocate([claim(request(mode="All"))], incomplete)
    assert devices_of(allocate([claim(request())], incomplete)) == [["req-0:gpu-0"]]


def test_pool_generations_keep_only_the_newest() -> None:
    slices = [
        slice_("old", device("gpu-old"), generation=1),
        slice_("new", device("gpu-new"), generation=2),
    ]
    assert devices_of(allocate([claim(request())], slices)) == [["req-0:gpu-new"]]
    pools = gather_pools(slices, NODE)
    assert [(p.generation, len(p.slices), p.incomplete) for p in pools] == [(2, 1, False)]


def test_duplicate_device_names_make_the_pool_invalid() -> None:
    slices = [slice_("s1", device("gpu-0"), count=2), slice_("s2", device("gpu-0"), count=2)]
    with pytest.raises(AllocationError, match="duplicate device name gpu-0"):
        allocate([claim(request())], slices)


def test_class_and_request_selectors() -> None:
    slices = [slice_("s", device("gpu-0", model="T4"), device("gpu-1", model="A100"))]
    classes = [device_class("class-a", f'device.driver == "{DRIVER}"')]
    results = allocate(
        [claim(request("r", 1, "ExactCount", f'device.attributes["{DRIVER}"].model == "A100"'))],
        slices,
        classes,
    )
    assert devices_of(results) == [["r:gpu-1"]]
    classes = [device_class("class-a", 'device.driver == "other"')]
    assert allocate([claim(request())], slices, classes) is None


def test_capacity_quantity_selector() -> None:
    slices = [slice_("s", device("gpu-0"))]
    big = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'
    small = f'device.capacity["{DRIVER}"].memory.isLessThan(quantity("41Gi"))'
    assert allocate([claim(request("r", 1, "ExactCount", big))], slices) is None
    assert devices_of(allocate([claim(request("r", 1, "ExactCount", small))], slices)) == [["r:gpu-0"]]


def test_selector_runtime_error_fails_the_allocation() -> None:
    slices = [slice_("s", device("gpu-0"))]
    with pytest.raises(
        AllocationError, match=r"claim default/claim-1: selector #0: CEL runtime error: no such key"
    ):
        allocate([claim(request("r", 1, "ExactCount", 'device.attributes["x.io"].model == "a"'))], slices)


def test_missing_class_is_an_error() -> None:
    with pytest.raises(AllocationError, match="could not retrieve device class class-a"):
        allocate([claim(request())], [slice_("s", device("gpu-0"))], classes=[])


def test_match_attribute_backtracks_to_a_matching_pair() -> None:
    slices = [slice_("s", device("gpu-0", numa=0), device("gpu-1", numa=1), device("gpu-2", numa=1))]
    constraints = [{"matchAttribute": f"{DRIVER}/numa"}]
    results = allocate([claim(request("a"), request("b"), constraints=constraints)], slices)
    assert devices_of(results) == [["a:gpu-1", "b:gpu-2"]]
    taken = {DeviceID(DRIVER, "pool-1", "gpu-2")}
    assert (
        allocate([claim(request("a"), request("b"), constraints=constraints)], slices, allocated=taken)
        is None
    )


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    slices = [slice_("s", device("gpu-0", model="T4"))]
    first = {
        "name": "gpu",
        "firstAvailable": [
            {
                "name": "big",
                "deviceClassName": "class-a",
                "allocationMode": "ExactCount",
                "count": 1,
                "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "A100"'}}],
            },
            {"name": "small", "deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 1},
        ],
    }
    assert devices_of(allocate([claim(first)], slices)) == [["gpu/small:gpu-0"]]


def subrequest(name: str, mode: str = "ExactCount", count: int = 1, *selectors: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "deviceClassName": "class-a", "allocationMode": mode}
    if mode == "ExactCount":
        spec["count"] = count
    if selectors:
        spec["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return spec


def model_is(model: str) -> str:
    return f'device.attributes["{DRIVER}"].model == "{model}"'


def test_an_all_subrequest_without_devices_lets_the_next_one_try() -> None:
    slices = [slice_("s", device("gpu-0", model="T4"))]
    listed = {
        "name": "gpu",
        "firstAvailable": [subrequest("a100s", "All", 0, model_is("A100")), subrequest("any")],
    }
    assert devices_of(allocate([claim(listed)], slices)) == [["gpu/any:gpu-0"]]


def test_an_all_subrequest_after_the_first_continues_as_the_first_like_upstream() -> None:
    """1.34's allocator (experimental, which its default gates select) drops the subrequest index
    when it recurses to an All subrequest's next device: the rest is allocated as subrequest 0."""
    slices = [
        slice_("s", device("gpu-0", model="T4"), device("gpu-1", model="T4"), device("gpu-2", model="T4"))
    ]
    listed = {
        "name": "gpu",
        "firstAvailable": [subrequest("a100", "ExactCount", 1, model_is("A100")), subrequest("all", "All")],
    }
    assert devices_of(allocate([claim(listed)], slices)) == [["gpu/all:gpu-0"]]  # one device, not three
    two = {
        "name": "gpu",
        "firstAvailable": [subrequest("a100s", "ExactCount", 2, model_is("A100")), subrequest("all", "All")],
    }
    assert allocate([claim(two)], slices) is None  # the second device must be an A100


def test_the_second_all_subrequest_reads_the_first_ones_devices_like_upstream() -> None:
    """Upstream validates subrequest 1 with subrequest 0's cache key: when both are All, the
    second gets the first one's devices, its own selectors unread."""
    slices = [slice_("s", device("gpu-0", model="T4"), device("gpu-1", model="A100"))]
    listed = {
        "name": "gpu",
        "firstAvailable": [
            subrequest("a100s", "All", 0, model_is("H100")),
            subrequest("t4s", "All", 0, model_is("T4")),
        ],
    }
    assert (
        allocate([claim(listed)], slices) is None
    )  # no H100: the first finds none, and so "does" the second
    third = {
        "name": "gpu",
        "firstAvailable": [
            subrequest("one", "ExactCount", 1, model_is("H100")),
            subrequest("h100s", "All", 0, model_is("H100")),
            subrequest("t4s", "All", 0, model_is("T4")),
        ],
    }
    # The third is validated under the second's key, which nothing cached: its own selectors count.
    assert devices_of(allocate([claim(third)], slices)) == [["gpu/t4s:gpu-0"]]


def test_class_config_is_copied_into_the_result() -> None:
    opaque = {"opaque": {"driver": DRIVER, "parameters": {"a": 1}}}
    results = allocate(
        [claim(request())], [slice_("s", device("gpu-0"))], [device_class("class-a", config=[opaque])]
    )
    assert results is not None
    assert results[0]["devices"]["config"] == [{"source": "FromClass", "requests": ["req-0"], **opaque}]


@pytest.mark.parametrize(
    ("field", "value"),
    [("taints", [{"key": "k", "effect": "NoSchedule"}]), ("consumesCounters", [{"counterSet": "x"}])],
)
def test_gated_device_fields_are_refused(field: str, value: Any) -> None:
    gpu = {**device("gpu-0"), field: value}
    with pytest.raises(UnsupportedFeature, match=rf"spec.devices\[0\].{field}"):
        allocate([claim(request())], [slice_("s", gpu)])


def test_gated_claim_fields_are_refused() -> None:
    with pytest.raises(UnsupportedFeature, match=r"requests\[0\].exactly.tolerations"):
        allocate([claim(request(tolerations=[{"operator": "Exists"}]))], [slice_("s", device("gpu-0"))])


def test_allocated_device_ids_skip_admin_access() -> None:
    held = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "a", "driver": DRIVER, "pool": "p", "device": "d0"},
                        {"request": "b", "driver": DRIVER, "pool": "p", "device": "d1", "adminAccess": True},
                    ]
                }
            }
        }
    }
    assert allocated_device_ids(held) == [DeviceID(DRIVER, "p", "d0")]
