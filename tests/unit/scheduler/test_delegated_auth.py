"""The secure port's decisions, in memory: caches, the authenticator chain, the authorizer union,
and the answers, as k8s.io/apiserver's delegating authenticator and authorizer make them."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from secondary_scheduler.scheduler.authcache import ExpiringCache, SingleFlight
from secondary_scheduler.scheduler.authn import (
    ANONYMOUS_USER,
    AUTHENTICATED,
    CREDENTIAL_ID,
    AuthenticationError,
    CaBundle,
    CertificateAuthenticator,
    Credentials,
    RequestAuthenticator,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    TokenReviewer,
    UserInfo,
    bearer_token,
)
from secondary_scheduler.scheduler.authz import (
    AlwaysAllowPaths,
    Attributes,
    Decision,
    PrivilegedGroups,
    SubjectAccessReviewer,
    UnionAuthorizer,
    review_spec,
)
from secondary_scheduler.scheduler.delegatedauth import (
    DelegatedAuth,
    DelegatedAuthError,
    DelegatedAuthOptions,
)

JSON = dict[str, Any]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Reviews:
    """An in-memory review endpoint: answers from a table, counts calls."""

    def __init__(self, answers: dict[str, JSON] | None = None, fail: bool = False) -> None:
        self.answers = answers or {}
        self.fail = fail
        self.calls: list[JSON] = []

    async def __call__(self, body: JSON) -> JSON:
        self.calls.append(body)
        await asyncio.sleep(0)
        if self.fail:
            raise ConnectionError("API server unreachable")
        spec = body["spec"]
        key = spec.get("token") or spec["user"]
        return {"status": self.answers.get(key, {})}


# -- caches ---------------------------------------------------------------------------------


def test_expiring_cache_expires_and_evicts_the_least_recently_used() -> None:
    clock = Clock()
    cache: ExpiringCache[str, int] = ExpiringCache(max_entries=2, clock=clock)
    cache.set("a", 1, 10)
    cache.set("b", 2, 5)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.set("c", 3, 10)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    clock.now += 10
    assert cache.get("a") is None and len(cache) == 1
    cache.set("d", 4, 0)
    assert cache.get("d") is None


async def test_single_flight_shares_one_call() -> None:
    flight: SingleFlight[str, int] = SingleFlight()
    calls = 0

    async def call() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return 7

    assert await asyncio.gather(*(flight.do("k", call) for _ in range(5))) == [7] * 5
    assert calls == 1


# -- tokens ---------------------------------------------------------------------------------

ALICE = {
    "authenticated": True,
    "user": {"username": "alice", "uid": "u1", "groups": ["devs"], "extra": {"k": ["v"]}},
}


async def test_token_reviews_are_cached_for_the_ttl_errors_are_not() -> None:
    clock = Clock()
    reviews = Reviews({"good": ALICE, "bad": {"authenticated": False, "error": "invalid bearer token"}})
    reviewer = TokenReviewer(reviews, ttl=10, cache=ExpiringCache(clock=clock))
    user, error = await reviewer.authenticate("good")
    assert error is None and user == UserInfo("alice", "u1", ("devs",), {"k": ("v",)})
    assert reviews.calls[0] == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "good"},
    }
    await reviewer.authenticate("good")
    assert len(reviews.calls) == 1
    clock.now += 10
    await reviewer.authenticate("good")
    assert len(reviews.calls) == 2
    for _ in range(2):  # an error answer is asked again every time
        user, error = await reviewer.authenticate("bad")
        assert user is None and isinstance(error, AuthenticationError)
    assert len(reviews.calls) == 4


async def test_unauthenticated_without_error_is_cached_and_a_failed_call_is_not() -> None:
    reviews = Reviews({})
    reviewer = TokenReviewer(reviews, ttl=10)
    assert await reviewer.authenticate("unknown") == (None, None)
    assert await reviewer.authenticate("unknown") == (None, None)
    assert len(reviews.calls) == 1
    reviews.fail = True
    for _ in range(2):
        user, error = await reviewer.authenticate("other")
        assert user is None and error is not None
    assert len(reviews.calls) == 3


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("  Bearer abc  ", "abc"),
        ("Bearer abc def", "abc"),
        ("Bearer", None),
        ("Bearer  abc", None),  # an empty token after the first space
        ("Basic abc", None),
        ("", None),
    ],
)
def test_bearer_token_is_read_as_upstream(header: str, token: str | None) -> None:
    assert bearer_token(Credentials((("Authorization", header),))) == token


# -- the chain --------------------------------------------------------------------------------


async def test_no_credentials_is_anonymous_a_bad_token_is_401() -> None:
    chain = RequestAuthenticator(tokens=TokenReviewer(Reviews({"good": ALICE}), ttl=10))
    assert await chain.authenticate(Credentials()) == ANONYMOUS_USER
    user = await chain.authenticate(Credentials((("Authorization", "Bearer good"),)))
    assert user.name == "alice" and user.groups == ("devs", AUTHENTICATED)
    with pytest.raises(AuthenticationError, match="invalid bearer token"):
        await chain.authenticate(Credentials((("Authorization", "Bearer nope"),)))


async def test_no_mechanism_at_all_makes_everyone_anonymous() -> None:
    chain = RequestAuthenticator()
    assert await chain.authenticate(Credentials((("Authorization", "Bearer x"),))) == ANONYMOUS_USER


def _ca(name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    cn: str,
    orgs: tuple[str, ...] = (),
    usage: x509.ObjectIdentifier = ExtendedKeyUsageOID.CLIENT_AUTH,
) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, cn)] if cn else []
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in orgs]
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(names))
        .issuer_name(ca[0].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .sign(ca[1], hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


def test_client_certificate_user_is_cn_with_o_as_groups() -> None:
    ca = _ca("client-ca")
    authenticator = CertificateAuthenticator(CaBundle("client-ca", [ca[0]]))
    der = _leaf(ca, "bob", ("team-a", "team-b"))
    user, error = authenticator.authenticate(Credentials(peer_certificate=der))
    assert error is None and user is not None
    assert (user.name, user.groups) == ("bob", ("team-a", "team-b"))
    assert user.extra[CREDENTIAL_ID][0].startswith("X509SHA256=")
    assert authenticator.authenticate(Credentials(peer_certificate=_leaf(ca, ""))) == (None, None)
    server_only = _leaf(ca, "svc", usage=ExtendedKeyUsageOID.SERVER_AUTH)
    assert isinstance(
        authenticator.authenticate(Credentials(peer_certificate=server_only))[1], AuthenticationError
    )


def test_a_certificate_from_a_dropped_ca_is_refused() -> None:
    old, new = _ca("old"), _ca("new")
    bundle = CaBundle("client-ca", [old[0]])
    authenticator = CertificateAuthenticator(bundle)
    der = _leaf(old, "carol")
    assert authenticator.authenticate(Credentials(peer_certificate=der))[0] is not None
    bundle.replace([new[0]])
    user, error = authenticator.authenticate(Credentials(peer_certificate=der))
    assert user is None and "unknown authority" in str(error)


async def test_front_proxy_headers_name_the_user_only_for_the_proxy_ca_and_allowed_names() -> None:
    proxy_ca, client_ca = _ca("front-proxy"), _ca("client")
    config = RequestHeaderConfig(
        ("X-Remote-User",), (), ("X-Remote-Group",), ("X-Remote-Extra-",), ("front-proxy-client",)
    )
    chain = RequestAuthenticator(
        request_header=RequestHeaderAuthenticator(CaBundle("request-header", [proxy_ca[0]]), lambda: config),
        certificates=CertificateAuthenticator(CaBundle("client-ca", [client_ca[0]])),
    )
    headers = (
        ("X-Remote-User", "dave"),
        ("X-Remote-Group", "g1"),
        ("X-Remote-Group", "g2"),
        ("X-Remote-Extra-Scopes%2Fa", "s"),
    )
    user = await chain.authenticate(Credentials(headers, _leaf(proxy_ca, "front-proxy-client")))
    assert (user.name, user.groups, user.extra) == ("dave", ("g1", "g2", AUTHENTICATED), {"scopes/a": ("s",)})
    with pytest.raises(AuthenticationError, match="not in the allowed list"):
        await chain.authenticate(Credentials(headers, _leaf(proxy_ca, "someone-else")))
    # a client-CA certificate is its own user: the headers are not believed
    user = await chain.authenticate(Credentials(headers, _leaf(client_ca, "erin")))
    assert user.name == "erin"


# -- authorization -----------------------------------------------------------------------------

BOB = UserInfo("bob", groups=("devs", AUTHENTICATED))


async def test_always_allow_paths_exact_and_prefix() -> None:
    paths = AlwaysAllowPaths(["/healthz", "/debug/*", "/"])
    for path, decision in (
        ("/healthz", Decision.ALLOW),
        ("/healthz/extra", Decision.NO_OPINION),
        ("/debug/pprof/", Decision.ALLOW),
        ("/", Decision.ALLOW),
        ("/metrics", Decision.NO_OPINION),
    ):
        assert (await paths.authorize(Attributes(ANONYMOUS_USER, "get", path))).decision is decision
    with pytest.raises(ValueError, match="only a trailing"):
        AlwaysAllowPaths(["/a*b"])


async def test_subject_access_reviews_cache_allowed_and_denied_apart() -> None:
    clock = Clock()
    reviews = Reviews({"bob": {"allowed": True, "reason": "RBAC: allowed"}, "eve": {"allowed": False}})
    reviewer = SubjectAccessReviewer(reviews, allowed_ttl=10, denied_ttl=2, cache=ExpiringCache(clock=clock))
    verdict = await reviewer.authorize(Attributes(BOB, "get", "/metrics"))
    assert (verdict.decision, verdict.reason) == (Decision.ALLOW, "RBAC: allowed")
    assert reviews.calls[0]["spec"] == {
        "user": "bob",
        "groups": ["devs", AUTHENTICATED],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    eve = Attributes(UserInfo("eve"), "get", "/metrics")
    assert (await reviewer.authorize(eve)).decision is Decision.NO_OPINION
    clock.now += 3
    await reviewer.authorize(Attributes(BOB, "get", "/metrics"))
    await reviewer.authorize(eve)
    assert [call["spec"]["user"] for call in reviews.calls] == ["bob", "eve", "eve"]
    reviews.fail = True
    clock.now += 30
    verdict = await reviewer.authorize(eve)
    assert verdict.decision is Decision.NO_OPINION and verdict.error


async def test_union_masters_paths_then_review() -> None:
    reviews = Reviews({"bob": {"allowed": True}})
    union = UnionAuthorizer(
        [
            PrivilegedGroups(["system:masters"]),
            AlwaysAllowPaths(["/healthz"]),
            SubjectAccessReviewer(reviews, 10, 10),
        ]
    )
    admin = UserInfo("root", groups=("system:masters",))
    assert (await union.authorize(Attributes(admin, "delete", "/anything"))).decision is Decision.ALLOW
    assert (await union.authorize(Attributes(ANONYMOUS_USER, "get", "/healthz"))).decision is Decision.ALLOW
    assert (await union.authorize(Attributes(BOB, "get", "/metrics"))).decision is Decision.ALLOW
    assert (
        await union.authorize(Attributes(ANONYMOUS_USER, "get", "/metrics"))
    ).decision is Decision.NO_OPINION
    assert len(reviews.calls) == 2


def test_review_spec_leaves_empty_fields_out() -> None:
    assert review_spec(Attributes(UserInfo("x", uid="1", extra={"k": ("v",)}), "post", "/p")) == {
        "user": "x",
        "uid": "1",
        "extra": {"k": ["v"]},
        "nonResourceAttributes": {"path": "/p", "verb": "post"},
    }


def test_options_refuse_bad_request_header_and_path_flags() -> None:
    with pytest.raises(DelegatedAuthError, match="--requestheader-uid-headers"):
        DelegatedAuthOptions(requestheader=RequestHeaderConfig(uid_headers=("X-Other",))).validate()
    with pytest.raises(DelegatedAuthError, match="--requestheader-group-headers"):
        DelegatedAuthOptions(requestheader=RequestHeaderConfig(group_headers=(" ",))).validate()
    with pytest.raises(ValueError, match="trailing"):
        DelegatedAuthOptions(always_allow_paths=("/x*y",)).validate()


# -- the answers -------------------------------------------------------------------------------


async def _client(auth: DelegatedAuth) -> TestClient[web.Request, web.Application]:
    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(middlewares=[auth.middleware])
    app.add_routes([web.get("/healthz", ok), web.get("/metrics", ok)])
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


async def test_middleware_answers_401_403_500_as_kube_scheduler() -> None:
    tokens = TokenReviewer(Reviews({"good": ALICE}), ttl=10)
    reviews = Reviews({"alice": {"allowed": False}})
    auth = DelegatedAuth(
        RequestAuthenticator(tokens=tokens),
        UnionAuthorizer([AlwaysAllowPaths(["/healthz"]), SubjectAccessReviewer(reviews, 10, 10)]),
    )
    client = await _client(auth)
    try:
        response = await client.get("/healthz")
        assert response.status == 200 and response.headers["Cache-Control"] == "no-cache, private"
        response = await client.get("/healthz", headers={"Authorization": "Bearer bad"})
        assert response.status == 401
        assert orjson.loads(await response.read()) == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
        response = await client.get("/metrics", headers={"Authorization": "Bearer good"})
        assert response.status == 403 and response.headers["X-Content-Type-Options"] == "nosniff"
        body = orjson.loads(await response.read())
        assert body["message"] == 'forbidden: User "alice" cannot get path "/metrics"'
        assert (body["reason"], body["details"], body["code"]) == ("Forbidden", {}, 403)
        reviews.fail = True
        response = await client.get("/metrics")
        assert response.status == 500
        assert (await response.text()).startswith('Internal Server Error: "/metrics": ')
    finally:
        await client.close()


def test_trust_store_turns_on_client_certificates_only_with_a_ca() -> None:
    from secondary_scheduler.scheduler.delegatedauth import TrustStore

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    store = TrustStore(context)
    store.add([])
    assert context.verify_mode == ssl.CERT_NONE
    ca = _ca("c")
    store.add([ca[0]])
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert store.is_exactly(CaBundle("client-ca", [ca[0]]))
    assert not store.is_exactly(CaBundle("client-ca", []))


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--authorization-always-allow-paths=/a*b", "only a trailing"),
        ("--authentication-token-webhook-cache-ttl=soon", "not a duration"),
        ("--authorization-webhook-cache-authorized-ttl=1x", "not a duration"),
        ("--authentication-tolerate-lookup-failure=maybe", "not a boolean"),
    ],
)
def test_bad_auth_flag_values_are_usage_errors(flag: str, words: str) -> None:
    from click.testing import CliRunner

    from secondary_scheduler.cli.main import cli

    result = CliRunner().invoke(cli, ["scheduler", flag])
    assert result.exit_code == 2 and words in result.output
