"""The kopf wiring's own logic: credentials from our Connection, trigger coalescing, log levels."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from secondary_scheduler.kube.kubeconfig import Connection
from secondary_scheduler.operator import loglevel
from secondary_scheduler.operator.controller import Controller, connection_info
from secondary_scheduler.operator.reconcile import Reconciler, Result


def test_kopf_gets_the_same_credentials_as_our_client(tmp_path: Path) -> None:
    certs = Connection(
        server="https://10.0.0.1:6443", ca_file="/ca.crt", client_cert_file="/c.crt", client_key_file="/c.key"
    )
    info = connection_info(certs, "ns")
    assert (info.server, info.ca_path, info.certificate_path, info.private_key_path) == (
        "https://10.0.0.1:6443",
        "/ca.crt",
        "/c.crt",
        "/c.key",
    )
    assert info.default_namespace == "ns" and info.expiration is None
    token_file = tmp_path / "token"
    token_file.write_text("abc\n")
    info = connection_info(Connection(server="https://k", token_file=str(token_file)), "ns")
    assert info.token == "abc"
    assert info.expiration is not None  # so kopf logs in again and picks up a rotated token


class FakeReconciler:
    def __init__(self, results: list[Result | Exception]) -> None:
        self.results = results
        self.calls = 0
        self.started = asyncio.Event()

    async def reconcile(self) -> Result:
        self.calls += 1
        self.started.set()
        await asyncio.sleep(0.05)
        outcome = self.results.pop(0) if self.results else Result(None)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


async def _run_for(controller: Controller, seconds: float) -> None:
    task = asyncio.create_task(controller.run())
    try:
        await asyncio.sleep(seconds)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_burst_of_triggers_is_one_more_reconcile() -> None:
    fake = FakeReconciler([])
    controller = Controller(cast(Reconciler, fake), resync_seconds=3600)
    task = asyncio.create_task(_run_for(controller, 0.5))
    controller.trigger("first")
    await fake.started.wait()
    for index in range(20):
        controller.trigger(f"while running {index}")
    await task
    assert fake.calls == 2


async def test_failures_are_retried_and_resync_runs_without_triggers() -> None:
    fake = FakeReconciler([RuntimeError("boom"), Result(None, retry=True)])
    controller = Controller(cast(Reconciler, fake), resync_seconds=3600)
    controller.trigger("start")
    await _run_for(controller, 3.6)  # retries after 1 s and then 2 s
    assert fake.calls == 3
    idle = FakeReconciler([])
    await _run_for(Controller(cast(Reconciler, idle), resync_seconds=0.2), 0.7)
    assert idle.calls >= 2


@pytest.fixture
def restore_levels() -> Iterator[None]:
    names = (loglevel.OURS, loglevel.KOPF, *loglevel.HTTP)
    saved = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("restore_levels")
@pytest.mark.parametrize(
    ("level", "ours", "kopf", "http"),
    [
        ("Normal", logging.INFO, logging.WARNING, logging.WARNING),
        ("", logging.INFO, logging.WARNING, logging.WARNING),
        ("Debug", logging.DEBUG, logging.INFO, logging.WARNING),
        ("Trace", logging.DEBUG, logging.DEBUG, logging.WARNING),
        ("TraceAll", logging.DEBUG, logging.DEBUG, logging.DEBUG),
    ],
)
def test_operator_log_levels(level: str, ours: int, kopf: int, http: int) -> None:
    loglevel.apply(level)
    assert logging.getLogger("secondary_scheduler").level == ours
    assert logging.getLogger("kopf").level == kopf
    assert logging.getLogger("aiohttp").level == http
    assert logging.getLogger("secondary_scheduler.kube.http").level == http
