"""An async, raw-JSON Kubernetes API client.

Objects stay plain dicts (decoded with orjson): the scheduler's hot paths read a handful
of fields from thousands of pods, and building typed models for each would cost more than
scheduling them. The transport is aiohttp, whose HTTP parser is in C: the benchmark measured
a pure-Python HTTP/2 stack at 3-5 ms of CPU per request, more than the scheduling cycle
itself. Requests are rate-limited like client-go (qps/burst) and retried on the errors that a
restarting or overloaded API server gives.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from secondary_scheduler.httpsession import TRANSPORT_ERRORS, LazySession
from secondary_scheduler.kube import execcredential, oidcauth
from secondary_scheduler.kube.kubeconfig import Connection

log = logging.getLogger(__name__)
HTTP_LOGGER = "secondary_scheduler.kube.http"
"""Every request and its answer, at DEBUG (client-go logs the same at -v=6)."""
http_log = logging.getLogger(HTTP_LOGGER)

JSON = dict[str, Any]
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
TRANSPORT_FAILURE_CODE = "<error>"
"""client-go's code label for a request that got no answer (rest_client_requests_total)."""
MAX_REQUEST_CONNECTIONS = 32
"""HTTP/1.1 connections for requests (watches have their own): more requests in flight wait for
one. client-go multiplexes everything over one HTTP/2 connection; a burst of binds opening a
connection each would spend more on TLS handshakes (ours and the API server's) than it gains."""
TOKEN_FILE_REREAD_SECONDS = 60.0
"""How long a token read from a file is reused (client-go's cached file token source: a minute)."""


class ApiUnavailable(Exception):
    """The API server could not be reached, or dropped the connection, after every retry."""


class CredentialsUnavailable(ApiUnavailable):
    """The kubeconfig's credential plugin failed, so no request could be sent (client-go's
    `getting credentials: ...`, which kubectl reports as a failure to connect)."""


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


def _decode(content: bytes) -> JSON:
    if not content:
        return {}
    try:
        decoded: JSON = orjson.loads(content)
        return decoded
    except orjson.JSONDecodeError:
        return {"message": content[:500].decode(errors="replace")}


def _error(status: int, reason: str, content: bytes) -> ApiError:
    """The API server's Status object as an exception (or the raw text, if it sent none)."""
    body = _decode(content)
    return ApiError(status, str(body.get("reason") or reason), str(body.get("message", "")), body)


def _query(params: Mapping[str, Any] | None) -> dict[str, str] | None:
    """Query values as the API server spells them (aiohttp takes only strings and numbers)."""
    if not params:
        return None
    return {
        key: ("true" if value else "false") if isinstance(value, bool) else str(value)
        for key, value in params.items()
        if value is not None
    }


def _shown(query: Mapping[str, str] | None) -> str:
    return "?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else ""


