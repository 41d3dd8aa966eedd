"""client-go's `auth-provider: oidc`: a kubeconfig's OpenID Connect id-token, refreshed when it expires.

kubectl still ships this provider (k8s.io/client-go/plugin/pkg/client/auth/oidc): the id-token
in the kubeconfig is sent as the bearer token while its `exp` claim is more than ten seconds
away; after that the refresh-token is exchanged at the token endpoint the issuer's discovery
document names, and the new id-token (and refresh-token, if the issuer rotated it) are written
back into the kubeconfig file, as client-go's persister does. The JWT's signature is not
checked: the API server does that. Unlike an exec plugin, a 401 does not refresh (client-go's
round tripper only looks at the expiry). Errors read as client-go's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import re
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote_plus

import aiohttp
import yaml

from secondary_scheduler.kube.credentialfiles import private_file
from secondary_scheduler.kube.execcredential import CredentialError, Credentials

log = logging.getLogger(__name__)

ISSUER_URL = "idp-issuer-url"
CLIENT_ID = "client-id"
CLIENT_SECRET = "client-secret"
CERTIFICATE_AUTHORITY = "idp-certificate-authority"
CERTIFICATE_AUTHORITY_DATA = "idp-certificate-authority-data"
ID_TOKEN = "id-token"
REFRESH_TOKEN = "refresh-token"
EXTRA_SCOPES = "extra-scopes"
CONFIG_KEYS = (
    ISSUER_URL,
    CLIENT_ID,
    CLIENT_SECRET,
    CERTIFICATE_AUTHORITY,
    CERTIFICATE_AUTHORITY_DATA,
    ID_TOKEN,
    REFRESH_TOKEN,
    EXTRA_SCOPES,
)
"""The keys client-go's oidc provider reads from auth-provider.config."""

EXPIRY_DELTA_SECONDS = 10.0
"""An id-token counts as expired this long before its `exp` (client-go's expiryDelta, for clock skew)."""
HTTP_TIMEOUT_SECONDS = 30.0
_MAX_TOKEN_RESPONSE = 1 << 20
"""oauth2 reads at most 1 MiB of a token response."""
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_NO_ID_TOKEN = (
    'token response did not contain an id_token, either the scope "openid" wasn\'t requested upon login, '
    "or the provider doesn't support id_tokens as part of the refresh response"
)


class OidcConfigError(ValueError):
    """auth-provider.config cannot be used; `key` names the field for the kubeconfig's message."""

    def __init__(self, key: str, problem: str, fix: str = "") -> None:
        super().__init__(problem)
        self.key, self.problem, self.fix = key, problem, fix


@dataclass(frozen=True)
class OidcConfig:
    """One kubeconfig user's oidc auth-provider, checked; where to write refreshed tokens back."""

    kubeconfig: str
    """The file the user is defined in: the persister rewrites its auth-provider.config."""
    user: str
    cluster_address: str
    issuer_url: str
    client_id: str
    client_secret: str = ""
    id_token: str = ""
    refresh_token: str = ""
    ca_file: str | None = None
    """idp-certificate-authority, or idp-certificate-authority-data written to a private file."""


