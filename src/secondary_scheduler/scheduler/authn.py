"""Who is asking: kube-scheduler's delegating authenticator, request by request.

The order and the outcomes are k8s.io/apiserver's (authenticatorfactory.DelegatingAuthenticatorConfig):
a front-proxy (request-header) certificate, then a client certificate, then a bearer token
reviewed by the API server (TokenReview), each tried in turn. The first that succeeds names
the user (with system:authenticated added); if none succeeds and any of them failed with an
error (a token the API server rejects, a certificate from an unknown CA) the request is
unauthenticated (401); if none applied at all the caller is system:anonymous, whom
authorization then judges. No credentials mechanism configured at all: everyone is anonymous.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from secondary_scheduler.kube.client import JSON
from secondary_scheduler.scheduler.authcache import ExpiringCache, SingleFlight

log = logging.getLogger(__name__)

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"

Headers = Sequence[tuple[str, str]]
"""A request's headers in order, repeated names repeated (what aiohttp's multidict yields)."""


class AuthenticationError(Exception):
    """The request carried credentials that did not check out: answer 401."""


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def anonymous(self) -> bool:
        return self.name == ANONYMOUS or UNAUTHENTICATED in self.groups


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))


@dataclass(frozen=True)
class Credentials:
    """What a request presents: its headers and the client certificate TLS verified (DER)."""

    headers: Headers = ()
    peer_certificate: bytes | None = None

    def header(self, name: str) -> str:
        """The first value of `name` (case-insensitive), or ''."""
        lowered = name.lower()
        return next((value for key, value in self.headers if key.lower() == lowered), "")

    def all_values(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]


Outcome = tuple[UserInfo | None, Exception | None]
"""(user, None): authenticated; (None, error): rejected; (None, None): not this mechanism's credentials."""


# -- certificates -------------------------------------------------------------------------


class CaBundle:
    """The CA certificates one mechanism trusts now; replaced when its source (file, ConfigMap) changes."""

    def __init__(self, name: str, certificates: Sequence[x509.Certificate] = ()) -> None:
        self.name = name
        self.certificates: tuple[x509.Certificate, ...] = tuple(certificates)

    def replace(self, certificates: Sequence[x509.Certificate]) -> None:
        self.certificates = tuple(certificates)

    def issued(self, leaf: x509.Certificate) -> bool:
        """Whether one of these CAs signed `leaf` directly."""
        for ca in self.certificates:
            if ca.subject != leaf.issuer:
                continue
            try:
                leaf.verify_directly_issued_by(ca)
            except (InvalidSignature, ValueError, TypeError):
                continue
            return True
        return False


