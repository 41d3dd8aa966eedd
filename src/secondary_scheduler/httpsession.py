"""The one way this package opens HTTP client sessions (aiohttp): lazily, inside the event loop.

aiohttp binds a session to the loop that is running when it is made, while the objects that
hold one (the API client, the metric providers) are often built before any loop runs (in a
CLI command, a config loader, a test fixture). So the session is opened on first use.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

import aiohttp

TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError)
"""What a request raises when no HTTP answer came: refused, reset, TLS failure, timeout."""


class LazySession:
    """An aiohttp session made on first call, and made again if it was closed.

    ``max_connections``: connections open at once (requests beyond wait for one); 0 for no limit.
    """

    def __init__(
        self,
        *,
        tls: ssl.SSLContext | None,
        timeout: aiohttp.ClientTimeout,
        max_connections: int = 100,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._tls = tls
        self._timeout = timeout
        self._max_connections = max_connections
        self._headers = dict(headers or {})
        self._session: aiohttp.ClientSession | None = None

    def __call__(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                ssl=self._tls if self._tls is not None else True, limit=self._max_connections
            )
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, headers=self._headers
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
