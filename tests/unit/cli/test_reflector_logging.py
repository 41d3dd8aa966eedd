"""A failing list+watch is logged at the default level, once per cause, then at most once a minute."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from secondary_scheduler.kube import reflector
from secondary_scheduler.kube.client import ApiError, ApiUnavailable
from secondary_scheduler.kube.kubeconfig import Connection


class FailingClient:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.connection = Connection(server="https://api.example:6443")
        self.last_transport_error: str | None = None
        self.calls = 0

    async def list_all(self, path: str, params: Any = None) -> dict[str, Any]:
        self.calls += 1
        raise self.error


class Handler:
    def replace(self, items: list[Any]) -> None:
        pass

    def event(self, kind: str, obj: Any) -> None:
        pass


async def run_for(reflectors: list[reflector.Reflector], seconds: float) -> None:
    tasks = [asyncio.create_task(r.run()) for r in reflectors]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reflector, "INITIAL_BACKOFF", 0.01)
    monkeypatch.setattr(reflector, "MAX_BACKOFF", 0.02)
    reflector._recent_causes.clear()


async def test_forbidden_is_an_error_with_the_rbac_fix_and_no_flood(caplog: pytest.LogCaptureFixture) -> None:
    client = FailingClient(
        ApiError(403, "Forbidden", 'nodes is forbidden: User "x" cannot list resource "nodes"')
    )
    with caplog.at_level(logging.INFO, logger=reflector.__name__):
        await run_for([reflector.Reflector(client, "/api/v1/nodes", Handler(), name="nodes")], 0.5)  # type: ignore[arg-type]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert client.calls > 5, "retried with backoff"
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "forbidden" in errors[0].getMessage() and "system:kube-scheduler" in errors[0].getMessage()


async def test_an_unreachable_server_is_said_once_for_all_informers(caplog: pytest.LogCaptureFixture) -> None:
    client = FailingClient(
        ApiUnavailable("GET /api/v1/x: Cannot connect (API server https://api.example:6443)")
    )
    reflectors = [
        reflector.Reflector(client, f"/api/v1/{n}", Handler(), name=n) for n in ("nodes", "pods", "pvcs")
    ]  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger=reflector.__name__):
        await run_for(reflectors, 0.3)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "is the API server running" in errors[0].getMessage()


async def test_recovery_is_said(caplog: pytest.LogCaptureFixture) -> None:
    class Flaky(FailingClient):
        async def list_all(self, path: str, params: Any = None) -> dict[str, Any]:
            self.calls += 1
            if self.calls < 3:
                raise self.error
            return {"metadata": {"resourceVersion": "1"}, "items": []}

        async def watch(self, path: str, params: Any) -> Any:
            await asyncio.sleep(10)
            yield {}

    client = Flaky(ApiError(401, "Unauthorized", "Unauthorized"))
    one = reflector.Reflector(client, "/api/v1/nodes", Handler(), name="nodes")  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger=reflector.__name__):
        await run_for([one], 0.3)
    assert one.synced.is_set()
    assert any("works again after 2 failed attempt(s)" in r.getMessage() for r in caplog.records)
