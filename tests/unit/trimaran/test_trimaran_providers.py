"""Each metrics provider against a small local HTTP server: queries, values, auth, TLS, errors."""

from __future__ import annotations

import base64
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.kubeconfig import Connection
from secondary_scheduler.plugins.trimaran.args import SecretKeyRef
from secondary_scheduler.plugins.trimaran.collector import MetricsCollector
from secondary_scheduler.plugins.trimaran.providers import FetchError
from secondary_scheduler.plugins.trimaran.providers.metricsserver import MetricsServerProvider
from secondary_scheduler.plugins.trimaran.providers.prometheus import PrometheusProvider
from secondary_scheduler.plugins.trimaran.providers.watcher import WatcherProvider
from secondary_scheduler.plugins.trimaran.source import WATCHER, MetricSource
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secsched_devtools.cluster import pki

Serve = Callable[..., Awaitable[str]]
"""The ``serve`` fixture (conftest): serve(app, ssl_context=None) -> base URL."""
NOW = 1_700_000_000.0
Samples = Sequence[tuple[str, float]]


def load_queries(
    window: str, cpu: Mapping[str, tuple[float, float]], memory: Mapping[str, tuple[float, float]]
) -> dict[str, Samples]:
    """The four load-watcher queries of a window, answered with (avg, std) ratios per node."""
    return {
        f"avg_over_time(instance:node_cpu:ratio[{window}])": [(n, v[0]) for n, v in cpu.items()],
        f"avg_over_time(instance:node_memory_utilisation:ratio[{window}])": [
            (n, v[0]) for n, v in memory.items()
        ],
        f"stddev_over_time(instance:node_cpu:ratio[{window}])": [(n, v[1]) for n, v in cpu.items()],
        f"stddev_over_time(instance:node_memory_utilisation:ratio[{window}])": [
            (n, v[1]) for n, v in memory.items()
        ],
    }


class FakePrometheus:
    """/api/v1/query answering from a table; a query mapped to an int fails with that HTTP status."""

    def __init__(self, answers: Mapping[str, Samples | int], prefix: str = "") -> None:
        self.answers = dict(answers)
        self.prefix = prefix
        self.seen: list[tuple[str, str | None]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(f"{self.prefix}/api/v1/query", self._query)
        return app

    async def _query(self, request: web.Request) -> web.Response:
        query = request.query["query"]
        self.seen.append((query, request.headers.get("Authorization")))
        answer = self.answers.get(query, [])
        if isinstance(answer, int):
            return web.json_response(
                {"status": "error", "errorType": "internal", "error": "boom"}, status=answer
            )
        result = [{"metric": {"instance": node}, "value": [NOW, str(value)]} for node, value in answer]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})


def prometheus(address: str, **fields: Any) -> PrometheusProvider:
    return PrometheusProvider(MetricSource(kind="Prometheus", address=address, **fields), clock=lambda: NOW)


async def test_prometheus_runs_load_watchers_queries_and_reports_percentages(serve: Serve) -> None:
    fake = FakePrometheus(load_queries("15m", {"node-1": (0.25, 0.05)}, {"node-1": (0.5, 0.125)}))
    provider = prometheus(await serve(fake.app()))
    metrics = await provider.fetch("15m")
    await provider.close()
    assert sorted(query for query, _ in fake.seen) == sorted(load_queries("15m", {}, {}))
    rows = [(m.name, m.type, m.operator, m.rollup, m.value) for m in metrics.node_metrics("node-1") or []]
    assert rows == [
        ("instance:node_cpu:ratio", "CPU", "AVG", "15m", 25.0),
        ("instance:node_memory_utilisation:ratio", "Memory", "AVG", "15m", 50.0),
        ("instance:node_cpu:ratio", "CPU", "STD", "15m", 5.0),
        ("instance:node_memory_utilisation:ratio", "Memory", "STD", "15m", 12.5),
    ]
    assert (metrics.window.duration, metrics.window.start, metrics.window.end) == ("15m", NOW - 900, NOW)
    assert (metrics.timestamp, metrics.source) == (NOW, "Prometheus")


async def test_one_failed_query_discards_the_window(serve: Serve) -> None:
    answers: dict[str, Samples | int] = {**load_queries("15m", {"n": (0.1, 0)}, {"n": (0.1, 0)})}
    answers["stddev_over_time(instance:node_memory_utilisation:ratio[15m])"] = 503
    provider = prometheus(await serve(FakePrometheus(answers).app()))
    with pytest.raises(FetchError, match=r"window 15m discarded: .*HTTP 503: boom"):
        await provider.fetch("15m")
    await provider.close()


