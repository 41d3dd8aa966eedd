"""Helpers for the Helm chart's tests: run the real `helm` (built by `secsched cluster build`)
on charts/secondary-scheduler and read what it renders."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from secsched_devtools.cluster import build

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "secondary-scheduler"
DEPLOY = REPO / "deploy"


def helm_binary() -> Path:
    """The cached helm, built now if missing (a cold build takes about 4 minutes on 2 cores)."""
    if "helm" in build.missing_binaries():
        try:
            build.build(only=["helm"])
        except build.BuildError as error:
            pytest.fail(f"helm could not be built: {error}")
    return build.binary_path("helm")


def run_helm(helm: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`helm ARGS`, with its cache, config and data under `home` (nothing of the user's is read)."""
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    return subprocess.run(
        [str(helm), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def render(
    helm: Path,
    home: Path,
    values: dict[str, Any] | None = None,
    release: str = "secondary-scheduler",
    namespace: str = "scheduling",
    crds: bool = True,
) -> list[dict[str, Any]]:
    """`helm template` of the chart (with these values): every object it renders, and its CRDs
    unless `crds` is false (`--skip-crds`, as `helm install --skip-crds` would leave them)."""
    args = ["template", release, str(CHART), "--namespace", namespace]
    args.append("--include-crds" if crds else "--skip-crds")
    if values is not None:
        values_file = home / f"values-{abs(hash(yaml.safe_dump(values)))}.yaml"
        values_file.parent.mkdir(parents=True, exist_ok=True)
        values_file.write_text(yaml.safe_dump(values))
        args += ["--values", str(values_file)]
    result = run_helm(helm, home, *args)
    assert result.returncode == 0, f"helm {' '.join(args)} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """The objects of one kind, by `namespace/name` (`name` when cluster-scoped)."""
    found: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if obj["kind"] == kind:
            meta = obj["metadata"]
            found[f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]] = obj
    return found


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"] == name]
    assert len(matches) == 1, (
        f"expected one {kind} {name}; got {len(matches)} of {sorted(by_kind(objects, kind))}"
    )
    return matches[0]
