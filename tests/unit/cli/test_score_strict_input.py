"""`secsched score` reads its pod and snapshot as the API server's strict field validation would:
misspelt fields, the wrong kind or version, metric keys and values load-watcher never writes,
and the API server's container resource rules are refused, naming the field with a suggestion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.cli import score_inputs
from secondary_scheduler.cli.errors import InputError

EXAMPLE_SNAPSHOT = Path(__file__).parents[3] / "examples" / "score" / "snapshot.yaml"


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vm", "namespace": "vms"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec},
    }


def refusal(tmp_path: Path, document: Any, loader: str = "load_pod") -> str:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    with pytest.raises(InputError) as caught:
        getattr(score_inputs, loader)(str(path))
    return caught.value.format_message()


def with_resources(requests: dict[str, Any], limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    return pod(containers=[{"name": "c", "resources": resources}])


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            pod(nodeSelecter={"disk": "ssd"}),
            'spec.nodeSelecter: strict decoding error: unknown field "spec.nodeSelecter": '
            "did you mean `nodeSelector`?",
        ),
        (
            {**pod(), "metadata": {"name": "vm", "nodeSelector": {}}},
            'metadata.nodeSelector: strict decoding error: unknown field "metadata.nodeSelector": '
            "did you mean spec.nodeSelector?",
        ),
        (
            pod(containers=[{"name": "c", "Resources": {}}]),
            "spec.containers[0].Resources: strict decoding error: unknown field "
            '"spec.containers[0].Resources": did you mean `resources`? Field names are case-sensitive',
        ),
        (
            {**pod(), "kind": "Deployment", "apiVersion": "apps/v1"},
            "kind: 'Deployment' where a Pod is expected: give a Pod (a Deployment's or Job's "
            "spec.template is a pod template",
        ),
        (
            {**pod(), "apiVersion": "v2"},
            'apiVersion: no kind "Pod" is registered for version "v2": use apiVersion: v1',
        ),
        (
            with_resources({"gpu": "1"}),
            'spec.containers[0].resources.requests.gpu: Invalid value: "gpu": must be a standard '
            "resource for containers",
        ),
        (
            with_resources({"example.com/gpu": "1"}),
            "spec.containers[0].resources.limits: Required value: Limit must be set for non "
            "overcommitable resources (example.com/gpu): add limits.example.com/gpu: 1",
        ),
        (
            with_resources({"example.com/gpu": "1"}, {"example.com/gpu": "2"}),
            'spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
            "example.com/gpu limit of 2",
        ),
        (
            with_resources({"hugepages-2Mi": "2Mi"}),
            "Limit must be set for non overcommitable resources (hugepages-2Mi)",
        ),
    ],
)
def test_a_pod_is_decoded_strictly(tmp_path: Path, document: Any, message: str) -> None:
    assert message in refusal(tmp_path, document)


def test_what_the_api_server_accepts_is_accepted(tmp_path: Path) -> None:
    document = with_resources(
        {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"},
        {"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"},
    )
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(document))
    assert score_inputs.load_pod(str(path))["spec"]["containers"][0]["name"] == "c"


def snapshot() -> dict[str, Any]:
    return dict(yaml.safe_load(EXAMPLE_SNAPSHOT.read_text()))


def worker_1_metric(document: dict[str, Any]) -> dict[str, Any]:
    return dict(document["metrics"]["data"]["NodeMetricsMap"]["worker-1"]["metrics"][0])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["metrics"].update(dta=d["metrics"].pop("data")),
            "metrics.dta: unknown field: did you mean `data`?",
        ),
        (
            lambda d: d["metrics"]["data"]["NodeMetricsMap"]["worker-1"]["metrics"][0].update(type="Cpu"),
            "metrics.data.NodeMetricsMap.worker-1.metrics[0].type: 'Cpu' is not a load-watcher metric type: "
            "did you mean `CPU`? Values are case-sensitive",
        ),
        (
            lambda d: d["metrics"]["data"]["NodeMetricsMap"]["worker-1"]["metrics"][0].update(
                operator="MEAN"
            ),
            "metrics.data.NodeMetricsMap.worker-1.metrics[0].operator: 'MEAN' is not a load-watcher metric "
            "operator: use one of 'AVG', 'STD', 'Latest', 'Unknown', ''",
        ),
        (
            lambda d: d["metrics"]["data"]["NodeMetricsMap"]["worker-1"]["metrics"][0].update(vaule=3),
            "metrics.data.NodeMetricsMap.worker-1.metrics[0].vaule: unknown field: did you mean `value`?",
        ),
        (
            lambda d: d["metrics"]["window"].update(Start=1),
            "metrics.window.Start: unknown field: did you mean `start`? Field names are case-sensitive",
        ),
        (
            lambda d: d.update(node=d.pop("nodes")),
            "node: unknown field: did you mean `nodes`?",
        ),
        (
            lambda d: d["nodes"][0]["status"].update(allocatabel={}),
            'nodes[0].status.allocatabel: strict decoding error: unknown field "status.allocatabel": '
            "did you mean `allocatable`?",
        ),
        (
            lambda d: d["nodes"][0].update(kind="Pod"),
            "nodes[0].kind: 'Pod' where a Node is expected",
        ),
        (
            lambda d: d["pods"][0]["spec"].update(nodeNmae="x"),
            "pods[0].spec.nodeNmae: strict decoding error",
        ),
        (
            lambda d: d["recentlyScheduled"][0].update(time=1),
            "recentlyScheduled[0].time: unknown field: did you mean `timestamp`?",
        ),
        (
            lambda d: d.update(
                objects=[
                    {
                        "apiVersion": "policy/v1",
                        "kind": "PodDisruptionBudget",
                        "metadata": {"name": "b"},
                        "spec": {"maxUnavailabel": 1},
                    }
                ]
            ),
            'objects[0].spec.maxUnavailabel: strict decoding error: unknown field "spec.maxUnavailabel": '
            "did you mean `maxUnavailable`"
            "",
        ),
        (
            lambda d: d.update(
                objects=[
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "PersistentVolume",
                        "metadata": {"name": "pv"},
                    }
                ]
            ),
            'objects[0].apiVersion: no kind "PersistentVolume" is registered for version '
            '"storage.k8s.io/v1": use apiVersion: v1',
        ),
    ],
)
def test_a_snapshot_is_decoded_strictly(tmp_path: Path, change: Any, message: str) -> None:
    document = snapshot()
    change(document)
    assert message in refusal(tmp_path, document, "load_snapshot")


def test_the_example_snapshot_and_an_unknown_groups_object_pass(tmp_path: Path) -> None:
    document = snapshot()
    document["objects"] = [
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "x": 1}
    ]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump(document))
    assert len(score_inputs.load_snapshot(str(path)).objects) == 1  # a CRD of some plugin: not ours to judge