async def test_a_thanos_querier_address_with_a_path_and_a_token(serve: Serve) -> None:
    """OpenShift: https route of thanos-querier, bearer token; any base path is kept."""
    fake = FakePrometheus(load_queries("5m", {"n": (0.5, 0.1)}, {}), prefix="/thanos")
    provider = prometheus(await serve(fake.app()) + "/thanos/", token="sha256~abc")
    metrics = await provider.fetch("5m")
    await provider.close()
    assert {auth for _, auth in fake.seen} == {"Bearer sha256~abc"}
    assert [m.value for m in metrics.node_metrics("n") or []] == [50.0, 10.0]


async def test_token_file_is_read_on_every_fetch(serve: Serve, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    fake = FakePrometheus({})
    provider = prometheus(await serve(fake.app()), token_file=str(token))
    await provider.fetch("15m")
    token.write_text("rotated")
    await provider.fetch("15m")
    token.unlink()
    with pytest.raises(FetchError, match=r"tokenFile .* cannot be read"):
        await provider.fetch("15m")
    await provider.close()
    assert [auth for _, auth in fake.seen] == ["Bearer first"] * 4 + ["Bearer rotated"] * 4


async def test_an_unauthorised_answer_names_the_fix(serve: Serve) -> None:
    provider = prometheus(await serve(FakePrometheus({q: 401 for q in load_queries("15m", {}, {})}).app()))
    with pytest.raises(FetchError, match="cluster-monitoring-view"):
        await provider.fetch("15m")
    await provider.close()


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> pki.Pki:
    return pki.create(tmp_path_factory.mktemp("pki"), ["127.0.0.1"])


async def _tls_prometheus(serve: Serve, certificates: pki.Pki) -> str:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates.serving_cert, certificates.serving_key)
    return await serve(FakePrometheus(load_queries("15m", {"n": (0.3, 0)}, {})).app(), ssl_context=context)


@pytest.mark.parametrize("token", ["", "abc"])
async def test_insecure_skip_verify_is_honoured_with_or_without_a_token(
    serve: Serve, certificates: pki.Pki, token: str
) -> None:
    """Upstream only skips verification when it has a token; we always do what the field says."""
    address = await _tls_prometheus(serve, certificates)
    insecure = prometheus(address, token=token, insecure_skip_verify=True)
    assert [m.value for m in (await insecure.fetch("15m")).node_metrics("n") or []] == [30.0, 0.0]
    await insecure.close()
    verifying = prometheus(address, token=token, insecure_skip_verify=False)
    with pytest.raises(FetchError, match=r"set metricProvider.caFile to its CA bundle"):
        await verifying.fetch("15m")
    await verifying.close()


async def test_ca_file_trusts_a_private_ca(serve: Serve, certificates: pki.Pki) -> None:
    provider = prometheus(await _tls_prometheus(serve, certificates), ca_file=str(certificates.ca_cert))
    assert (await provider.fetch("15m")).node_metrics("n") is not None
    await provider.close()


def test_an_unreadable_ca_file_fails_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"caFile .* cannot be read"):
        prometheus("https://prometheus:9091", ca_file=str(tmp_path / "missing.crt"))


class FakeApiServer:
    """The few API paths the providers read, served as JSON; a path mapped to an int fails with it."""

    def __init__(self, paths: Mapping[str, Any]) -> None:
        self.paths = dict(paths)
        self.seen: list[str] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{path:.*}", self._get)
        return app

    async def _get(self, request: web.Request) -> web.Response:
        self.seen.append(request.path)
        body = self.paths.get(request.path)
        if body is None or isinstance(body, int):
            status = body or 404
            return web.json_response(
                {"kind": "Status", "reason": "NotFound", "message": "nope"}, status=status
            )
        return web.json_response(body)


async def test_token_secret_ref_is_read_through_the_api_client(serve: Serve) -> None:
    secret = {"data": {"token": base64.b64encode(b"from-secret\n").decode()}}
    api_server = FakeApiServer({"/api/v1/namespaces/openshift-monitoring/secrets/prom": secret})
    fake = FakePrometheus({})
    async with ApiClient(Connection(server=await serve(api_server.app())), max_retry_seconds=0) as api:
        source = MetricSource(
            kind="Prometheus",
            address=await serve(fake.app()),
            token_secret_ref=SecretKeyRef(namespace="openshift-monitoring", name="prom", key="token"),
        )
        provider = PrometheusProvider(source, api, clock=lambda: NOW)
        await provider.fetch("10m")
        missing = PrometheusProvider(
            MetricSource(
                kind="Prometheus",
                address=source.address,
                token_secret_ref=SecretKeyRef(namespace="openshift-monitoring", name="other", key="token"),
            ),
            api,
        )
        with pytest.raises(FetchError, match=r"tokenSecretRef openshift-monitoring/other .*does not exist"):
            await missing.fetch("10m")
        await provider.close()
        await missing.close()
    assert {auth for _, auth in fake.seen} == {"Bearer from-secret"}


