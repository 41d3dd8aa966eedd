"""`secsched score` explains a pod's claims per node: the devices each feasible node would give,
and for each node filtered out which request is short and why (DynamicResources' note)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli

DRIVER = "gpu.example.com"
CONFIG = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    "profiles:\n- schedulerName: gpu-scheduler\n"
)


def node(name: str) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": resources}}


def gpus(node_name: str, *devices: tuple[str, int]) -> dict[str, Any]:
    """A slice of (model, numa) GPUs on the node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"model": {"string": model}, "numa": {"int": numa}}}
                for i, (model, numa) in enumerate(devices)
            ],
        },
    }


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def claim(
    name: str, count: int = 1, model: str | None = None, match: str | None = None, **status: Any
) -> Any:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}
    if model:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if match:
        devices["constraints"] = [{"matchAttribute": match}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": devices},
        "status": status,
    }


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
    "spec": {
        "schedulerName": "gpu-scheduler",
        "containers": [{"name": "c", "image": "pause"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "mine"}],
    },
}


def explained(tmp_path: Path, nodes: list[str], *objects: dict[str, Any]) -> dict[str, str]:
    """Node -> its DynamicResources note line (after "<node>: ")."""
    (tmp_path / "config.yaml").write_text(CONFIG)
    snapshot = {"nodes": [node(name) for name in nodes], "pods": [], "objects": [GPU_CLASS, *objects]}
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(POD))
    args = ["score", "--config", str(tmp_path / "config.yaml"), "--snapshot", str(tmp_path / "snapshot.json")]
    result = CliRunner().invoke(cli, [*args, "--pod", str(tmp_path / "pod.yaml"), "--output", "json"])
    assert result.exit_code == 0, result.output
    prefix = "note: DynamicResources: "
    lines = [line.removeprefix(prefix) for line in result.stderr.splitlines() if line.startswith(prefix)]
    return dict(line.split(": ", 1) for line in lines)  # type: ignore[misc]


def test_devices_per_feasible_node_and_why_the_others_do_not_fit(tmp_path: Path) -> None:
    notes = explained(
        tmp_path,
        ["n1", "n2", "n3"],
        claim("mine", model="A100"),
        gpus("n1", ("T4", 0)),
        gpus("n2", ("A100", 0), ("A100", 1)),
    )
    assert notes == {
        "n2": f"default/mine: gpu={DRIVER}/n2/gpu-0",
        "n1": "cannot allocate: claim default/mine, request gpu: wants 1 device(s) of class gpu; "
        "1 here of that class, 0 of them matching the request's selectors",
        "n3": "cannot allocate: no ResourceSlice publishes devices for this node (no pool reaches it)",
    }


HELD = {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}


def test_devices_other_claims_hold_are_counted(tmp_path: Path) -> None:
    held = claim(
        "theirs",
        allocation={
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}
        },
    )
    notes = explained(tmp_path, ["n1"], claim("mine"), held, gpus("n1", ("A100", 0)))
    assert notes["n1"] == (
        "cannot allocate: claim default/mine, request gpu: wants 1 device(s) of class gpu; "
        "1 here of that class, 1 of those allocated to other claims"
    )


def test_a_constraint_that_no_pair_meets(tmp_path: Path) -> None:
    notes = explained(
        tmp_path,
        ["n1"],
        claim("mine", count=2, match=f"{DRIVER}/numa"),
        gpus("n1", ("A100", 0), ("A100", 1)),
    )
    assert notes["n1"] == (
        "cannot allocate: each request alone finds enough free devices here, but not all together: "
        f"the claims' constraints (matchAttribute {DRIVER}/numa) cannot all be met"
    )


def test_nodes_with_the_same_reason_share_a_line(tmp_path: Path) -> None:
    names = [f"n{i}" for i in range(1, 8)]
    notes = explained(tmp_path, ["gpu", *names], claim("mine"), gpus("gpu", ("A100", 0)))
    assert notes == {
        "gpu": f"default/mine: gpu={DRIVER}/gpu/gpu-0",
        "n1, n2, n3, n4, n5 and 2 more nodes": "cannot allocate: no ResourceSlice publishes devices "
        "for this node (no pool reaches it)",
    }
