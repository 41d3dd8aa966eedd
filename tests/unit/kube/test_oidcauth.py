"""`auth-provider: oidc` as client-go runs it, against a real OpenID issuer the test serves on
127.0.0.1 over TLS: a valid id-token is used without a call, an expired one is refreshed through
discovery and the token endpoint and written back to the kubeconfig, failures read as client-go's."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from secondary_scheduler import certs
from secondary_scheduler.kube import kubeconfig, oidcauth
from secondary_scheduler.kube.client import ApiClient, CredentialsUnavailable
from secondary_scheduler.kube.execcredential import CredentialError

CA = certs.certificate_authority("test-issuer-ca")
SERVING = certs.serving("127.0.0.1", ["127.0.0.1"], issuer=CA)


def jwt(**claims: Any) -> str:
    """An unsigned JWT with these claims: client-go reads only the payload."""

    def segment(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{segment({'alg': 'none'})}.{segment(claims)}.signature"


@dataclass
class Issuer:
    """What the issuer answers and what it was asked."""

    url: str = ""
    token_answer: dict[str, Any] = field(default_factory=dict)
    token_status: int = 200
    discovery_status: int = 200
    requests: list[tuple[str, dict[str, str], str | None]] = field(default_factory=list)
    """(path, form, Authorization) of each request."""
    bearers: list[str | None] = field(default_factory=list)
    """Authorization headers the fake API path saw."""


@pytest.fixture
async def issuer(tmp_path: Path) -> AsyncIterator[Issuer]:
    state = Issuer()

    async def discovery(request: web.Request) -> web.Response:
        state.requests.append((request.path, {}, request.headers.get("Authorization")))
        if state.discovery_status != 200:
            return web.Response(status=state.discovery_status, text="<html>" + "x" * 100 + "</html>")
        return web.json_response({"issuer": state.url, "token_endpoint": f"{state.url}/token"})

    async def token(request: web.Request) -> web.Response:
        form = {key: str(value) for key, value in (await request.post()).items()}
        state.requests.append((request.path, form, request.headers.get("Authorization")))
        return web.json_response(state.token_answer, status=state.token_status)

    async def api(request: web.Request) -> web.Response:
        state.bearers.append(request.headers.get("Authorization"))
        return web.json_response({"kind": "Namespace", "metadata": {"name": "default"}})

    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", discovery)
    app.router.add_post("/token", token)
    app.router.add_get("/api/v1/namespaces/default", api)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert_file, key_file = tmp_path / "issuer.crt", tmp_path / "issuer.key"
    certs.write_pair(cert_file, key_file, SERVING.cert_pem, SERVING.key_pem)
    tls.load_cert_chain(cert_file, key_file)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = runner.addresses[0][1]
    state.url = f"https://127.0.0.1:{port}"
    yield state
    await runner.cleanup()


def write_kubeconfig(tmp_path: Path, issuer: Issuer, **config: str) -> Path:
    """A kubeconfig whose user has the oidc provider (the CA inline) and whose cluster is the issuer."""
    ca = base64.b64encode(CA.cert_pem).decode()
    provider = {
        "idp-issuer-url": issuer.url,
        "client-id": "kubernetes",
        "client-secret": "s3cret/+",
        "idp-certificate-authority-data": ca,
        **config,
    }
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "oidc",
        "clusters": [{"name": "c", "cluster": {"server": issuer.url, "certificate-authority-data": ca}}],
        "contexts": [{"name": "oidc", "context": {"cluster": "c", "user": "alice"}}],
        "users": [
            {"name": "bob", "user": {"token": "bobs-token"}},
            {"name": "alice", "user": {"auth-provider": {"name": "oidc", "config": provider}}},
        ],
        "preferences": {"colors": True},
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path


def authenticator(path: Path) -> oidcauth.OidcAuthenticator:
    """A fresh authenticator (not the process cache, which each test's new issuer port would miss anyway)."""
    connection = kubeconfig.from_kubeconfig(path)
    assert connection.oidc is not None
    return oidcauth.OidcAuthenticator(connection.oidc)


async def failure(auth: oidcauth.OidcAuthenticator) -> str:
    with pytest.raises(CredentialError) as caught:
        await asyncio.to_thread(auth.credentials)
    return str(caught.value)


async def test_a_valid_id_token_is_used_without_asking_the_issuer(tmp_path: Path, issuer: Issuer) -> None:
    valid = jwt(exp=int(time.time()) + 3600)
    path = write_kubeconfig(tmp_path, issuer, **{"id-token": valid, "refresh-token": "r1"})
    before = path.read_text()
    async with ApiClient(kubeconfig.from_kubeconfig(path)) as client:
        await client.get("/api/v1/namespaces/default")
    assert issuer.bearers == [f"Bearer {valid}"]
    assert issuer.requests == []
    assert path.read_text() == before


async def test_an_expired_id_token_is_refreshed_and_written_back(tmp_path: Path, issuer: Issuer) -> None:
    expired = jwt(exp=int(time.time()) + 5)  # within client-go's 10 s skew: already expired
    fresh = jwt(exp=int(time.time()) + 3600)
    issuer.token_answer = {
        "access_token": "a",
        "token_type": "Bearer",
        "id_token": fresh,
        "refresh_token": "r2",
    }
    path = write_kubeconfig(tmp_path, issuer, **{"id-token": expired, "refresh-token": "r1"})
    before = yaml.safe_load(path.read_text())
    async with ApiClient(kubeconfig.from_kubeconfig(path)) as client:
        await client.get("/api/v1/namespaces/default")
    assert issuer.bearers == [f"Bearer {fresh}"]
    (discovery, _, _), (token_path, form, authorization) = issuer.requests
    assert (discovery, token_path) == ("/.well-known/openid-configuration", "/token")
    assert form == {"grant_type": "refresh_token", "refresh_token": "r1"}
    secret = base64.b64encode(b"kubernetes:s3cret%2F%2B").decode()  # oauth2 query-escapes both
    assert authorization == f"Basic {secret}"
    after = yaml.safe_load(path.read_text())
    config = before["users"][1]["user"]["auth-provider"]["config"]
    config.update({"id-token": fresh, "refresh-token": "r2"})
    assert after == before  # the other user, the preferences and the rest are kept
    assert path.stat().st_mode & 0o777 == 0o600


async def test_the_refresh_token_is_kept_when_the_issuer_returns_none(tmp_path: Path, issuer: Issuer) -> None:
    fresh = jwt(exp=int(time.time()) + 3600)
    issuer.token_answer = {"access_token": "a", "id_token": fresh}
    path = write_kubeconfig(tmp_path, issuer, **{"refresh-token": "r1"})  # no id-token at all
    auth = authenticator(path)
    assert (await asyncio.to_thread(auth.credentials)).token == fresh
    assert auth.cached() is not None  # from now on no call at all
    config = yaml.safe_load(path.read_text())["users"][1]["user"]["auth-provider"]["config"]
    assert (config["id-token"], config["refresh-token"]) == (fresh, "r1")


async def test_an_issuer_refusing_basic_auth_gets_the_client_in_the_form(
    tmp_path: Path, issuer: Issuer
) -> None:
    issuer.token_status, issuer.token_answer = 401, {"error": "invalid_client"}
    path = write_kubeconfig(tmp_path, issuer, **{"refresh-token": "r1"})
    message = await failure(authenticator(path))
    assert message == 'failed to refresh token: oauth2: "invalid_client"'
    *_, (_, form, authorization) = issuer.requests
    assert authorization is None
    assert form == {
        "grant_type": "refresh_token",
        "refresh_token": "r1",
        "client_id": "kubernetes",
        "client_secret": "s3cret/+",
    }


@pytest.mark.parametrize(
    ("answer", "status", "message"),
    [
        (
            {"error": "invalid_grant", "error_description": "refresh token expired"},
            400,
            'failed to refresh token: oauth2: "invalid_grant" "refresh token expired"',
        ),
        ({"access_token": "a"}, 200, oidcauth._NO_ID_TOKEN),
        ({"id_token": "x.y.z"}, 200, "failed to refresh token: oauth2: server response missing access_token"),
        (
            {},
            500,
            "failed to refresh token: oauth2: cannot fetch token: 500 Internal Server Error\nResponse: {}",
        ),
    ],
)
async def test_refresh_failures_read_as_client_gos(
    tmp_path: Path, issuer: Issuer, answer: dict[str, Any], status: int, message: str
) -> None:
    issuer.token_answer, issuer.token_status = answer, status
    path = write_kubeconfig(tmp_path, issuer, **{"refresh-token": "r1"})
    before = path.read_text()
    assert await failure(authenticator(path)) == message
    assert path.read_text() == before


async def test_a_failed_discovery(tmp_path: Path, issuer: Issuer) -> None:
    issuer.discovery_status = 404
    path = write_kubeconfig(tmp_path, issuer, **{"refresh-token": "r1"})
    message = await failure(authenticator(path))
    assert message.startswith('oidc: failed to query metadata endpoint 404 Not Found: "<html>xxx')
    assert message.endswith('..."')


async def test_without_a_valid_id_token_or_a_refresh_token(tmp_path: Path, issuer: Issuer) -> None:
    path = write_kubeconfig(tmp_path, issuer, **{"id-token": jwt(exp=1)})
    auth = authenticator(path)
    assert await failure(auth) == "No valid id-token, and cannot refresh without refresh-token"
    assert issuer.requests == []
    connection = kubeconfig.from_kubeconfig(path)
    async with ApiClient(connection) as client:
        with pytest.raises(CredentialsUnavailable) as caught:
            await client.get("/api/v1/namespaces/default")
    assert str(caught.value) == (
        "GET /api/v1/namespaces/default: No valid id-token, and cannot refresh without refresh-token "
        f"(API server {issuer.url})"
    )


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("not-a-jwt", "ID Token is not a valid JWT"),
        ("a.b*c.d", "illegal base64 data at input byte 1"),
        (
            f"a.{base64.urlsafe_b64encode(b'[1]').decode().rstrip('=')}.c",
            "parsing claims: the payload is not",
        ),
        (f"a.{base64.urlsafe_b64encode(b'{').decode().rstrip('=')}.c", "parsing claims: "),
        (jwt(exp="soon"), "parsing claims: exp: expected a number of seconds, got 'soon'"),
    ],
)
def test_a_malformed_id_token(token: str, message: str) -> None:
    with pytest.raises(CredentialError, match="^" + message.replace("[", r"\[")):
        oidcauth.id_token_valid(token, 0)