def test_token_secret_ref_without_an_api_client_fails_at_start() -> None:
    ref = SecretKeyRef(namespace="ns", name="s", key="k")
    with pytest.raises(ValueError, match="tokenSecretRef needs the Kubernetes API client"):
        PrometheusProvider(MetricSource(kind="Prometheus", address="http://p", token_secret_ref=ref))


async def test_metrics_server_reports_latest_usage_over_capacity(serve: Serve) -> None:
    api_server = FakeApiServer(
        {
            "/apis/metrics.k8s.io/v1beta1/nodes": {
                "items": [
                    {"metadata": {"name": "n1"}, "usage": {"cpu": "500m", "memory": "1Gi"}},
                    {"metadata": {"name": "gone"}, "usage": {"cpu": "1", "memory": "1Gi"}},
                ]
            },
            "/api/v1/nodes": {
                "items": [{"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "2", "memory": "4Gi"}}}]
            },
        }
    )
    async with ApiClient(Connection(server=await serve(api_server.app())), max_retry_seconds=0) as api:
        metrics = await MetricsServerProvider(api, clock=lambda: NOW).fetch("15m")
    rows = [(m.type, m.operator, m.value) for m in metrics.node_metrics("n1") or []]
    assert rows == [("CPU", "Latest", 25.0), ("Memory", "Latest", 25.0)]
    assert metrics.node_metrics("gone") is None  # no capacity known: skipped, as it cannot be divided


async def test_metrics_server_missing_says_to_install_it(serve: Serve) -> None:
    async with ApiClient(Connection(server=await serve(FakeApiServer({}).app())), max_retry_seconds=0) as api:
        with pytest.raises(FetchError, match="install metrics-server"):
            await MetricsServerProvider(api).fetch("15m")


def test_metrics_server_needs_the_api_client() -> None:
    with pytest.raises(ValueError, match=r"KubernetesMetricsServer reads metrics.k8s.io"):
        MetricsServerProvider(None)


WATCHER_DOCUMENT = {
    "timestamp": 1556987522,
    "window": {"duration": "15m", "start": 1556984522, "end": 1556985422},
    "source": "Prometheus",
    "data": {"NodeMetricsMap": {"node-1": {"metrics": [{"type": "CPU", "operator": "AVG", "value": 20.5}]}}},
}


async def test_load_watcher_service_body_is_the_snapshot(serve: Serve) -> None:
    async def watcher(_: web.Request) -> web.Response:
        return web.json_response(WATCHER_DOCUMENT)

    app = web.Application()
    app.router.add_get("/watcher", watcher)
    provider = WatcherProvider(MetricSource(kind=WATCHER, address=await serve(app) + "/"))
    metrics = await provider.fetch("served")
    await provider.close()
    assert metrics.window.end == 1556985422
    assert [m.value for m in metrics.node_metrics("node-1") or []] == [20.5]


async def test_load_watcher_without_metrics_yet(serve: Serve) -> None:
    provider = WatcherProvider(MetricSource(kind=WATCHER, address=await serve(web.Application())))
    with pytest.raises(FetchError, match="HTTP 404: load-watcher has no metrics yet"):
        await provider.fetch("served")
    await provider.close()


async def test_the_collector_falls_back_to_the_next_window(serve: Serve) -> None:
    """15m fails in one query, so the whole window is dropped and 10m is served; the failure is counted."""
    answers: dict[str, Samples | int] = {
        **load_queries("15m", {"n": (0.9, 0)}, {"n": (0.9, 0)}),
        **load_queries("10m", {"n": (0.2, 0)}, {"n": (0.3, 0)}),
    }
    answers["avg_over_time(instance:node_cpu:ratio[15m])"] = 500
    telemetry = TrimaranMetrics()
    collector = MetricsCollector("prom", prometheus(await serve(FakePrometheus(answers).app())), telemetry)
    assert await collector.refresh()
    await collector.stop()
    snapshot, _ = collector.latest()
    assert snapshot is not None and snapshot.window == "10m"
    assert [m.value for m in snapshot.metrics.node_metrics("n") or []] == [20.0, 30.0, 0.0, 0.0]
    assert (
        telemetry.registry.get_sample_value("secsched_trimaran_fetch_errors_total", {"source": "prom"}) == 1
    )
