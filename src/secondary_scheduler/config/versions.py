"""Which KubeSchedulerConfiguration versions we read, and what each version may contain.

kube-scheduler 1.34 serves only v1, but the documents our users follow were written for
v1beta1..v1beta3; we read those too, with a warning to migrate, and reject fields a version
never had (or no longer has) the way kube-scheduler's strict decoder would.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from secondary_scheduler.config.errors import Findings, YamlPath

GROUP = "kubescheduler.config.k8s.io"
KIND = "KubeSchedulerConfiguration"


class ApiVersion(StrEnum):
    """In release order, so versions compare by position."""

    V1BETA1 = "v1beta1"
    V1BETA2 = "v1beta2"
    V1BETA3 = "v1beta3"
    V1 = "v1"

    def at_least(self, other: ApiVersion) -> bool:
        order = list(ApiVersion)
        return order.index(self) >= order.index(other)


SERVED_BY_MINORS: dict[ApiVersion, tuple[int, int | None]] = {
    ApiVersion.V1BETA1: (19, 22),
    ApiVersion.V1BETA2: (22, 27),
    ApiVersion.V1BETA3: (23, 28),
    ApiVersion.V1: (25, None),
}
"""The kube-scheduler minor releases (1.x) that read each version: first and last (None: still
read). KEP-785: v1beta1 in 1.19, v1beta2 in 1.22, v1beta3 in 1.23, v1 in 1.25; v1beta2 gone in
1.28, v1beta3 in 1.29; 1.34's scheme (pkg/scheduler/apis/config/scheme) registers v1 alone."""


def read_by(version: ApiVersion, minor: int) -> bool:
    """Whether kube-scheduler 1.`minor` reads `version`."""
    first, last = SERVED_BY_MINORS[version]
    return first <= minor and (last is None or minor <= last)


@dataclass(frozen=True)
class _VersionedField:
    parent: YamlPath  # "[]" matches any list index
    key: str
    since: ApiVersion
    removed_in: ApiVersion | None = None
    why: str = ""


_VERSIONED_FIELDS = (
    _VersionedField(("profiles", "[]", "plugins"), "multiPoint", ApiVersion.V1BETA2),
    _VersionedField(("profiles", "[]", "plugins"), "preEnqueue", ApiVersion.V1BETA2),
    _VersionedField(
        (), "healthzBindAddress", ApiVersion.V1BETA1, ApiVersion.V1BETA2, "it had no effect since 1.20"
    ),
    _VersionedField(
        (), "metricsBindAddress", ApiVersion.V1BETA1, ApiVersion.V1BETA2, "it had no effect since 1.20"
    ),
)


def check_header(data: dict[str, Any], findings: Findings) -> ApiVersion | None:
    """The document's version, or None (after recording why) when it is not one we read."""
    errors_before = len(findings.errors)
    kind = data.get("kind")
    if kind is None:
        findings.error((), f"`kind` is missing: add `kind: {KIND}`")
    elif kind == "ConfigMap":
        findings.error(
            ("kind",),
            "this file is a ConfigMap: save the KubeSchedulerConfiguration from its data "
            "(the config.yaml key) to its own file and validate that",
        )
        return None
    elif kind != KIND:
        findings.error(("kind",), f"kind must be {KIND}, got {kind!r}")

    api_version = data.get("apiVersion")
    supported = ", ".join(f"{GROUP}/{v}" for v in reversed(ApiVersion))
    version: ApiVersion | None = None
    if api_version is None:
        findings.error((), f"`apiVersion` is missing: add `apiVersion: {GROUP}/v1`")
    elif not isinstance(api_version, str) or "/" not in api_version:
        findings.error(("apiVersion",), f"apiVersion must be one of {supported}; got {api_version!r}")
    else:
        group, _, name = api_version.partition("/")
        if group != GROUP:
            findings.error(
                ("apiVersion",), f"apiVersion must be in the {GROUP} group ({supported}); got {api_version!r}"
            )
        elif name not in set(ApiVersion):
            close = difflib.get_close_matches(name, list(ApiVersion), n=1)
            hint = f" (did you mean {GROUP}/{close[0]}?)" if close else ""
            findings.error(("apiVersion",), f"{api_version!r} is not supported; use one of {supported}{hint}")
        else:
            version = ApiVersion(name)
            if version is not ApiVersion.V1:
                last = SERVED_BY_MINORS[version][1]
                findings.warn(
                    ("apiVersion",),
                    f"{version} is deprecated: kube-scheduler last served it in 1.{last}. "
                    f"It still loads here; migrate to {GROUP}/v1",
                )
    return version if len(findings.errors) == errors_before else None


def check_versioned_fields(version: ApiVersion, data: dict[str, Any], findings: Findings) -> None:
    """Report fields that `version` does not have (added later, or already removed)."""
    for rule in _VERSIONED_FIELDS:
        for path, mapping in _mappings_at(data, rule.parent, ()):
            if rule.key not in mapping:
                continue
            if not version.at_least(rule.since):
                findings.error(
                    (*path, rule.key),
                    f"{rule.key} needs apiVersion {GROUP}/{rule.since} or later (this file is {version})",
                )
            elif rule.removed_in is not None and version.at_least(rule.removed_in):
                findings.error(
                    (*path, rule.key),
                    f"{rule.key} was removed in {rule.removed_in} ({rule.why}): delete it",
                )


def _mappings_at(data: Any, pattern: YamlPath, path: YamlPath) -> list[tuple[YamlPath, dict[str, Any]]]:
    if not pattern:
        return [(path, data)] if isinstance(data, dict) else []
    head, rest = pattern[0], pattern[1:]
    if head == "[]":
        if not isinstance(data, list):
            return []
        return [found for i, item in enumerate(data) for found in _mappings_at(item, rest, (*path, i))]
    if not isinstance(data, dict):
        return []
    return _mappings_at(data.get(head), rest, (*path, head))