async def _lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Newline-delimited frames of any size (aiohttp's readline refuses lines over 128 KiB)."""
    pending = b""
    async for chunk in stream.iter_any():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


class ApiClient:
    """One connection pool to one API server, shared by every caller in a process."""

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
        self._server = connection.server.rstrip("/")
        tls = connection.ssl_context() if self._server.startswith("https:") else None
        self._tls = tls
        self._exec: execcredential.ExecAuthenticator | oidcauth.OidcAuthenticator | None = None
        """Where the user's credentials come from when a plugin gives them (exec or oidc)."""
        if connection.exec is not None:
            self._exec = execcredential.authenticator_for(connection.exec)
        elif connection.oidc is not None:
            self._exec = oidcauth.authenticator_for(connection.oidc)
        self._exec_certificate: str | None = None
        """The plugin's client certificate file loaded into the TLS context, to notice rotation."""
        headers = {"User-Agent": user_agent, "Accept": "application/json"}
        self._http = LazySession(
            tls=tls,
            timeout=aiohttp.ClientTimeout(total=timeout, connect=10.0),
            max_connections=MAX_REQUEST_CONNECTIONS,
            headers=headers,
        )
        self._watch_http = LazySession(
            tls=tls,
            timeout=aiohttp.ClientTimeout(total=None, connect=10.0, sock_read=None),
            max_connections=0,  # one per open watch, however many informers there are
            headers=headers,
        )
        self._token = connection.token
        self._token_read_at = -math.inf
        self.last_transport_error: str | None = None
        """The latest connection failure while retrying (None after an answer): for callers' messages."""
        self.on_response: Callable[[str, str], None] | None = None
        """Told (method, code) of every request sent, retries and watches included, with code
        TRANSPORT_FAILURE_CODE when no answer came: client-go's rest_client_requests_total."""

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.close()
        await self._watch_http.close()

    async def _headers(
        self, what: str, content_type: str | None = None
    ) -> tuple[dict[str, str], execcredential.Credentials | None]:
        """Authorization and the body's type for request `what`, and the plugin credentials used."""
        headers = {}
        creds = await self._plugin_credentials(what)
        token = creds.token if creds is not None else self._bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type:
            headers["Content-Type"] = content_type
        return headers, creds

    async def _plugin_credentials(self, what: str) -> execcredential.Credentials | None:
        """The exec plugin's or oidc provider's credentials (run in a thread when the plugin must
        run or the id-token be refreshed: either may be slow)."""
        if self._exec is None:
            return None
        creds = self._exec.cached()
        if creds is None:
            try:
                creds = await asyncio.to_thread(self._exec.credentials)
            except execcredential.CredentialError as error:
                raise CredentialsUnavailable(
                    f"{what}: {self._exec.failure_prefix}{error} (API server {self._server})"
                ) from error
        await self._use_certificate(creds)
        return creds

    async def _use_certificate(self, creds: execcredential.Credentials) -> None:
        """Present the plugin's client certificate; when it rotates, close every open connection
        (watches too) so none goes on with the old one, as client-go's connection tracker does."""
        if self._tls is None or creds.client_cert_file == self._exec_certificate:
            return
        rotated = self._exec_certificate is not None
        if creds.client_cert_file:
            self._tls.load_cert_chain(creds.client_cert_file, creds.client_key_file)
        self._exec_certificate = creds.client_cert_file
        if rotated:
            await self._http.close()
            await self._watch_http.close()

    async def _after_unauthorized(
        self, used: execcredential.Credentials | None
    ) -> execcredential.Credentials | None:
        """The API server refused the plugin's credentials: new ones if the plugin gives different ones."""
        if self._exec is None or used is None:
            return None
        fresh = await asyncio.to_thread(self._exec.refresh_after_unauthorized, used)
        return fresh if fresh is not None and fresh is not used else None

    def _bearer_token(self) -> str | None:
        """The token; a token file is re-read once a minute, not on every request, so a rotated
        (projected ServiceAccount) token is picked up well before the old one expires."""
        if self.connection.token_file and time.monotonic() - self._token_read_at > TOKEN_FILE_REREAD_SECONDS:
            self._token = self.connection.bearer_token()
            self._token_read_at = time.monotonic()
        return self._token

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
        """Send one request; retry transport errors and 429/5xx with backoff until the deadline.

        Raises ApiError for an error answer, ApiUnavailable when no answer came.
        """
        content = orjson.dumps(body) if body is not None else None
        body_type = content_type if content is not None else None
        headers, creds = await self._headers(f"{method} {path}", body_type)
        url, query = self._server + path, _query(params)
        deadline = time.monotonic() + (self.max_retry_seconds if retry else 0)
        delay = 0.2
        reauthenticated = False
        while True:
            await self.limiter.take()
            sent = time.monotonic()
            try:
                async with self._http().request(
                    method, url, params=query, data=content, headers=headers
                ) as response:
                    status, reason = response.status, response.reason or ""
                    payload = await response.read()
                    retry_after = response.headers.get("Retry-After", "")
            except TRANSPORT_ERRORS as error:
                self._observe(method, TRANSPORT_FAILURE_CODE)
                self.last_transport_error = describe_transport_error(error)
                if time.monotonic() + delay > deadline:
                    raise ApiUnavailable(
                        f"{method} {path}: {self.last_transport_error} (API server {self._server})"
                    ) from error
                log.debug("%s %s: %r; retrying in %.1fs", method, path, error, delay)
            else:
                self._observe(method, str(status))
                self.last_transport_error = None
                if http_log.isEnabledFor(logging.DEBUG):
                    elapsed = (time.monotonic() - sent) * 1000
                    target = url + _shown(query)
                    http_log.debug("%s %s %d %s in %.0f ms", method, target, status, reason, elapsed)
                if status < 400:
                    return _decode(payload)
                if status == 401 and not reauthenticated and await self._after_unauthorized(creds):
                    # client-go runs the plugin again on a 401; sending the request once more with
                    # the new credentials spares the caller a failure the next request would not have.
                    reauthenticated = True
                    headers, creds = await self._headers(f"{method} {path}", body_type)
                    continue
                if status not in RETRYABLE_STATUS or time.monotonic() + delay > deadline:
                    raise _error(status, reason, payload)
                if retry_after.isdigit():
                    delay = max(delay, float(retry_after))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _observe(self, method: str, code: str) -> None:
        if self.on_response is not None:
            self.on_response(method, code)

    @property
    def host(self) -> str:
        """The API server's host:port, as client-go's metrics label it."""
        return self._server.split("://", 1)[-1].split("/", 1)[0]

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
        """Stream watch events ({type, object}); ends when the server closes the watch.

        Raises ApiError when the server refuses the watch, ApiUnavailable when the
        connection fails or drops mid-stream (the caller resumes from its resourceVersion).
        """
        await self.limiter.take()
        headers, creds = await self._headers(f"watch {path}")
        try:
            async with self._watch_http().get(
                self._server + path, params=_query({**params, "watch": "true"}), headers=headers
            ) as response:
                self._observe("GET", str(response.status))
                if response.status >= 400:
                    if response.status == 401:
                        await self._after_unauthorized(creds)  # the caller's next watch uses the new ones
                    raise _error(response.status, response.reason or "", await response.read())
                async for line in _lines(response.content):
                    yield orjson.loads(line)
        except TRANSPORT_ERRORS as error:
            self._observe("GET", TRANSPORT_FAILURE_CODE)
            raise ApiUnavailable(
                f"watch {path}: {describe_transport_error(error)} (API server {self._server})"
            ) from error


def describe_transport_error(error: BaseException) -> str:
    """A connection failure in words (aiohttp's reprs name classes, not causes)."""
    if isinstance(error, TimeoutError | asyncio.TimeoutError):
        return "no answer (timed out)"
    text = str(error) or type(error).__name__
    return text


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
