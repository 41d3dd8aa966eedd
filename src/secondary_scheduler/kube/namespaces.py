"""Namespaces made for a workload: created if missing, usable once their default ServiceAccount exists."""

from __future__ import annotations

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for


async def ensure_namespace(api: ApiClient, name: str, timeout: float = 60.0) -> None:
    """Create the namespace if needed and wait for its default ServiceAccount (pods need it)."""
    try:
        await api.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    except ApiError as error:
        if not error.conflict:
            raise

    async def has_default_account() -> bool:
        try:
            await api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
        except ApiError as error:
            if not error.not_found:
                raise
            return False
        return True

    await wait_for(has_default_account, f"ServiceAccount {name}/default", timeout, interval=0.2)