def parse_pem_bundle(text: str | bytes, source: str) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle; ValueError naming `source` when there is none."""
    data = text.encode() if isinstance(text, str) else text
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError as error:
        raise ValueError(f"{source}: not a PEM bundle of CA certificates ({error})") from error
    if not certificates:
        raise ValueError(f"{source}: no certificate in it")
    return certificates


def certificate_identifier(cert: x509.Certificate) -> str:
    """SN, SKID and AKID as k8s.io/apiserver names a certificate in its messages."""

    def colon_hex(data: bytes) -> str:
        return ":".join(f"{byte:02X}" for byte in data)

    try:
        skid = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    except x509.ExtensionNotFound:
        skid = b""
    try:
        akid = (
            cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier or b""
        )
    except x509.ExtensionNotFound:
        akid = b""
    return f"SN={cert.serial_number}, SKID={colon_hex(skid)}, AKID={colon_hex(akid)}"


def _verify(der: bytes, bundle: CaBundle, tls_trust_is_bundle: bool) -> x509.Certificate:
    """The leaf, if `bundle` vouches for it; AuthenticationError otherwise.

    TLS already verified the chain against every CA the serving context holds. A CA that
    signed the leaf directly settles which bundle it belongs to; a longer chain is accepted
    when the context trusts exactly this bundle (Python's ssl does not show the chain).
    """
    leaf = x509.load_der_x509_certificate(der)
    try:
        usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usage = None
    if usage is not None and not {
        ExtendedKeyUsageOID.CLIENT_AUTH,
        ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    } & set(usage):
        raise AuthenticationError(
            f"verifying certificate {certificate_identifier(leaf)} failed: "
            "x509: certificate specifies an incompatible key usage"
        )
    if bundle.issued(leaf) or (tls_trust_is_bundle and bundle.certificates):
        return leaf
    raise AuthenticationError(
        f"verifying certificate {certificate_identifier(leaf)} failed: "
        f"x509: certificate signed by unknown authority ({bundle.name})"
    )


class CertificateAuthenticator:
    """A client certificate from the client CA: the user is its CN, the groups its O values."""

    def __init__(self, bundle: CaBundle, tls_trust_is_bundle: Callable[[], bool] = lambda: False) -> None:
        self.bundle = bundle
        self.tls_trust_is_bundle = tls_trust_is_bundle

    def authenticate(self, credentials: Credentials) -> Outcome:
        if credentials.peer_certificate is None or not self.bundle.certificates:
            return None, None
        try:
            leaf = _verify(credentials.peer_certificate, self.bundle, self.tls_trust_is_bundle())
            return certificate_user(leaf, credentials.peer_certificate), None
        except AuthenticationError as error:
            return None, error


def certificate_user(leaf: x509.Certificate, der: bytes) -> UserInfo | None:
    """x509.CommonNameUserConversion: no CN, no user; the UID attribute, if any, is the uid."""
    names = leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    if not common_name:
        return None
    uids = [str(attribute.value) for attribute in leaf.subject.get_attributes_for_oid(NameOID.USER_ID)]
    if len(uids) > 1:
        raise AuthenticationError(f"expected 1 UID, but found multiple: {uids}")
    if uids and not uids[0]:
        raise AuthenticationError("UID cannot be an empty string")
    groups = tuple(
        str(attribute.value) for attribute in leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    )
    fingerprint = "X509SHA256=" + hashlib.sha256(der).hexdigest()
    return UserInfo(common_name, uids[0] if uids else "", groups, {CREDENTIAL_ID: (fingerprint,)})


@dataclass(frozen=True)
class RequestHeaderConfig:
    """Front-proxy authentication: which CA and client names may assert users in which headers."""

    username_headers: tuple[str, ...] = ("X-Remote-User",)
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_header_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)
    allowed_names: tuple[str, ...] = ()


class RequestHeaderAuthenticator:
    """A front-proxy's certificate (its CA, an allowed CN) lets its headers name the user."""

    def __init__(
        self,
        bundle: CaBundle,
        config: Callable[[], RequestHeaderConfig],
        tls_trust_is_bundle: Callable[[], bool] = lambda: False,
    ) -> None:
        self.bundle = bundle
        self.config = config
        self.tls_trust_is_bundle = tls_trust_is_bundle

    def authenticate(self, credentials: Credentials) -> Outcome:
        if credentials.peer_certificate is None or not self.bundle.certificates:
            return None, None
        config = self.config()
        try:
            leaf = _verify(credentials.peer_certificate, self.bundle, self.tls_trust_is_bundle())
        except AuthenticationError as error:
            return None, error
        if config.allowed_names:
            names = leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            common_name = str(names[0].value) if names else ""
            if common_name not in config.allowed_names:
                return None, AuthenticationError(
                    f"x509: subject with cn={common_name} is not in the allowed list"
                )
        return request_header_user(credentials, config), None


def request_header_user(credentials: Credentials, config: RequestHeaderConfig) -> UserInfo | None:
    """The user the proxy's headers name (no username header: no user)."""
    name = next((value for header in config.username_headers if (value := credentials.header(header))), "")
    if not name:
        return None
    uid = next((value for header in config.uid_headers if (value := credentials.header(header))), "")
    groups = tuple(
        value for header in config.group_headers for value in credentials.all_values(header) if value
    )
    extra: dict[str, list[str]] = {}
    for prefix in config.extra_header_prefixes:
        for key, value in credentials.headers:
            if len(key) >= len(prefix) and key[: len(prefix)].lower() == prefix.lower():
                extra.setdefault(unquote(key[len(prefix) :].lower()), []).append(value)
    return UserInfo(name, uid, groups, {key: tuple(values) for key, values in extra.items()})


# -- bearer tokens ------------------------------------------------------------------------

TokenReviewCall = Callable[[JSON], Awaitable[JSON]]
"""POSTs a TokenReview and returns the API server's answer (raises on a failed call)."""


class TokenReviewer:
    """The webhook token authenticator behind kube-scheduler's token cache.

    Answers are cached for `ttl` (kube-scheduler's --authentication-token-webhook-cache-ttl,
    10s), keyed by a keyed hash of the token so tokens are never kept; a failed review (the
    API server unreachable or refusing) is not cached, so the next request asks again.
    """

    def __init__(
        self, review: TokenReviewCall, ttl: float, cache: ExpiringCache[bytes, Outcome] | None = None
    ):
        self.review = review
        self.ttl = ttl
        self.cache: ExpiringCache[bytes, Outcome] = cache if cache is not None else ExpiringCache()
        self._key = os.urandom(32)
        self._flight: SingleFlight[bytes, Outcome] = SingleFlight()

    async def authenticate(self, token: str) -> Outcome:
        key = hmac.new(self._key, token.encode(), hashlib.sha256).digest()
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        return await self._flight.do(key, lambda: self._review_and_cache(key, token))

    async def _review_and_cache(self, key: bytes, token: str) -> Outcome:
        outcome = await self._review(token)
        if outcome[1] is None:  # errors are not cached (the token cache's cacheErrs=false)
            self.cache.set(key, outcome, self.ttl)
        return outcome

    async def _review(self, token: str) -> Outcome:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            answer = await self.review(body)
        except Exception as error:
            log.error("Failed to make webhook authenticator request: %s", error)
            return None, AuthenticationError(f"token review failed: {error}")
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            message = str(status.get("error") or "")
            return None, (AuthenticationError(message) if message else None)
        user = status.get("user") or {}
        extra = {
            str(key): tuple(str(v) for v in values or ()) for key, values in (user.get("extra") or {}).items()
        }
        return (
            UserInfo(
                str(user.get("username") or ""),
                str(user.get("uid") or ""),
                tuple(str(group) for group in user.get("groups") or ()),
                extra,
            ),
            None,
        )


def bearer_token(credentials: Credentials) -> str | None:
    """The token of `Authorization: Bearer <token>`, as k8s.io/apiserver's bearertoken reads it."""
    header = credentials.header("Authorization").strip()
    if not header:
        return None
    parts = header.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


# -- the chain ------------------------------------------------------------------------------


class RequestAuthenticator:
    """Front proxy, client certificate, bearer token; then anonymous, unless one of them failed."""

    def __init__(
        self,
        request_header: RequestHeaderAuthenticator | None = None,
        certificates: CertificateAuthenticator | None = None,
        tokens: TokenReviewer | None = None,
    ) -> None:
        self.request_header = request_header
        self.certificates = certificates
        self.tokens = tokens

    async def authenticate(self, credentials: Credentials) -> UserInfo:
        """The user, or AuthenticationError (401)."""
        mechanisms = [m for m in (self.request_header, self.certificates) if m is not None]
        if not mechanisms and self.tokens is None:
            return ANONYMOUS_USER
        errors: list[Exception] = []
        for mechanism in mechanisms:
            user, error = mechanism.authenticate(credentials)
            if error is not None:
                errors.append(error)
            elif user is not None:
                return with_authenticated_group(user)
        token = bearer_token(credentials) if self.tokens is not None else None
        if self.tokens is not None and token is not None:
            user, error = await self.tokens.authenticate(token)
            if user is not None:
                return with_authenticated_group(user)
            errors.append(error or AuthenticationError("invalid bearer token"))
        if errors:
            raise AuthenticationError(", ".join(str(error) for error in errors))
        return ANONYMOUS_USER


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """system:authenticated added, unless the user is anonymous or already has it."""
    if user.name == ANONYMOUS or AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)