def parse_config(raw: dict[str, Any], *, kubeconfig: str, user: str, cluster_address: str) -> OidcConfig:
    """auth-provider.config as client-go's newOIDCAuthProvider reads it, with its error texts.

    Raises OidcConfigError naming the key.
    """
    values: dict[str, str] = {}
    for key, value in raw.items():
        if key not in CONFIG_KEYS:
            raise OidcConfigError(
                str(key), "unknown key of the oidc auth provider", f"its keys are {', '.join(CONFIG_KEYS)}"
            )
        if not isinstance(value, str):
            raise OidcConfigError(key, f"expected a string, got {value!r}", "quote the value")
        values[key] = value
    for required in (ISSUER_URL, CLIENT_ID):
        if not values.get(required):
            raise OidcConfigError(required, f"Must provide {required}")
    if values.get(EXTRA_SCOPES):
        log.warning(
            "%s: user %s: auth-provider field %s is deprecated: refresh requests don't send scopes "
            "(as client-go)",
            kubeconfig,
            user,
            EXTRA_SCOPES,
        )
    ca_file = values.get(CERTIFICATE_AUTHORITY) or None
    if ca_file is not None and not Path(ca_file).is_file():
        raise OidcConfigError(
            CERTIFICATE_AUTHORITY,
            f"{ca_file} is not a file",
            f"fix the path (client-go reads it relative to the working directory), "
            f"or embed the file as {CERTIFICATE_AUTHORITY_DATA}",
        )
    if values.get(CERTIFICATE_AUTHORITY_DATA):
        try:
            ca_data = base64.b64decode(values[CERTIFICATE_AUTHORITY_DATA], validate=True)
        except (binascii.Error, ValueError) as error:
            raise OidcConfigError(
                CERTIFICATE_AUTHORITY_DATA,
                f"illegal base64 data ({error})",
                "encode the PEM file with `base64 -w0 FILE`",
            ) from error
        if ca_file is None:  # client-go: a CA file, when given, replaces the inline data
            ca_file = private_file(ca_data, ".crt")
    if ca_file is not None:
        try:
            ssl.create_default_context(cafile=ca_file)
        except (ssl.SSLError, OSError) as error:
            key = CERTIFICATE_AUTHORITY if values.get(CERTIFICATE_AUTHORITY) else CERTIFICATE_AUTHORITY_DATA
            raise OidcConfigError(
                key, f"the CA bundle cannot be used ({error})", "give the issuer's CA as PEM"
            ) from error
    return OidcConfig(
        kubeconfig=kubeconfig,
        user=user,
        cluster_address=cluster_address,
        issuer_url=values[ISSUER_URL],
        client_id=values[CLIENT_ID],
        client_secret=values.get(CLIENT_SECRET, ""),
        id_token=values.get(ID_TOKEN, ""),
        refresh_token=values.get(REFRESH_TOKEN, ""),
        ca_file=ca_file,
    )


def id_token_valid(id_token: str, now: float) -> bool:
    """client-go's idTokenExpired (which answers "still valid"): `exp` is more than 10 s away.

    Only the payload is read (base64url, unpadded, then JSON); a token without `exp` is expired.
    """
    parts = id_token.split(".")
    if len(parts) != 3:
        raise CredentialError("ID Token is not a valid JWT")
    payload = parts[1]
    bad = _BASE64URL.match(payload)
    end = bad.end() if bad else 0
    if end != len(payload) or len(payload) % 4 == 1:
        raise CredentialError(f"illegal base64 data at input byte {min(end, len(payload) - 1)}")
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError as error:
        raise CredentialError(f"parsing claims: {error}") from error
    if not isinstance(claims, dict):
        raise CredentialError("parsing claims: the payload is not a JSON object")
    expiry = claims.get("exp", 0)
    if isinstance(expiry, bool) or not isinstance(expiry, int | float):
        raise CredentialError(f"parsing claims: exp: expected a number of seconds, got {expiry!r}")
    return now + EXPIRY_DELTA_SECONDS < int(expiry)


