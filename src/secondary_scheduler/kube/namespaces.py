"""Namespaces made for a workload: created if missing, usable once their default ServiceAccount exists."""

from __future__ import annotations

import asyncio
import time

from secondary_scheduler.kube.client import ApiClient, ApiError


async def ensure_namespace(api: ApiClient, name: str, timeout: float = 60.0) -> None:
    """Create the namespace if needed and wait for its default ServiceAccount (pods need it)."""
    try:
        await api.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    except ApiError as error:
        if not error.conflict:
            raise
    deadline = time.monotonic() + timeout
    while True:
        try:
            await api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return
        except ApiError as error:
            if not error.not_found or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)
