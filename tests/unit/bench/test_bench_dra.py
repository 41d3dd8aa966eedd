"""The workloads section's dra class, pure parts: its pods, slices and placement check."""

from __future__ import annotations

from typing import Any

from bench import dra
from bench.workloadclasses import measured_manifests

from secsched_devtools.cluster import dradriver


def test_measured_pods_name_the_template() -> None:
    pods = measured_manifests("dra", "m", 3, "s", ["zone-a"])
    assert all(
        pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "bench-gpu"}]
        for pod in pods
    )
    assert all(pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}] for pod in pods)


def test_every_node_gets_the_drivers_slice() -> None:
    slices = dra.slice_manifests([{"metadata": {"name": "n1", "uid": "u"}}])
    assert [s["spec"]["nodeName"] for s in slices] == ["n1"]
    assert len(slices[0]["spec"]["devices"]) == dra.DEVICES_PER_NODE
    assert slices[0]["spec"]["driver"] == dradriver.DRIVER


def pod(name: str, node: str, claim: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "resourceClaims": [{"name": "gpu"}]},
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]},
    }


def claim(name: str, pool: str, device: str, reserved: str) -> dict[str, Any]:
    result = {"request": "req-0", "driver": dradriver.DRIVER, "pool": pool, "device": device}
    return {
        "metadata": {"name": name},
        "status": {"allocation": {"devices": {"results": [result]}}, "reservedFor": [{"name": reserved}]},
    }


def test_a_clean_run_has_no_violation() -> None:
    pods = [pod("a", "n1", "a-gpu"), pod("b", "n1", "b-gpu")]
    claims = [claim("a-gpu", "n1", "gpu-0", "a"), claim("b-gpu", "n1", "gpu-1", "b")]
    assert dra.violations(pods, claims) == []


def test_violations_are_named() -> None:
    pods = [pod("a", "n1", "a-gpu"), pod("b", "n2", "b-gpu"), pod("c", "n1", "gone")]
    claims = [claim("a-gpu", "n1", "gpu-0", "a"), claim("b-gpu", "n1", "gpu-0", "x")]
    assert dra.violations(pods, claims) == [
        f"device {dradriver.DRIVER}/n1/gpu-0 allocated to 2 claims",
        "pod b on n2: its claim holds 1 devices of pools ['n1']",
        "pod b on n2: its claim is not reserved for it",
        "pod c on n1: its claim is missing",
    ]
