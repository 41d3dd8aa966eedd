"""kube-scheduler's delegated authentication and authorization of its secure port.

Built from kube-scheduler's flags the way k8s.io/apiserver's DelegatingAuthenticationOptions
and DelegatingAuthorizationOptions build theirs, with kube-scheduler's settings (kubeconfigs
optional, lookup failures tolerated):

- the API clients: --authentication-kubeconfig / --authorization-kubeconfig, else the pod's
  in-cluster config, else none: without an authentication client every caller is anonymous
  (client certificates still work with --client-ca-file); without an authorization client
  only system:masters and the always-allow paths are allowed, everything else is 403;
- the client CA: --client-ca-file, else the `client-ca-file` key of ConfigMap
  kube-system/extension-apiserver-authentication (unless --authentication-skip-lookup),
  re-read every minute; the front-proxy settings likewise (--requestheader-*, else the
  ConfigMap's requestheader-* keys);
- then, per request, aiohttp middleware: 401 with an `Unauthorized` Status when credentials
  fail, 403 with a `forbidden: User "…" cannot get path "/metrics"` Status when the user may
  not, 500 when a SubjectAccessReview cannot be made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.scheduler.authn import (
    AuthenticationError,
    CaBundle,
    CertificateAuthenticator,
    Credentials,
    RequestAuthenticator,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    TokenReviewer,
    UserInfo,
    parse_pem_bundle,
)
from secondary_scheduler.scheduler.authz import (
    MASTERS,
    AlwaysAllowPaths,
    Attributes,
    Authorizer,
    Decision,
    PrivilegedGroups,
    SubjectAccessReviewer,
    UnionAuthorizer,
)

log = logging.getLogger(__name__)

AUTH_CONFIGMAP_NAMESPACE = "kube-system"
AUTH_CONFIGMAP_NAME = "extension-apiserver-authentication"
AUTH_CONFIGMAP_PATH = f"/api/v1/namespaces/{AUTH_CONFIGMAP_NAMESPACE}/configmaps/{AUTH_CONFIGMAP_NAME}"
AUTH_READER_ROLE = "extension-apiserver-authentication-reader"
CA_REFRESH_SECONDS = 60.0
"""How often the ConfigMap's CAs are re-read (the dynamic CA controller's periodic re-check)."""
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_CACHE_TTL = 10.0
REVIEW_TIMEOUT = 10.0
"""TokenReview and SubjectAccessReview request timeout (k8s.io/apiserver's 10s)."""
REVIEW_RETRY_SECONDS = 4.0
"""Retries of a failed review: about what the webhook backoff (0.5s x1.5, 5 steps) spends."""


class DelegatedAuthError(RuntimeError):
    """The delegated authentication/authorization cannot be set up; the message names the flag."""


@dataclass(frozen=True)
class DelegatedAuthOptions:
    """kube-scheduler's authentication and authorization flags, defaults as kube-scheduler's."""

    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    token_cache_ttl: float = DEFAULT_CACHE_TTL
    authorized_ttl: float = DEFAULT_CACHE_TTL
    unauthorized_ttl: float = DEFAULT_CACHE_TTL
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = (MASTERS,)
    client_ca_file: str | None = None
    skip_lookup: bool = False
    tolerate_lookup_failure: bool = True
    requestheader_client_ca_file: str | None = None
    requestheader: RequestHeaderConfig = field(
        default_factory=lambda: RequestHeaderConfig(
            ("x-remote-user",), (), ("x-remote-group",), ("x-remote-extra-",), ()
        )
    )

    def validate(self) -> None:
        """k8s.io/apiserver's checks of the request-header flags, as DelegatedAuthError."""
        config = self.requestheader
        for flag, values in (
            ("--requestheader-username-headers", config.username_headers),
            ("--requestheader-group-headers", config.group_headers),
            ("--requestheader-extra-headers-prefix", config.extra_header_prefixes),
            ("--requestheader-allowed-names", config.allowed_names),
            ("--requestheader-uid-headers", config.uid_headers),
        ):
            if any(not value.strip() for value in values):
                raise DelegatedAuthError(f"{flag}: an empty value in {','.join(values)!r}: remove it")
        if config.uid_headers and not any(h.lower() == "x-remote-uid" for h in config.uid_headers):
            raise DelegatedAuthError(
                f"--requestheader-uid-headers={','.join(config.uid_headers)}: set without the standard "
                "X-Remote-Uid header, so API aggregation will not work: add X-Remote-Uid"
            )
        AlwaysAllowPaths(self.always_allow_paths)  # raises ValueError on a misplaced `*`


class TrustStore:
    """The CAs the serving TLS context verifies client certificates against.

    OpenSSL's store only grows, so the context may still trust a CA its source has since
    dropped; the authenticators therefore check the issuer again against their current bundle.
    """

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.loaded: set[bytes] = set()

    def add(self, certificates: Sequence[x509.Certificate]) -> None:
        for certificate in certificates:
            fingerprint = certificate.fingerprint(hashes.SHA256())
            if fingerprint in self.loaded:
                continue
            self.context.load_verify_locations(cadata=certificate.public_bytes(serialization.Encoding.DER))
            self.loaded.add(fingerprint)
        if self.loaded:
            # Go's RequestClientCert: a certificate is asked for but not required.
            self.context.verify_mode = ssl.CERT_OPTIONAL

    def is_exactly(self, bundle: CaBundle) -> bool:
        return self.loaded == {
            certificate.fingerprint(hashes.SHA256()) for certificate in bundle.certificates
        }


def _connection(path: str | None, flag: str, purpose: str) -> kubeconfig.Connection | None:
    """The flag's kubeconfig, else in-cluster, else None (kube-scheduler's kubeconfigs are optional)."""
    if path:
        try:
            return kubeconfig.from_kubeconfig(path)
        except kubeconfig.KubeconfigError as error:
            raise DelegatedAuthError(f"{flag}={path}: {error}") from error
    if not os.environ.get("KUBERNETES_SERVICE_HOST") or not os.environ.get("KUBERNETES_SERVICE_PORT"):
        return None
    try:
        return kubeconfig.in_cluster()
    except kubeconfig.KubeconfigError as error:
        log.warning("failed to read in-cluster kubeconfig for delegated %s: %s", purpose, error)
        return None


def _client(connection: kubeconfig.Connection, agent: str) -> ApiClient:
    # k8s.io/apiserver gives these clients QPS 200 and burst 400.
    return ApiClient(
        connection,
        qps=200,
        burst=400,
        timeout=REVIEW_TIMEOUT,
        max_retry_seconds=REVIEW_RETRY_SECONDS,
        user_agent=f"secsched-scheduler/{agent}",
    )


def _read_pem_file(path: str, flag: str) -> list[x509.Certificate]:
    try:
        with open(path, "rb") as handle:
            return parse_pem_bundle(handle.read(), f"{flag}={path}")
    except OSError as error:
        raise DelegatedAuthError(
            f"{flag}={path}: cannot be read ({error.strerror or error}): check the path"
        ) from error
    except ValueError as error:
        raise DelegatedAuthError(f"{error}: give a PEM bundle of CA certificates") from error


def _json_list(data: dict[str, Any], key: str) -> tuple[str, ...]:
    text = data.get(key) or ""
    if not text:
        return ()
    values = orjson.loads(text)
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise ValueError(f"{key}: not a JSON list of strings")
    return tuple(values)


class DelegatedAuth:
    """Authenticates and authorises each request to the secure port (aiohttp middleware)."""

    def __init__(
        self,
        authenticator: RequestAuthenticator,
        authorizer: Authorizer,
        clients: Sequence[ApiClient] = (),
    ) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.clients = list(clients)
        self.tasks: list[asyncio.Task[None]] = []

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        refusal = await self.check(request)
        response = refusal if refusal is not None else await handler(request)
        if "Cache-Control" not in response.headers:
            response.headers["Cache-Control"] = "no-cache, private"
        return response

    async def check(self, request: web.Request) -> web.Response | None:
        """None when the request may go on; the 401, 403 or 500 answer otherwise."""
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        peer = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        credentials = Credentials(tuple(request.headers.items()), peer or None)
        try:
            user = await self.authenticator.authenticate(credentials)
        except AuthenticationError as error:
            log.error("Unable to authenticate the request: %s", error)
            return status_response(401, "Unauthorized", "Unauthorized")
        attributes = Attributes(user, request.method.lower(), request.path)
        verdict = await self.authorizer.authorize(attributes)
        if verdict.decision is Decision.ALLOW:
            return None
        if verdict.error:
            uri = orjson.dumps(request.raw_path).decode()
            return web.Response(
                status=500, text=_sanitize(f"Internal Server Error: {uri}: {verdict.error}") + "\n"
            )
        log.debug("Forbidden: URI %s reason %r", request.raw_path, verdict.reason)
        return forbidden_response(user, attributes, verdict.reason)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for client in self.clients:
            await client.close()


def _sanitize(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def status_response(code: int, reason: str, message: str, details: bool = False) -> web.Response:
    """A metav1.Status answer, as k8s.io/apiserver writes it."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        status["details"] = {}
    status["code"] = code
    return web.Response(status=code, body=orjson.dumps(status) + b"\n", content_type="application/json")


def forbidden_response(user: UserInfo, attributes: Attributes, reason: str) -> web.Response:
    message = _sanitize(f'User "{user.name}" cannot {attributes.verb} path "{attributes.path}"')
    if reason:
        message = f"{message}: {reason}"
    response = status_response(403, "Forbidden", f"forbidden: {message}", details=True)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


class _FrontProxy:
    """The request-header settings in force (the ConfigMap may change them)."""

    def __init__(self, config: RequestHeaderConfig) -> None:
        self.config = config


async def start(options: DelegatedAuthOptions, context: ssl.SSLContext) -> DelegatedAuth:
    """Open the review clients, load the client CAs into `context`, start the ConfigMap refresher."""
    options.validate()
    authn_connection = _connection(
        options.authentication_kubeconfig, "--authentication-kubeconfig", "authentication"
    )
    authz_connection = _connection(
        options.authorization_kubeconfig, "--authorization-kubeconfig", "authorization"
    )
    authn_client = _client(authn_connection, "authentication") if authn_connection else None
    authz_client = _client(authz_connection, "authorization") if authz_connection else None
    clients = [client for client in (authn_client, authz_client) if client is not None]
    try:
        auth = await _build(options, context, authn_client, authz_client)
    except BaseException:
        for client in clients:
            await client.close()
        raise
    auth.clients = clients
    return auth


async def _build(
    options: DelegatedAuthOptions,
    context: ssl.SSLContext,
    authn_client: ApiClient | None,
    authz_client: ApiClient | None,
) -> DelegatedAuth:
    trust = TrustStore(context)
    client_ca = CaBundle("client-ca")
    front_proxy_ca = CaBundle("request-header")
    front_proxy: _FrontProxy | None = None
    if options.client_ca_file:
        client_ca.replace(_read_pem_file(options.client_ca_file, "--client-ca-file"))
        trust.add(client_ca.certificates)
    if options.requestheader_client_ca_file:
        front_proxy_ca.replace(
            _read_pem_file(options.requestheader_client_ca_file, "--requestheader-client-ca-file")
        )
        trust.add(front_proxy_ca.certificates)
        front_proxy = _FrontProxy(options.requestheader)
    lookup_client_ca = not options.client_ca_file and not options.skip_lookup
    lookup_front_proxy = not options.requestheader_client_ca_file and not options.skip_lookup
    refresh: Callable[[], Awaitable[None]] | None = None
    if authn_client is None:
        for key, wanted, kind in (
            ("client-ca-file", lookup_client_ca, ""),
            ("requestheader-client-ca-file", lookup_front_proxy, "request-header "),
        ):
            if wanted:
                log.warning(
                    "No authentication-kubeconfig provided in order to lookup %s in configmap/%s in %s, "
                    "so %sclient certificate authentication won't work.",
                    key,
                    AUTH_CONFIGMAP_NAME,
                    AUTH_CONFIGMAP_NAMESPACE,
                    kind,
                )
    elif lookup_client_ca or lookup_front_proxy:
        api = authn_client
        proxy = _FrontProxy(RequestHeaderConfig((), (), (), (), ())) if lookup_front_proxy else None

        async def read_configmap() -> None:
            await _load_configmap(
                api,
                trust,
                client_ca if lookup_client_ca else None,
                front_proxy_ca if lookup_front_proxy else None,
                proxy,
            )

        refresh = read_configmap
        try:
            await read_configmap()
            front_proxy = front_proxy or proxy
        except (ApiError, ApiUnavailable, ValueError) as error:
            # The front proxy is then off for good, as upstream's; the client CA keeps being re-read.
            _tolerate_lookup_failure(error, options.tolerate_lookup_failure)
    uses_client_ca = bool(options.client_ca_file) or (refresh is not None and lookup_client_ca)
    proxy_now = front_proxy
    authenticator = RequestAuthenticator(
        request_header=RequestHeaderAuthenticator(
            front_proxy_ca, lambda: proxy_now.config, lambda: trust.is_exactly(front_proxy_ca)
        )
        if proxy_now is not None
        else None,
        certificates=CertificateAuthenticator(client_ca, lambda: trust.is_exactly(client_ca))
        if uses_client_ca
        else None,
        tokens=TokenReviewer(
            lambda body: authn_client.create("/apis/authentication.k8s.io/v1/tokenreviews", body),
            options.token_cache_ttl,
        )
        if authn_client is not None
        else None,
    )
    members: list[Authorizer] = []
    if options.always_allow_groups:
        members.append(PrivilegedGroups(options.always_allow_groups))
    if options.always_allow_paths:
        members.append(AlwaysAllowPaths(options.always_allow_paths))
    if authz_client is None:
        log.warning(
            "No authorization-kubeconfig provided, so SubjectAccessReview of authorization tokens won't work."
        )
    else:
        members.append(
            SubjectAccessReviewer(
                lambda body: authz_client.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", body),
                options.authorized_ttl,
                options.unauthorized_ttl,
            )
        )
    auth = DelegatedAuth(authenticator, UnionAuthorizer(members))
    if refresh is not None:
        auth.tasks.append(
            asyncio.create_task(_refresh_every(refresh, CA_REFRESH_SECONDS), name="client-ca-refresh")
        )
    return auth


def _tolerate_lookup_failure(error: Exception, tolerate: bool) -> None:
    """Live with a failed ConfigMap lookup (--authentication-tolerate-lookup-failure), or refuse to start."""
    if isinstance(error, ApiError) and error.status == 403:
        log.warning(
            "Unable to get configmap/%s in %s. Usually fixed by 'kubectl create rolebinding -n %s "
            "ROLEBINDING_NAME --role=%s --serviceaccount=YOUR_NS:YOUR_SA'",
            AUTH_CONFIGMAP_NAME,
            AUTH_CONFIGMAP_NAMESPACE,
            AUTH_CONFIGMAP_NAMESPACE,
            AUTH_READER_ROLE,
        )
    if not tolerate:
        raise DelegatedAuthError(
            f"unable to load configmap based request-header-client-ca-file: {error}: grant the "
            f"scheduler's identity the {AUTH_READER_ROLE} Role in {AUTH_CONFIGMAP_NAMESPACE}, or drop "
            "--authentication-tolerate-lookup-failure=false, or pass --authentication-skip-lookup"
        ) from error
    log.warning("Error looking up in-cluster authentication configuration: %s", error)
    log.warning("Continuing without authentication configuration. This may treat all requests as anonymous.")
    log.warning(
        "To require authentication configuration lookup to succeed, "
        "set --authentication-tolerate-lookup-failure=false"
    )


async def _load_configmap(
    api: ApiClient,
    trust: TrustStore,
    client_ca: CaBundle | None,
    front_proxy_ca: CaBundle | None,
    front_proxy: _FrontProxy | None,
) -> None:
    """Read extension-apiserver-authentication once: the CAs and the front-proxy headers."""
    try:
        configmap = await api.get(AUTH_CONFIGMAP_PATH)
    except ApiError as error:
        if error.not_found:
            return
        raise
    data = configmap.get("data") or {}
    for bundle, key in ((client_ca, "client-ca-file"), (front_proxy_ca, "requestheader-client-ca-file")):
        if bundle is None:
            continue
        text = data.get(key) or ""
        if not text:
            bundle.replace(())
            continue
        try:
            certificates = parse_pem_bundle(text, f"configmap/{AUTH_CONFIGMAP_NAME} {key}")
        except ValueError as error:
            log.error("%s", error)
            continue
        bundle.replace(certificates)
        trust.add(certificates)
    if front_proxy is not None:
        front_proxy.config = RequestHeaderConfig(
            _json_list(data, "requestheader-username-headers"),
            _json_list(data, "requestheader-uid-headers"),
            _json_list(data, "requestheader-group-headers"),
            _json_list(data, "requestheader-extra-headers-prefix"),
            _json_list(data, "requestheader-allowed-names"),
        )


async def _refresh_every(refresh: Callable[[], Awaitable[None]], seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds)
        try:
            await refresh()
        except (ApiError, ApiUnavailable, ValueError) as error:
            log.warning(
                "re-reading configmap/%s in %s: %s", AUTH_CONFIGMAP_NAME, AUTH_CONFIGMAP_NAMESPACE, error
            )