def test_the_expiry_skew_and_a_float_exp() -> None:
    assert oidcauth.id_token_valid(jwt(exp=1010.9), 999.0)
    assert not oidcauth.id_token_valid(jwt(exp=1010.9), 1000.0)  # exp truncated to 1010: not 10 s away
    assert not oidcauth.id_token_valid(jwt(sub="no exp"), 0)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"idp-issuer-url": ""}, "auth-provider.config.idp-issuer-url: Must provide idp-issuer-url"),
        ({"client-id": ""}, "auth-provider.config.client-id: Must provide client-id"),
        (
            {"client-secrets": "x"},
            "auth-provider.config.client-secrets: unknown key of the oidc auth provider",
        ),
        ({"idp-certificate-authority": "/nowhere/ca.crt"}, "/nowhere/ca.crt is not a file"),
        ({"idp-certificate-authority-data": "!!"}, "idp-certificate-authority-data: illegal base64 data"),
    ],
)
def test_the_provider_config_is_checked_at_load(tmp_path: Path, config: dict[str, str], message: str) -> None:
    path = write_kubeconfig(tmp_path, Issuer(url="https://127.0.0.1:1"), **config)
    with pytest.raises(kubeconfig.KubeconfigError) as caught:
        kubeconfig.from_kubeconfig(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{path}:")


def test_other_auth_providers_are_still_refused(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path, Issuer(url="https://127.0.0.1:1"))
    document = yaml.safe_load(path.read_text())
    document["users"][1]["user"]["auth-provider"]["name"] = "openstack"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(kubeconfig.KubeconfigError, match='no Auth Provider found for name "openstack"'):
        kubeconfig.from_kubeconfig(path)


async def test_an_issuer_whose_certificate_is_not_trusted(tmp_path: Path, issuer: Issuer) -> None:
    other = base64.b64encode(certs.certificate_authority("another-ca").cert_pem).decode()
    path = write_kubeconfig(
        tmp_path, issuer, **{"refresh-token": "r1", "idp-certificate-authority-data": other}
    )
    message = await failure(authenticator(path))
    assert message.startswith(f'Get "{issuer.url}/.well-known/openid-configuration": ')
    assert "certificate verify failed" in message
    assert issuer.requests == []
