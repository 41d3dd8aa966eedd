"""load-watcher's Prometheus provider: node utilisation from two recording rules.

For a window W it runs the four instant queries load-watcher runs,
``avg_over_time`` and ``stddev_over_time`` of ``instance:node_cpu:ratio`` and
``instance:node_memory_utilisation:ratio`` over ``[W]``, and reports each ratio x 100 as a
percentage of the node named by the sample's ``instance`` label. Any failed query discards
the whole window, as upstream. OpenShift's Thanos querier is the same API behind an https
route that wants a bearer token.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import aiohttp
import orjson

from secondary_scheduler.httpsession import TRANSPORT_ERRORS, LazySession
from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.plugins.trimaran.providers import (
    FETCH_TIMEOUT_SECONDS,
    WINDOWS,
    YIELD_EVERY,
    FetchError,
    watcher_metrics_yielding,
)
from secondary_scheduler.plugins.trimaran.providers.auth import BearerToken, tls_context
from secondary_scheduler.plugins.trimaran.source import MetricSource
from secondary_scheduler.plugins.trimaran.watchermetrics import (
    AVERAGE,
    CPU,
    MEMORY,
    STD,
    Metric,
    WatcherMetrics,
)

log = logging.getLogger(__name__)

CPU_SERIES = "instance:node_cpu:ratio"
MEMORY_SERIES = "instance:node_memory_utilisation:ratio"
NODE_LABEL = "instance"
_FUNCTIONS = (("avg_over_time", AVERAGE), ("stddev_over_time", STD))
_SERIES = ((CPU_SERIES, CPU), (MEMORY_SERIES, MEMORY))
SERIES_OF = {CPU: CPU_SERIES, MEMORY: MEMORY_SERIES}


def queries(window: str) -> list[tuple[str, str, str, str]]:
    """(PromQL, series, resource type, operator) in load-watcher's order: averages first, cpu first."""
    return [
        (f"{function}({series}[{window}])", series, resource, operator)
        for function, operator in _FUNCTIONS
        for series, resource in _SERIES
    ]


class PrometheusProvider:
    windows: tuple[str, ...] = WINDOWS

    def __init__(
        self,
        source: MetricSource,
        api: ApiClient | None = None,
        *,
        clock: Callable[[], float] = time.time,
        timeout: float = FETCH_TIMEOUT_SECONDS,
    ) -> None:
        self.address = source.address.rstrip("/")
        self.clock = clock
        self.timeout = timeout
        self._token = BearerToken(source, api)
        self._http = LazySession(tls=tls_context(source), timeout=aiohttp.ClientTimeout(total=timeout))

    async def fetch(self, window: str) -> WatcherMetrics:
        token = await self._token.get()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        planned = queries(window)
        answers = await asyncio.gather(
            *(self._query(promql, headers) for promql, *_ in planned), return_exceptions=True
        )
        samples: list[list[tuple[str, float]]] = []
        for answer in answers:
            if isinstance(answer, BaseException):
                if isinstance(answer, FetchError):
                    raise FetchError(f"window {window} discarded: {answer}") from answer
                raise answer
            samples.append(answer)
        # Thousands of samples: built a slice at a time, so that scheduling goes on meanwhile.
        nodes: dict[str, list[Metric]] = {}
        built = 0
        for (promql, series, resource, operator), answer in zip(planned, samples, strict=True):
            for node, ratio in answer:
                metric = Metric(
                    name=series, type=resource, operator=operator, rollup=window, value=ratio * 100
                )
                nodes.setdefault(node, []).append(metric)
                built += 1
                if built % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
            log.debug("%s: %d series", promql, len(answer))
        return await watcher_metrics_yielding(nodes, window, "Prometheus", self.clock)

    async def _query(self, promql: str, headers: dict[str, str]) -> list[tuple[str, float]]:
        """(node, ratio) of each sample of an instant query."""
        url = f"{self.address}/api/v1/query"
        try:
            async with self._http().get(url, params={"query": promql}, headers=headers) as response:
                status, reason, content = response.status, response.reason or "", await response.read()
        except TRANSPORT_ERRORS as error:
            raise FetchError(f"{promql}: {_transport_problem(error, self.timeout)}") from error
        if status in (401, 403):
            raise FetchError(
                f"{promql}: HTTP {status} from {url}: the token is missing or not allowed "
                "(set metricProvider.tokenFile or tokenSecretRef; on OpenShift the token's account needs "
                "the cluster-monitoring-view role)"
            )
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError as error:
            raise FetchError(
                f"{promql}: HTTP {status} from {url} is not Prometheus' JSON API "
                "(check metricProvider.address: it should be the Prometheus or Thanos querier base URL)"
            ) from error
        if status >= 400 or not isinstance(body, dict) or body.get("status") != "success":
            detail = body.get("error") if isinstance(body, dict) else None
            raise FetchError(f"{promql}: HTTP {status}: {detail or reason}")
        data = body.get("data") or {}
        if data.get("resultType") != "vector":
            log.error("%s: Prometheus answered a %s, not a vector: ignored", promql, data.get("resultType"))
            return []
        try:
            return [
                (str((sample.get("metric") or {}).get(NODE_LABEL, "")), float(sample["value"][1]))
                for sample in data.get("result") or ()
            ]
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise FetchError(f"{promql}: a sample is not [time, value] ({error!r})") from error

    async def close(self) -> None:
        await self._http.close()


def _transport_problem(error: Exception, timeout: float) -> str:
    """The error, with the fix for the usual cause (an untrusted certificate, a wrong address)."""
    text = str(error) or type(error).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return (
            f"{text}: the server's certificate is not trusted; set metricProvider.caFile to its CA bundle "
            "(or insecureSkipVerify: true to skip verification)"
        )
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g}s ({type(error).__name__})"
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"{text}: cannot connect; check metricProvider.address"
    return text