class OidcAuthenticator:
    """The id-token of one issuer and client, refreshed at most once at a time; one per process.

    The same shape as execcredential.ExecAuthenticator (cached / credentials /
    refresh_after_unauthorized), so the API client treats both alike; thread-safe.
    """

    failure_prefix = ""
    """client-go returns the provider's error as is (exec plugins' say `getting credentials: `)."""

    def __init__(self, config: OidcConfig, *, now: Callable[[], float] = time.time) -> None:
        self.config = config
        self._now = now
        self._lock = threading.Lock()
        self._id_token = config.id_token
        self._refresh_token = config.refresh_token
        self._cached: Credentials | None = None
        self._auth_in_params = False
        """oauth2's auto-detected client authentication: Basic first, form fields if that fails."""

    def cached(self) -> Credentials | None:
        """The id-token in hand if it is still valid: no network (the fast path)."""
        creds = self._cached
        if creds is None or creds.expires is None or self._now() + EXPIRY_DELTA_SECONDS >= creds.expires:
            return None
        return creds

    def credentials(self) -> Credentials:
        """The kubeconfig's id-token while valid, else a refreshed one (written to the kubeconfig)."""
        with self._lock:
            if self._id_token and id_token_valid(self._id_token, self._now()):
                return self._remember(self._id_token)
            if not self._refresh_token:
                raise CredentialError("No valid id-token, and cannot refresh without refresh-token")
            id_token, refresh_token = _run_in_own_loop(self._refresh())
            try:
                persist(self.config, id_token, refresh_token)
            except (OSError, yaml.YAMLError, ValueError) as error:
                raise CredentialError(f"could not persist new tokens: {error}") from error
            self._id_token, self._refresh_token = id_token, refresh_token
            return self._remember(id_token)

    def refresh_after_unauthorized(self, used: Credentials) -> Credentials | None:
        """client-go's oidc round tripper does not refresh on a 401: the answer stands."""
        return None

    def _remember(self, id_token: str) -> Credentials:
        if self._cached is None or self._cached.token != id_token:
            self._cached = Credentials(token=id_token, expires=_expiry(id_token))
        return self._cached

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.config.ca_file)

    async def _refresh(self) -> tuple[str, str]:
        """(id-token, refresh-token) from the issuer's token endpoint (grant_type=refresh_token)."""
        timeout = aiohttp.ClientTimeout(total=HTTP_TIMEOUT_SECONDS)
        connector = aiohttp.TCPConnector(ssl=self._tls())
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            token_url = await self._token_endpoint(session)
            try:
                answer = await self._exchange(session, token_url)
            except (aiohttp.ClientError, TimeoutError) as error:
                raise CredentialError(f"failed to refresh token: {_transport(token_url, error)}") from error
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise CredentialError(_NO_ID_TOKEN)
        rotated = answer.get("refresh_token")
        return id_token, rotated if isinstance(rotated, str) and rotated else self._refresh_token

    async def _token_endpoint(self, session: aiohttp.ClientSession) -> str:
        """OpenID Connect discovery: the issuer's token_endpoint."""
        well_known = self.config.issuer_url.removesuffix("/") + "/.well-known/openid-configuration"
        try:
            async with session.get(well_known) as response:
                body = await response.read()
                status = f"{response.status} {response.reason or ''}".strip()
        except (aiohttp.ClientError, TimeoutError) as error:
            raise CredentialError(_transport(well_known, error)) from error
        if response.status != 200:
            shown = body[:80] + b"..." if len(body) > 80 else body
            raise CredentialError(f"oidc: failed to query metadata endpoint {status}: {_go_quote(shown)}")
        try:
            metadata = json.loads(body)
        except ValueError as error:
            raise CredentialError(f"oidc: failed to decode provider discovery object: {error}") from error
        token_url = metadata.get("token_endpoint") if isinstance(metadata, dict) else None
        if not token_url or not isinstance(token_url, str):
            raise CredentialError("oidc: discovery object doesn't contain a token_endpoint")
        return token_url

    async def _exchange(self, session: aiohttp.ClientSession, token_url: str) -> dict[str, Any]:
        """oauth2's refresh: the client's credentials as Basic auth, or, if the issuer refuses
        that, as form fields (and that way from then on)."""
        if not self._auth_in_params:
            try:
                return await self._token_request(session, token_url, in_params=False)
            except CredentialError:
                pass
        answer = await self._token_request(session, token_url, in_params=True)
        self._auth_in_params = True
        return answer

    async def _token_request(
        self, session: aiohttp.ClientSession, token_url: str, *, in_params: bool
    ) -> dict[str, Any]:
        form = {"grant_type": "refresh_token", "refresh_token": self._refresh_token}
        headers = {}
        if in_params:
            if self.config.client_id:
                form["client_id"] = self.config.client_id
            if self.config.client_secret:
                form["client_secret"] = self.config.client_secret
        else:
            client_id, secret = _query_escape(self.config.client_id), _query_escape(self.config.client_secret)
            headers["Authorization"] = aiohttp.encode_basic_auth(client_id, secret)
        async with session.post(token_url, data=form, headers=headers) as response:
            body = await response.content.read(_MAX_TOKEN_RESPONSE)
            status = f"{response.status} {response.reason or ''}".strip()
            ok = 200 <= response.status <= 299
            content_type = response.content_type
        answer = _token_answer(body, content_type, ok)
        if not ok or answer.get("error"):
            raise CredentialError(f"failed to refresh token: {_retrieve_error(answer, status, body)}")
        if not answer.get("access_token"):
            raise CredentialError("failed to refresh token: oauth2: server response missing access_token")
        return answer


