"""A lean client for the benchmark's own load: creating pods and watching them.

On a 2-CPU machine the client shares the CPUs with the API server and the scheduler under
test, so every millisecond it spends per pod is taken from both. httpx (HTTP/2 over
anyio, all Python) costs 3-5 ms of CPU per request here; aiohttp (C parsers; installed
with kopf) about 0.6 ms. Only these two hot operations use it; everything else the
benchmark does goes through the project's ApiClient.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import orjson

from secondary_scheduler.kube.client import RETRYABLE_STATUS, ApiError, request_headers
from secondary_scheduler.kube.kubeconfig import Connection

JSON = dict[str, Any]


class LoadClient:
    def __init__(
        self, connection: Connection, connections: int = 64, max_retry_seconds: float = 60.0
    ) -> None:
        self.connection = connection
        self.max_retry_seconds = max_retry_seconds
        self._session: aiohttp.ClientSession | None = None
        self._connections = connections

    async def __aenter__(self) -> LoadClient:
        connector = aiohttp.TCPConnector(ssl=self.connection.ssl_context(), limit=self._connections)
        self._session = aiohttp.ClientSession(
            self.connection.server,
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, connect=10, sock_read=60),
            headers={"Accept": "application/json", "User-Agent": "secsched-bench"},
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("use LoadClient in `async with`")
        return self._session

    async def create(self, path: str, body: JSON) -> None:
        """POST an object; retry what an overloaded API server answers (429, 5xx, dropped connections)."""
        await self._send("POST", path, data=orjson.dumps(body), content_type="application/json")

    async def delete(self, path: str, params: Mapping[str, str]) -> None:
        """DELETE an object; one already gone is fine. Retries like ``create``."""
        await self._send("DELETE", path, params=params, gone_is_fine=True)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        params: Mapping[str, str] | None = None,
        content_type: str | None = None,
        gone_is_fine: bool = False,
    ) -> None:
        deadline = time.monotonic() + self.max_retry_seconds
        delay = 0.2
        while True:
            try:
                async with self.session.request(
                    method,
                    path,
                    data=data,
                    params=params,
                    headers=request_headers(self.connection, content_type),
                ) as resp:
                    content = await resp.read()
                    if resp.status < 400 or (gone_is_fine and resp.status == 404):
                        return
                    if resp.status not in RETRYABLE_STATUS or time.monotonic() + delay > deadline:
                        raise _api_error(resp.status, resp.reason or "", content)
            except (aiohttp.ClientConnectionError, TimeoutError):
                if time.monotonic() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(2 * delay, 5.0)

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[JSON]:
        """Watch events ({type, object}) until the server ends the watch."""
        query = {**params, "watch": "true"}
        timeout = aiohttp.ClientTimeout(total=None, connect=10, sock_read=None)
        async with self.session.get(
            path, params=query, headers=request_headers(self.connection), timeout=timeout
        ) as resp:
            if resp.status >= 400:
                raise _api_error(resp.status, resp.reason or "", await resp.read())
            async for line in resp.content:
                if line.strip():
                    yield orjson.loads(line)


def _api_error(status: int, reason: str, content: bytes) -> ApiError:
    try:
        body = orjson.loads(content) if content else {}
    except orjson.JSONDecodeError:
        body = {"message": content[:300].decode(errors="replace")}
    return ApiError(status, str(body.get("reason", reason)), str(body.get("message", "")), body)
