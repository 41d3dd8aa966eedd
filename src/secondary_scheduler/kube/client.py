"""An async, raw-JSON Kubernetes API client.

Objects stay plain dicts (decoded with orjson): the scheduler's hot paths read a handful
of fields from thousands of pods, and building typed models for each would cost more than
scheduling them. Requests are rate-limited like client-go (qps/burst) and retried on the
errors that a restarting or overloaded API server gives.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from .kubeconfig import Connection

log = logging.getLogger(__name__)

JSON = dict[str, Any]
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class ApiError(Exception):
    """A non-success answer from the API server, with its Status fields."""

    def __init__(self, status: int, reason: str, message: str, body: JSON | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410


class TokenBucket:
    """client-go's flowcontrol: `qps` tokens a second, at most `burst` saved up."""

    def __init__(self, qps: float, burst: int) -> None:
        self.rate = qps
        self.capacity = max(1, burst)
        self.tokens = float(self.capacity)
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        if self.rate <= 0:  # qps <= 0 means unlimited, as in client-go
            return
        async with self._lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                await asyncio.sleep((1 - self.tokens) / self.rate)


def request_headers(connection: Connection, content_type: str | None = None) -> dict[str, str]:
    """Authorization (a token file is re-read, so rotated tokens work) and the body's type."""
    headers = {}
    token = connection.bearer_token()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if content_type:
        headers["Content-Type"] = content_type
    return headers


def resource_path(
    api_version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """`/api/v1/namespaces/ns/pods/name/binding` and friends, from their parts."""
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    parts = [root]
    if namespace:
        parts.append(f"namespaces/{quote(namespace)}")
    parts.append(plural)
    if name:
        parts.append(quote(name))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


def _decode(response: httpx.Response) -> JSON:
    if not response.content:
        return {}
    try:
        decoded: JSON = orjson.loads(response.content)
        return decoded
    except orjson.JSONDecodeError:
        return {"message": response.text[:500]}


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    body = _decode(response)
    raise ApiError(
        response.status_code,
        str(body.get("reason", response.reason_phrase)),
        str(body.get("message", response.text[:300])),
        body,
    )


class ApiClient:
    """One connection pool (HTTP/2) to one API server, shared by every caller in a process."""

    def __init__(
        self,
        connection: Connection,
        *,
        qps: float = 50,
        burst: int = 100,
        timeout: float = 30.0,
        max_retry_seconds: float = 60.0,
        user_agent: str = "secsched",
    ) -> None:
        self.connection = connection
        self.limiter = TokenBucket(qps, burst)
        self.max_retry_seconds = max_retry_seconds
        self._http = httpx.AsyncClient(
            base_url=connection.server,
            verify=connection.ssl_context(),
            http2=True,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            headers={"User-Agent": user_agent, "Accept": "application/json"},
        )

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        return request_headers(self.connection, content_type)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry: bool = True,
    ) -> JSON:
        """Send one request; retry transport errors and 429/5xx with backoff until the deadline."""
        content = orjson.dumps(body) if body is not None else None
        deadline = time.monotonic() + (self.max_retry_seconds if retry else 0)
        delay = 0.2
        while True:
            await self.limiter.take()
            try:
                response = await self._http.request(
                    method,
                    path,
                    params=params,
                    content=content,
                    headers=self._headers(content_type if content is not None else None),
                )
            except httpx.TransportError as error:
                if time.monotonic() + delay > deadline:
                    raise
                log.debug("%s %s: %s; retrying in %.1fs", method, path, error, delay)
            else:
                if response.status_code not in RETRYABLE_STATUS or time.monotonic() + delay > deadline:
                    _raise_for(response)
                    return _decode(response)
                retry_after = response.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    delay = max(delay, float(retry_after))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> JSON:
        return await self.request("GET", path, params=params)

    async def create(self, path: str, body: JSON, params: Mapping[str, Any] | None = None) -> JSON:
        return await self.request("POST", path, body=body, params=params)

    async def replace(self, path: str, body: JSON) -> JSON:
        return await self.request("PUT", path, body=body)

    async def patch(
        self, path: str, body: Any, *, patch_type: str = "merge", params: Mapping[str, Any] | None = None
    ) -> JSON:
        """`merge`, `strategic`, `json` or `apply` (server-side apply needs params fieldManager)."""
        types = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
            "apply": "application/apply-patch+yaml",
        }
        return await self.request("PATCH", path, body=body, content_type=types[patch_type], params=params)

    async def delete(self, path: str, params: Mapping[str, Any] | None = None) -> JSON:
        return await self.request("DELETE", path, params=params)

    async def apply(self, obj: JSON, field_manager: str, force: bool = True) -> JSON:
        """Server-side apply of a whole object, the way `kubectl apply --server-side` does."""
        meta = obj["metadata"]
        path = resource_path(obj["apiVersion"], plural_of(obj["kind"]), meta.get("namespace"), meta["name"])
        params = {"fieldManager": field_manager, "force": "true" if force else "false"}
        return await self.patch(path, obj, patch_type="apply", params=params)

    async def list_all(self, path: str, params: Mapping[str, Any] | None = None, page: int = 500) -> JSON:
        """A full list, fetched in pages so that a large collection never times out."""
        query = dict(params or {})
        query["limit"] = page
        items: list[JSON] = []
        while True:
            chunk = await self.get(path, query)
            items.extend(chunk.get("items") or [])
            cont = chunk.get("metadata", {}).get("continue")
            if not cont:
                chunk["items"] = items
                return chunk
            query["continue"] = cont

    async def watch(self, path: str, params: Mapping[str, Any]) -> AsyncIterator[JSON]:
        """Stream watch events ({type, object}); ends when the server closes the watch."""
        query = {**params, "watch": "true"}
        await self.limiter.take()
        timeout = httpx.Timeout(None, connect=10.0)
        async with self._http.stream(
            "GET", path, params=query, headers=self._headers(), timeout=timeout
        ) as resp:
            if resp.status_code >= 400:
                await resp.aread()
                _raise_for(resp)
            async for line in resp.aiter_lines():
                if line:
                    yield orjson.loads(line)


_IRREGULAR_PLURALS = {
    "Endpoints": "endpoints",
    "NetworkPolicy": "networkpolicies",
    "PriorityClass": "priorityclasses",
    "StorageClass": "storageclasses",
    "Ingress": "ingresses",
    "IngressClass": "ingressclasses",
}


def plural_of(kind: str) -> str:
    """The resource name of a kind, by Kubernetes' own regular rule (and its few exceptions)."""
    if kind in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[kind]
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"