def _token_answer(body: bytes, content_type: str, ok: bool) -> dict[str, Any]:
    """The token response's fields: a form (some issuers) or JSON (the rest)."""
    if content_type in ("application/x-www-form-urlencoded", "text/plain"):
        return dict(parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
    try:
        answer = json.loads(body)
    except ValueError as error:
        if not ok:
            return {}
        raise CredentialError(f"failed to refresh token: oauth2: cannot parse json: {error}") from error
    return answer if isinstance(answer, dict) else {}


def _retrieve_error(answer: dict[str, Any], status: str, body: bytes) -> str:
    """oauth2's RetrieveError text."""
    code = answer.get("error")
    if code:
        text = f"oauth2: {json.dumps(str(code))}"
        for extra in ("error_description", "error_uri"):
            if answer.get(extra):
                text += f" {json.dumps(str(answer[extra]))}"
        return text
    return f"oauth2: cannot fetch token: {status}\nResponse: {body.decode(errors='replace')}"


def _transport(url: str, error: BaseException) -> str:
    """A request that got no answer, as Go's http client words it: `Get "URL": cause`."""
    method = "Get" if url.endswith("/openid-configuration") else "Post"
    return f'{method} "{url}": {str(error) or type(error).__name__}'


def _go_quote(data: bytes) -> str:
    """Go's %q of a byte string, near enough: a JSON string of the text."""
    return json.dumps(data.decode(errors="replace"), ensure_ascii=False)


def _query_escape(text: str) -> str:
    """Go's url.QueryEscape, which oauth2 applies to the client id and secret before Basic auth."""
    return quote_plus(text, safe="-_.~")


def _expiry(id_token: str) -> float | None:
    """The id-token's `exp` (already checked valid), for the cache's fast path."""
    payload = id_token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return float(int(claims["exp"])) if "exp" in claims else None


def _run_in_own_loop(coroutine: Coroutine[Any, Any, tuple[str, str]]) -> tuple[str, str]:
    """Run the refresh on a private event loop in its own thread: callers may be synchronous code
    inside a running loop (the operator builds kopf's credentials that way)."""
    result: list[tuple[str, str]] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(coroutine))
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    worker = threading.Thread(target=run, name="oidc-refresh", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return result[0]


def persist(config: OidcConfig, id_token: str, refresh_token: str) -> None:
    """client-go's persister: the user's auth-provider.config in the kubeconfig file gets the new
    tokens; the rest of the file is kept (re-read now, written atomically with its mode)."""
    path = Path(config.kubeconfig)
    document = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    entries = document.get("users") if isinstance(document, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == config.user:
            user = entry.get("user")
            provider = user.get("auth-provider") if isinstance(user, dict) else None
            if not isinstance(provider, dict):
                break
            if not isinstance(provider.get("config"), dict):
                provider["config"] = {}
            provider["config"][ID_TOKEN] = id_token
            provider["config"][REFRESH_TOKEN] = refresh_token
            _write_atomically(path, yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
            return
    raise ValueError(f"{path}: user {config.user!r} with an auth-provider is no longer in it")


def _write_atomically(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as output:
            output.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


_AUTHENTICATORS: dict[tuple[str, str, str], OidcAuthenticator] = {}
_AUTHENTICATORS_LOCK = threading.Lock()


def authenticator_for(config: OidcConfig) -> OidcAuthenticator:
    """The process's one authenticator per (cluster, issuer, client id), as client-go's cache: every
    client of that user shares one refresh and one write to the kubeconfig."""
    key = (config.cluster_address, config.issuer_url, config.client_id)
    with _AUTHENTICATORS_LOCK:
        found = _AUTHENTICATORS.get(key)
        if found is None:
            found = _AUTHENTICATORS[key] = OidcAuthenticator(config)
        return found
