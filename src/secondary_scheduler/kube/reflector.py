"""List+watch that never loses an event: resourceVersion, bookmarks, relist on 410 Gone.

The handler sees one `replace(items)` after every (re)list, then `event(type, obj)` for
each change. A cache built on it therefore stays right across watch timeouts, API server
restarts and compaction, which is what kube-scheduler's informers guarantee.

Failures are retried with client-go's reflector backoff (0.8 s doubling to 30 s) and made
visible at the default log level, as client-go logs "Failed to watch": the first failure of
a kind at once (with what to do about a 401 or 403), the same failure again at most once a
minute with a count, and the recovery. A first list the API server does not answer within
10 s is reported while the client keeps retrying, so a scheduler pointed at an unreachable
API server says so instead of waiting in silence.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from typing import Any, Protocol

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable, CredentialsUnavailable

log = logging.getLogger(__name__)

INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0
"""client-go's reflector: 800 ms, doubling up to 30 s, reset after a healthy watch."""
REPEAT_LOG_SECONDS = 60.0
"""The same failure is logged again at most this often (with how many times it happened)."""
SLOW_LIST_SECONDS = 10.0


class WatchHandler(Protocol):
    def replace(self, items: list[JSON]) -> None: ...

    def event(self, kind: str, obj: JSON) -> None: ...


class _Expired(Exception):
    """The watch's resourceVersion is too old: only a fresh list can resynchronise."""


SCHEDULER_RBAC = (
    "grant it the system:kube-scheduler and system:volume-scheduler ClusterRoles (kube-scheduler's RBAC)"
)


def failure_hint(error: Exception, rbac: str = SCHEDULER_RBAC) -> str:
    """What to do about a failed list or watch, for the log line (`rbac`: how this identity gets rights)."""
    if isinstance(error, ApiError):
        if error.status == 401:
            return (
                "the API server rejected the credentials: check the kubeconfig's token or client "
                "certificate (an expired or deleted ServiceAccount token?)"
            )
        if error.status == 403:
            return f"this identity may not do that: {rbac}"
        if error.status == 404:
            return "the API server does not serve this resource (an API or CRD missing?)"
        return "retrying"
    if isinstance(error, CredentialsUnavailable):
        return (
            "the kubeconfig user's credential plugin failed (its own output is above): fix it or log in again"
        )
    return "is the API server running and reachable from here (address, port, firewall, proxy)?"


_recent_causes: dict[tuple[int, str], float] = {}
"""(client, cause) -> when it was last logged: every informer of a client fails alike when the API
server is unreachable, and one line says it for all of them."""


def _first_to_report(client: ApiClient, cause: str) -> bool:
    key, now = (id(client), cause), time.monotonic()
    if now - _recent_causes.get(key, -float("inf")) < REPEAT_LOG_SECONDS:
        return False
    _recent_causes[key] = now
    return True


def _cause(error: Exception) -> str:
    """An unreachable server's cause without the path, so all informers' failures read alike
    (a 401 too: the credentials are the client's, not the resource's)."""
    if isinstance(error, ApiError) and error.status == 401:
        return "401"
    text = str(error)
    if isinstance(error, ApiUnavailable) and ": " in text:
        text = text.split(": ", 1)[1].rsplit(" (API server ", 1)[0]
    return text


class _FailureLog:
    """One reflector's failure reporting: loud once, then quiet but counted, then a recovery line."""

    def __init__(self, name: str, client: ApiClient) -> None:
        self.name = name
        self.client = client
        self.last_message: str | None = None
        self.last_logged = -float("inf")
        self.failures = 0
        self.unlogged = 0

    def failed(self, what: str, error: Exception, retry_in: float, *, quiet_first: bool = False) -> None:
        self.failures += 1
        message = f"{self.name}: {what} failed: {error}"
        now = time.monotonic()
        if message != self.last_message or now - self.last_logged >= REPEAT_LOG_SECONDS:
            again = (
                f" ({self.unlogged + 1} times since the last report)" if message == self.last_message else ""
            )
            level = logging.INFO if quiet_first and self.failures == 1 else logging.ERROR
            shared = isinstance(error, ApiUnavailable) or (
                isinstance(error, ApiError) and error.status == 401
            )
            if shared and not _first_to_report(self.client, _cause(error)):
                level = logging.DEBUG  # another informer of this client said the same just now
            log.log(level, "%s%s: %s; retrying in %.1fs", message, again, failure_hint(error), retry_in)
            self.last_message, self.last_logged, self.unlogged = message, now, 0
        else:
            self.unlogged += 1

    def succeeded(self, what: str) -> None:
        if self.failures > 1 or (self.failures == 1 and self.last_message is not None):
            log.info("%s: %s works again after %d failed attempt(s)", self.name, what, self.failures)
        self.failures, self.unlogged, self.last_message = 0, 0, None


