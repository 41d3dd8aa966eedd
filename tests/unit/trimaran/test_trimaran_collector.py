"""The collector registry and the collectors: one per source, refreshing in the background, aging."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from secondary_scheduler.config import load_config
from secondary_scheduler.framework import Framework, Handle
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import in_tree_registry
from secondary_scheduler.plugins.trimaran.collector import MetricsCollector, Snapshot
from secondary_scheduler.plugins.trimaran.pluginbase import TrimaranPlugin
from secondary_scheduler.plugins.trimaran.providers import FetchError
from secondary_scheduler.plugins.trimaran.services import SERVICE, TrimaranServices
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs
from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics, Window

Serve = Callable[..., Awaitable[str]]
"""The ``serve`` fixture (conftest): serve(app, ssl_context=None) -> base URL."""

WATCHER_DOCUMENT = {
    "timestamp": 1_700_000_000,
    "window": {"duration": "15m", "start": 1_699_999_100, "end": 1_700_000_000},
    "source": "Prometheus",
    "data": {"NodeMetricsMap": {"node-1": {"metrics": [{"type": "CPU", "operator": "AVG", "value": 20.0}]}}},
}


def config(watchers: tuple[str, str, str]) -> str:
    """Two profiles: TLP and LVRB in the first, LROC in the second, each with its watcherAddress."""
    tlp, lvrb, lroc = watchers
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: packing\n"
        "  plugins: {multiPoint: {enabled:\n"
        "    [{name: TargetLoadPacking}, {name: LoadVariationRiskBalancing}]}}\n"
        "  pluginConfig:\n"
        f"  - {{name: TargetLoadPacking, args: {{watcherAddress: '{tlp}'}}}}\n"
        f"  - {{name: LoadVariationRiskBalancing, args: {{watcherAddress: '{lvrb}'}}}}\n"
        "- schedulerName: overcommit\n"
        "  plugins: {multiPoint: {enabled: [{name: LowRiskOverCommitment}]}}\n"
        "  pluginConfig:\n"
        f"  - {{name: LowRiskOverCommitment, args: {{watcherAddress: '{lroc}'}}}}\n"
    )


async def test_one_collector_per_source_across_plugins_and_profiles(serve: Serve) -> None:
    requests: list[str] = []

    async def watcher(request: web.Request) -> web.Response:
        requests.append(request.host)
        return web.json_response(WATCHER_DOCUMENT)

    app = web.Application()
    app.router.add_get("/watcher", watcher)
    shared, other = await serve(app), await serve(app)
    loaded = load_config(config((shared, shared + "/", other)), catalog=IN_TREE_CATALOG).config
    services = TrimaranServices(interval=3600)
    handle = Handle()
    handle.register_service(SERVICE, services)
    frameworks = [Framework(profile, in_tree_registry(), handle) for profile in loaded.profiles]
    plugins = {p.name: p for f in frameworks for p in f.score_plugins if isinstance(p, TrimaranPlugin)}
    assert len(services.collectors) == 2
    assert plugins["TargetLoadPacking"].view is plugins["LoadVariationRiskBalancing"].view
    assert plugins["LowRiskOverCommitment"].view is not plugins["TargetLoadPacking"].view
    requests.clear()
    await services.start()
    await services.stop()
    assert len(requests) == 2  # one first fetch per source, not per plugin
    snapshot, stale = plugins["TargetLoadPacking"].view.collector.latest()
    assert snapshot is not None and not stale and snapshot.metrics.window.end == 1_700_000_000


def test_sources_differing_only_in_credentials_are_separate_with_distinct_labels() -> None:
    services = TrimaranServices()
    prometheus = {"type": "Prometheus", "address": "http://prom:9090", "insecureSkipVerify": False}
    first = services.collectors.view_for(TargetLoadPackingArgs.model_validate({"metricProvider": prometheus}))
    second = services.collectors.view_for(
        TargetLoadPackingArgs.model_validate(
            {"metricProvider": {**prometheus, "tokenFile": "/var/run/token"}}
        )
    )
    again = services.collectors.view_for(TargetLoadPackingArgs.model_validate({"metricProvider": prometheus}))
    assert first is again and first is not second
    assert (first.label, second.label) == ("Prometheus http://prom:9090", "Prometheus http://prom:9090 #2")


def test_the_handle_gets_default_services_when_the_runtime_gave_none() -> None:
    handle = Handle()
    services = TrimaranServices.of(handle)
    assert handle.services[SERVICE] is services and TrimaranServices.of(handle) is services


def test_metrics_server_without_an_api_client_fails_when_the_profile_is_built() -> None:
    loaded = load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: s\n  plugins: {multiPoint: {enabled: [{name: TargetLoadPacking}]}}\n",
        catalog=IN_TREE_CATALOG,
    ).config
    with pytest.raises(ValueError, match="KubernetesMetricsServer"):
        Framework(loaded.profiles[0], in_tree_registry(), Handle())


class ScriptedProvider:
    """Answers each window from a script: a WatcherMetrics, or an exception to raise."""

    windows = ("15m", "10m", "5m")

    def __init__(self) -> None:
        self.answers: dict[str, WatcherMetrics | Exception] = {}
        self.calls: list[str] = []
        self.closed = False

    async def fetch(self, window: str) -> WatcherMetrics:
        self.calls.append(window)
        answer = self.answers.get(window, FetchError(f"{window} down"))
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def close(self) -> None:
        self.closed = True


def metrics(window: str, timestamp: int) -> WatcherMetrics:
    return WatcherMetrics(timestamp=timestamp, window=Window(duration=window, start=0, end=timestamp))


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_windows_are_tried_best_first_and_failures_counted() -> None:
    provider, clock, registry = ScriptedProvider(), Clock(1000), CollectorRegistry()
    collector = MetricsCollector("src", provider, TrimaranMetrics(registry), clock=clock)
    assert collector.latest() == (None, False)
    assert math.isnan(
        registry.get_sample_value("secsched_trimaran_metrics_age_seconds", {"source": "src"}) or 0
    )
    provider.answers["10m"] = metrics("10m", 1000)
    assert await collector.refresh()
    assert provider.calls == ["15m", "10m"]
    assert registry.get_sample_value("secsched_trimaran_fetch_errors_total", {"source": "src"}) == 1
    provider.answers["15m"] = metrics("15m", 1010)
    clock.now = 1020
    assert await collector.refresh()
    snapshot, stale = collector.latest(max_age=60)
    assert snapshot is not None and (snapshot.window, stale) == ("15m", False)
    assert registry.get_sample_value("secsched_trimaran_metrics_age_seconds", {"source": "src"}) == 10


async def test_a_failing_source_keeps_its_snapshots_but_they_age() -> None:
    provider, clock = ScriptedProvider(), Clock(1000)
    collector = MetricsCollector("src", provider, TrimaranMetrics(), clock=clock)
    provider.answers["15m"] = metrics("15m", 1000)
    await collector.refresh()
    provider.answers.clear()
    clock.now = 1400
    assert not await collector.refresh()
    snapshot, stale = collector.latest(max_age=300)
    assert snapshot is not None and stale and collector.age(snapshot) == 400
    assert collector.latest(max_age=None) == (snapshot, False)  # parity: any age is trusted


async def test_a_fresher_lesser_window_beats_a_stale_better_one() -> None:
    provider, clock = ScriptedProvider(), Clock(1000)
    collector = MetricsCollector("src", provider, TrimaranMetrics(), clock=clock)
    provider.answers["15m"] = metrics("15m", 1000)
    await collector.refresh()
    provider.answers = {"5m": metrics("5m", 1390)}
    clock.now = 1400
    await collector.refresh()
    snapshot, stale = collector.latest(max_age=300)
    assert snapshot is not None and (snapshot.window, stale) == ("5m", False)
    upstream, _ = collector.latest(max_age=None)
    assert upstream is not None and upstream.window == "15m"  # upstream serves 15m while it has one


async def test_background_refresh_until_stopped() -> None:
    provider = ScriptedProvider()
    provider.answers["15m"] = metrics("15m", 1000)
    collector = MetricsCollector("src", provider, TrimaranMetrics(), interval=0.01)
    await collector.start()
    assert provider.calls == ["15m"]  # the first fetch is done when start returns
    await asyncio.sleep(0.1)
    await collector.stop()
    calls = len(provider.calls)
    assert calls >= 3 and provider.closed
    await asyncio.sleep(0.05)
    assert len(provider.calls) == calls


async def test_an_unexpected_error_does_not_stop_the_loop() -> None:
    provider = ScriptedProvider()
    provider.answers = {window: RuntimeError("bug") for window in provider.windows}
    collector = MetricsCollector("src", provider, TrimaranMetrics(), interval=0.01)
    await collector.start()
    await asyncio.sleep(0.05)
    provider.answers["15m"] = metrics("15m", 1000)
    await asyncio.sleep(0.05)
    await collector.stop()
    assert collector.latest()[0] is not None


async def test_listeners_prepare_a_snapshot_before_it_is_handed_out() -> None:
    """A view parses a new snapshot during the refresh, before any cycle can read it; a failing
    listener is logged and the snapshot still served."""
    provider, clock = ScriptedProvider(), Clock(1000)
    collector = MetricsCollector("src", provider, TrimaranMetrics(), clock=clock)
    seen: list[tuple[int, bool]] = []

    async def listener(snapshot: Snapshot) -> None:
        await asyncio.sleep(0)
        seen.append((snapshot.metrics.timestamp, collector.latest()[0] is snapshot))

    async def broken(snapshot: Snapshot) -> None:
        raise RuntimeError("bug")

    collector.on_snapshot(listener)
    collector.on_snapshot(broken)
    provider.answers["15m"] = metrics("15m", 1000)
    assert await collector.refresh()
    assert seen == [(1000, False)]  # not handed out while being prepared
    latest = collector.latest()[0]
    assert latest is not None and latest.metrics.timestamp == 1000
