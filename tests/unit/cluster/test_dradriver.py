"""The fake DRA driver's pure part: what a node's labels ask for, and the slice it gets."""

from __future__ import annotations

import pytest

from secsched_devtools.cluster import dradriver
from secsched_devtools.cluster.dradriver import GpuLabelError, NodeGpus, gpu_devices, node_gpus
from secsched_devtools.cluster.nodes import NUMA_ZONES_LABEL


def test_no_label_or_zero_means_no_slice() -> None:
    assert node_gpus({}) is None
    assert node_gpus({dradriver.COUNT_LABEL: "0"}) is None


def test_defaults_follow_the_model() -> None:
    assert node_gpus({dradriver.COUNT_LABEL: "4"}) == NodeGpus(4, "A100", "80Gi", 2)
    t4 = {dradriver.COUNT_LABEL: "1", dradriver.MODEL_LABEL: "T4"}
    assert node_gpus(t4) == NodeGpus(1, "T4", "16Gi", 2)
    labels = {dradriver.COUNT_LABEL: "2", dradriver.MEMORY_LABEL: "40Gi", NUMA_ZONES_LABEL: "4"}
    assert node_gpus(labels) == NodeGpus(2, "A100", "40Gi", 4)


@pytest.mark.parametrize(
    ("labels", "named"),
    [
        ({dradriver.COUNT_LABEL: "two"}, dradriver.COUNT_LABEL),
        ({dradriver.COUNT_LABEL: "65"}, dradriver.COUNT_LABEL),
        ({dradriver.COUNT_LABEL: "1", dradriver.MEMORY_LABEL: "lots"}, dradriver.MEMORY_LABEL),
        ({dradriver.COUNT_LABEL: "1", dradriver.MEMORY_LABEL: "0"}, dradriver.MEMORY_LABEL),
    ],
)
def test_a_wrong_label_is_refused_by_name(labels: dict[str, str], named: str) -> None:
    with pytest.raises(GpuLabelError, match=named):
        node_gpus(labels)


def test_devices_split_evenly_over_numa_zones() -> None:
    devices = gpu_devices(NodeGpus(4, "H100", "80Gi", 2))
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert [d["attributes"]["numa"]["int"] for d in devices] == [0, 0, 1, 1]
    assert devices[3]["attributes"] == {
        "model": {"string": "H100"},
        "index": {"int": 3},
        "numa": {"int": 1},
        "memoryGiB": {"int": 80},
    }
    assert devices[3]["capacity"] == {"memory": {"value": "80Gi"}}


def test_the_slice_is_the_nodes_pool_and_owned_by_it() -> None:
    node = {"metadata": {"name": "n1", "uid": "u-1"}}
    made = dradriver.resource_slice(node, gpu_devices(NodeGpus(1)), generation=3)
    assert made["metadata"]["name"] == "n1-gpu.dra.secsched.io"
    owner = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u-1"}
    assert made["metadata"]["ownerReferences"] == [owner]
    assert made["spec"]["pool"] == {"name": "n1", "generation": 3, "resourceSliceCount": 1}
    assert made["spec"]["nodeName"] == "n1"