class Reflector:
    """Keeps one handler in step with one collection (optionally filtered by selectors)."""

    def __init__(
        self,
        client: ApiClient,
        path: str,
        handler: WatchHandler,
        *,
        params: Mapping[str, Any] | None = None,
        watch_timeout: int = 300,
        name: str | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.handler = handler
        self.params = dict(params or {})
        self.watch_timeout = watch_timeout
        self.name = name or path
        self.resource_version = ""
        self.synced = asyncio.Event()
        self.relists = 0
        self._failures = _FailureLog(self.name, client)

    async def _list(self) -> None:
        watchdog = None if self.synced.is_set() else asyncio.create_task(self._report_slow_list())
        try:
            listing = await self.client.list_all(self.path, self.params)
        finally:
            if watchdog is not None:
                watchdog.cancel()
                # Wait for it without swallowing a cancellation of this task itself (which a
                # suppress(CancelledError) around `await watchdog` would, leaving run() looping).
                await asyncio.wait([watchdog])
        self.resource_version = listing.get("metadata", {}).get("resourceVersion", "")
        self.handler.replace(listing.get("items") or [])
        self.relists += 1
        self.synced.set()

    async def _report_slow_list(self) -> None:
        """The client retries an unreachable API server for a minute before it gives up: say so meanwhile."""
        started = time.monotonic()
        while True:
            await asyncio.sleep(
                SLOW_LIST_SECONDS if time.monotonic() - started < SLOW_LIST_SECONDS else REPEAT_LOG_SECONDS
            )
            cause = self.client.last_transport_error or "no answer yet"
            level = logging.ERROR if _first_to_report(self.client, cause) else logging.DEBUG
            log.log(
                level,
                "%s: the first list from the API server at %s has waited %.0fs (%s); still retrying: %s",
                self.name,
                self.client.connection.server,
                time.monotonic() - started,
                cause,
                failure_hint(ApiUnavailable(cause)),
            )

    async def _watch_once(self) -> None:
        params = {
            **self.params,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": self.watch_timeout,
        }
        async for event in self.client.watch(self.path, params):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Expired()
                raise ApiError(
                    int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", ""))
                )
            self.resource_version = obj.get("metadata", {}).get("resourceVersion", self.resource_version)
            if kind != "BOOKMARK":
                self.handler.event(str(kind), obj)

    async def run(self) -> None:
        """Run until cancelled: list, then watch and re-watch, relisting when history is gone."""
        backoff = INITIAL_BACKOFF
        need_list = True
        while True:
            what = "list" if need_list else "watch"
            try:
                if need_list:
                    await self._list()
                    need_list = False
                    self._failures.succeeded("list")
                    what = "watch"
                await self._watch_once()
                self._failures.succeeded("watch")
                backoff = INITIAL_BACKOFF
            except asyncio.CancelledError:
                raise
            except _Expired:
                log.info("%s: watch history expired (410); relisting", self.name)
                need_list = True
            except (ApiError, ApiUnavailable) as error:
                if isinstance(error, ApiError):
                    need_list = need_list or error.gone
                delay = backoff * random.uniform(1.0, 1.2)
                # A watch dropped once (API server restart, idle proxy) is routine: INFO the first time.
                self._failures.failed(what, error, delay, quiet_first=what == "watch")
                await asyncio.sleep(delay)
                backoff = min(backoff * 2, MAX_BACKOFF)
