"""May they: kube-scheduler's delegating authorizer for its non-resource paths.

k8s.io/apiserver's union, in its order: members of system:masters may do anything; the
always-allow paths (--authorization-always-allow-paths, /healthz, /readyz and /livez by
default) are open to everyone; everything else is a SubjectAccessReview for the path and
the lower-cased HTTP method (`get /metrics`), cached for --authorization-webhook-cache-*-ttl.
A review that cannot be made is an error (500), not a denial.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import orjson

from secondary_scheduler.kube.client import JSON
from secondary_scheduler.scheduler.authcache import ExpiringCache, SingleFlight
from secondary_scheduler.scheduler.authn import UserInfo

log = logging.getLogger(__name__)

MASTERS = "system:masters"


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no opinion"


@dataclass(frozen=True)
class Attributes:
    """A non-resource request: who, which path, which verb (the method, lower-cased)."""

    user: UserInfo
    verb: str
    path: str


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str = ""
    error: str | None = None


class Authorizer(Protocol):
    async def authorize(self, attributes: Attributes) -> Verdict: ...


class PrivilegedGroups:
    """Members of these groups may do anything (kube-scheduler: system:masters)."""

    def __init__(self, groups: Sequence[str]) -> None:
        self.groups = frozenset(groups)

    async def authorize(self, attributes: Attributes) -> Verdict:
        if self.groups.intersection(attributes.user.groups):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)


class AlwaysAllowPaths:
    """Paths anyone may read; a trailing `*` allows a prefix (`/debug/*`)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for raw in paths:
            path = raw.removeprefix("/")
            if not path:
                self.exact.add(path)
                continue
            if "*" in path[:-1]:
                raise ValueError(
                    f"--authorization-always-allow-paths: only a trailing * is allowed in {path!r}"
                )
            if path.endswith("*"):
                self.prefixes.append(path[:-1])
            else:
                self.exact.add(path)

    async def authorize(self, attributes: Attributes) -> Verdict:
        path = attributes.path.removeprefix("/")
        if path in self.exact or any(path.startswith(prefix) for prefix in self.prefixes):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)


SubjectAccessReviewCall = Callable[[JSON], Awaitable[JSON]]
"""POSTs a SubjectAccessReview and returns the API server's answer (raises on a failed call)."""


class SubjectAccessReviewer:
    """The webhook authorizer: ask the API server, cache allowed and denied answers apart."""

    def __init__(
        self,
        review: SubjectAccessReviewCall,
        allowed_ttl: float,
        denied_ttl: float,
        cache: ExpiringCache[bytes, JSON] | None = None,
    ) -> None:
        self.review = review
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self.cache: ExpiringCache[bytes, JSON] = cache if cache is not None else ExpiringCache()
        self._flight: SingleFlight[bytes, JSON] = SingleFlight()

    async def authorize(self, attributes: Attributes) -> Verdict:
        spec = review_spec(attributes)
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        status = self.cache.get(key)
        if status is None:
            try:
                status = await self._flight.do(key, lambda: self._review(key, spec))
            except Exception as error:
                log.error("Failed to make webhook authorizer request: %s", error)
                return Verdict(Decision.NO_OPINION, "", f"subject access review failed: {error}")
        allowed, denied = bool(status.get("allowed")), bool(status.get("denied"))
        reason = str(status.get("reason") or "")
        if allowed and denied:
            return Verdict(
                Decision.DENY, reason, "webhook subject access review returned both allow and deny response"
            )
        if denied:
            return Verdict(Decision.DENY, reason)
        if allowed:
            return Verdict(Decision.ALLOW, reason)
        return Verdict(Decision.NO_OPINION, reason)

    async def _review(self, key: bytes, spec: JSON) -> JSON:
        answer = await self.review(
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        )
        status: JSON = answer.get("status") or {}
        self.cache.set(key, status, self.allowed_ttl if status.get("allowed") else self.denied_ttl)
        return status


def review_spec(attributes: Attributes) -> JSON:
    """The SubjectAccessReview spec, empty fields left out as Go's omitempty does."""
    user = attributes.user
    spec: JSON = {"user": user.name}
    if user.uid:
        spec["uid"] = user.uid
    if user.groups:
        spec["groups"] = list(user.groups)
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra.items()}
    spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    return spec


class UnionAuthorizer:
    """The first Allow or Deny wins; otherwise no opinion, with every reason and error."""

    def __init__(self, members: Sequence[Authorizer]) -> None:
        self.members = list(members)

    async def authorize(self, attributes: Attributes) -> Verdict:
        reasons: list[str] = []
        errors: list[str] = []
        for member in self.members:
            verdict = await member.authorize(attributes)
            if verdict.error:
                errors.append(verdict.error)
            if verdict.reason:
                reasons.append(verdict.reason)
            if verdict.decision is not Decision.NO_OPINION:
                return verdict
        error = None
        if errors:
            error = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return Verdict(Decision.NO_OPINION, "\n".join(reasons), error)
