"""The local cluster's fake DRA driver (`secsched_devtools.cluster.dradriver`) on the real API server:
slices follow the node's labels as they change, and go with the label and with the node."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster import dradriver
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import NUMA_ZONES_LABEL, NodeShape, create_nodes, node_manifest

pytestmark = pytest.mark.cluster

JSON = dict[str, Any]


async def slice_of(api: ApiClient, node: str) -> JSON | None:
    try:
        return await api.get(f"{dradriver.SLICES}/{dradriver.slice_name(node)}")
    except ApiError as error:
        if error.not_found:
            return None
        raise


async def test_slices_follow_node_labels(api: ApiClient, cluster: LocalCluster) -> None:
    name = f"dra-{uuid.uuid4().hex[:6]}"
    manifest = node_manifest(name, NodeShape(), "zone-a")
    manifest["metadata"]["labels"] |= {dradriver.COUNT_LABEL: "2", dradriver.MODEL_LABEL: "H100"}
    await create_nodes(api, [manifest])
    try:
        the_class = await api.get(f"{dradriver.CLASSES}/{dradriver.DEVICE_CLASS}")
        assert the_class["spec"]["selectors"] == [
            {"cel": {"expression": f'device.driver == "{dradriver.DRIVER}"'}}
        ]

        first = await wait_for(lambda: slice_of(api, name), f"the slice of {name}", 30, 0.1)
        spec = first["spec"]
        assert (spec["driver"], spec["nodeName"], spec["pool"]["name"]) == (dradriver.DRIVER, name, name)
        assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
        assert spec["devices"][1]["attributes"] == {
            "model": {"string": "H100"},
            "index": {"int": 1},
            "numa": {"int": 1},
            "memoryGiB": {"int": 80},
        }
        assert spec["devices"][1]["capacity"] == {"memory": {"value": "80Gi"}}
        assert first["metadata"]["ownerReferences"][0]["name"] == name

        labels = {dradriver.COUNT_LABEL: "3", dradriver.MEMORY_LABEL: "40Gi", NUMA_ZONES_LABEL: "1"}
        await api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": labels}})

        async def regrown() -> JSON | None:
            got = await slice_of(api, name)
            return got if got is not None and len(got["spec"]["devices"]) == 3 else None

        second = (await wait_for(regrown, f"{name}'s slice with three GPUs", 30, 0.1))["spec"]
        assert second["pool"]["generation"] == spec["pool"]["generation"] + 1
        assert {d["attributes"]["numa"]["int"] for d in second["devices"]} == {0}
        assert second["devices"][2]["capacity"] == {"memory": {"value": "40Gi"}}

        await api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {dradriver.COUNT_LABEL: None}}})

        async def gone() -> bool:
            return await slice_of(api, name) is None

        await wait_for(gone, f"{name}'s slice deleted with its label", 30, 0.1)

        await api.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {dradriver.COUNT_LABEL: "1"}}})
        await wait_for(lambda: slice_of(api, name), f"{name}'s slice back with the label", 30, 0.1)
        await api.delete(f"/api/v1/nodes/{name}")
        await wait_for(gone, f"{name}'s slice deleted with its node", 30, 0.1)
    finally:
        with contextlib.suppress(ApiError):
            await api.delete(f"/api/v1/nodes/{name}")
