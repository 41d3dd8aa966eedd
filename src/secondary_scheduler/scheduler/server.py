"""The scheduler's HTTP(S) endpoints: /healthz, /livez, /readyz and /metrics.

Served over HTTPS when given a certificate (as the operator's Deployment does, on 10259),
with the TLS minimum version and cipher suites from kube-scheduler's flags, and every request
authenticated and authorised as kube-scheduler's are (scheduler/delegatedauth.py).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from secondary_scheduler.scheduler.delegatedauth import DelegatedAuth

# Go's names for TLS versions, as --tls-min-version takes them.
TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}


def go_cipher_to_openssl(name: str) -> str:
    """TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256 (OpenSSL's spelling)."""
    text = name.removeprefix("TLS_").replace("_WITH_", "_")
    parts = text.split("_")
    out: list[str] = []
    index = 0
    while index < len(parts):
        part = parts[index]
        if part == "AES" and index + 1 < len(parts) and parts[index + 1].isdigit():
            out.append(f"AES{parts[index + 1]}")
            index += 2
            continue
        if part == "CHACHA20" and index + 1 < len(parts) and parts[index + 1] == "POLY1305":
            out.append("CHACHA20-POLY1305")
            index += 2
            continue
        out.append(part)
        index += 1
    return "-".join(out)


def tls_context(
    cert_file: str, key_file: str, min_version: str | None, cipher_suites: list[str]
) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    if min_version:
        if min_version not in TLS_VERSIONS:
            raise ValueError(f"--tls-min-version={min_version}: use one of {', '.join(TLS_VERSIONS)}")
        context.minimum_version = TLS_VERSIONS[min_version]
    if cipher_suites:
        # TLS 1.3 suites are not configurable in OpenSSL; the flag constrains TLS 1.2 and below, as in Go.
        legacy = [go_cipher_to_openssl(name) for name in cipher_suites if "_WITH_" in name]
        if legacy:
            context.set_ciphers(":".join(legacy))
    return context


class HealthServer:
    """Liveness follows the event loop; readiness follows `ready()` (informers synced)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        ready: Callable[[], bool],
        extra_routes: Sequence[web.RouteDef] = (),
        auth: DelegatedAuth | None = None,
    ) -> None:
        self.registry = registry
        self.ready = ready
        self.extra_routes = list(extra_routes)
        self.auth = auth
        """Checks every request first; None only where nothing is served to others (tests)."""
        self._runner: web.AppRunner | None = None

    async def _ok(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _ready(self, _: web.Request) -> web.Response:
        return (
            web.Response(text="ok") if self.ready() else web.Response(status=503, text="informers not synced")
        )

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def start(
        self,
        address: str,
        port: int,
        context: ssl.SSLContext | None,
        *,
        reuse_port: bool = False,
        reuse_address: bool = False,
    ) -> None:
        app = web.Application(middlewares=[self.auth.middleware] if self.auth is not None else [])
        app.add_routes(
            [
                web.get("/healthz", self._ok),
                web.get("/livez", self._ok),
                web.get("/readyz", self._ready),
                web.get("/metrics", self._metrics),
                *self.extra_routes,
            ]
        )
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            address,
            port,
            ssl_context=context,
            reuse_port=reuse_port or None,
            reuse_address=reuse_address or None,
        )
        await site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.auth is not None:
            await self.auth.close()
