"""Builders for the raw v1 objects and metrics snapshots the Trimaran tests feed in."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import pytest
from aiohttp import web

from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics

Resources = Mapping[str, str]
MetricRow = tuple[str, str, float]


def _node(name: str, cpu: str = "1000m", memory: str = "1Gi") -> dict[str, Any]:
    """A Node whose capacity and allocatable are equal, like upstream's st.MakeNode().Capacity()."""
    resources = {"cpu": cpu, "memory": memory}
    return {
        "metadata": {"name": name},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def _pod(
    containers: Sequence[Mapping[str, Resources]] = (),
    init_containers: Sequence[Mapping[str, Resources]] = (),
    overhead: Resources | None = None,
) -> dict[str, Any]:
    """A Pod; each container is given as its ``resources`` ({"requests": ..., "limits": ...})."""
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": dict(r)} for i, r in enumerate(containers)],
    }
    if init_containers:
        spec["initContainers"] = [
            {"name": f"i{i}", "resources": dict(r)} for i, r in enumerate(init_containers)
        ]
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def _snapshot(nodes: Mapping[str, Sequence[MetricRow]], window_end: int = 0) -> WatcherMetrics:
    """A snapshot from (type, operator, value) rows per node, parsed from its JSON shape."""
    return WatcherMetrics.parse(
        {
            "timestamp": window_end,
            "window": {"duration": "15m", "start": window_end - 900, "end": window_end},
            "source": "Prometheus",
            "data": {
                "NodeMetricsMap": {
                    name: {
                        "metrics": [
                            {"name": "m", "type": t, "operator": op, "rollup": "15m", "value": v}
                            for t, op, v in rows
                        ],
                        "tags": {},
                        "metadata": {"dataCenter": ""},
                    }
                    for name, rows in nodes.items()
                }
            },
        }
    )


@pytest.fixture
def make_node() -> Callable[..., dict[str, Any]]:
    return _node


@pytest.fixture
def make_pod() -> Callable[..., dict[str, Any]]:
    return _pod


@pytest.fixture
def make_snapshot() -> Callable[..., WatcherMetrics]:
    return _snapshot


Serve = Callable[..., Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """serve(app, ssl_context=None) -> base URL of ``app`` on 127.0.0.1 (a free port), until the test ends."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> str:
        runner = web.AppRunner(app)
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context).start()
        port = runner.addresses[0][1]
        return f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()
