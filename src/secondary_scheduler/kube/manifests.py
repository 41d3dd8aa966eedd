"""Apply YAML manifests the way `kubectl apply --server-side -f DIR` does, CRDs first."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from secondary_scheduler.kube.client import JSON, ApiClient, resource_path
from secondary_scheduler.kube.wait import poll_until

CRD = "CustomResourceDefinition"


def read_manifests(paths: Iterable[Path]) -> list[JSON]:
    """Every document of every file (directories: their *.yaml/*.yml files, in name order)."""
    documents: list[JSON] = []
    for path in paths:
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
        for file in files:
            documents.extend(doc for doc in yaml.safe_load_all(file.read_text()) if doc)
    return documents


async def wait_established(api: ApiClient, name: str, timeout: float = 30.0) -> None:
    """A CRD serves its resources only once Established; creating a CR before that fails."""
    path = resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions", name=name)

    async def established() -> bool:
        conditions = ((await api.get(path)).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    await poll_until(
        established,
        bool,
        lambda _: f"CustomResourceDefinition {name} not Established after {timeout:.0f}s",
        timeout,
        interval=0.2,
    )


async def apply_manifests(
    api: ApiClient, documents: list[JSON], field_manager: str = "secsched"
) -> list[str]:
    """Server-side apply every object, CRDs first (waiting until they serve); returns 'Kind/name' of each."""
    ordered = sorted(documents, key=lambda doc: doc.get("kind") != CRD)
    applied: list[str] = []
    for document in ordered:
        await api.apply(document, field_manager)
        name = document["metadata"]["name"]
        if document.get("kind") == CRD:
            await wait_established(api, name)
        applied.append(f"{document['kind']}/{name}")
    return applied


def substitute(text: str, values: dict[str, Any]) -> str:
    """Fill `${NAME}` placeholders, as `envsubst` would for the names given."""
    for name, value in values.items():
        text = text.replace("${" + name + "}", str(value))
    return text
