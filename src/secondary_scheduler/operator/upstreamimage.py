"""Upstream's scheduler images, the Kubernetes release each is built for, and the configuration
versions that release reads.

The seeds' configs are `kubescheduler.config.k8s.io/v1beta1` or `v1beta3`, which our loader
reads, but kube-scheduler reads only the versions its scheme registers (1.34: v1 alone), and
decodes strictly: a config in a version it no longer reads, or with a field it does not know,
stops it at start and its pods crash-loop. So for upstream's images (kube-scheduler, and
scheduler-plugins' kube-scheduler built on it) the operator learns the release from the tag
and holds such a config back, printing its v1 equivalent.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from secondary_scheduler.config import ConfigError, dump_config, dump_config_yaml, load_config
from secondary_scheduler.config.legacy import STRATEGY_OF
from secondary_scheduler.config.versions import GROUP, SERVED_BY_MINORS, ApiVersion, read_by
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

_RELEASE_TAG = re.compile(r"^v(?P<major>0|1)\.(?P<minor>\d+)(\.\d+)?([-+].*)?$")


@dataclass(frozen=True)
class UpstreamImage:
    """An image of upstream's kube-scheduler or of scheduler-plugins (v0.Y.Z: Kubernetes 1.Y.Z)."""

    image: str
    project: Literal["kube-scheduler", "scheduler-plugins"]
    minor: int | None
    """The Kubernetes release it is built on, 1.<minor>; None when its tag does not say."""

    @property
    def release(self) -> str:
        """`kube-scheduler 1.34`, the words messages name the image's reader by."""
        return f"kube-scheduler 1.{self.minor}" if self.minor is not None else "kube-scheduler"

    def described(self) -> str:
        """What the image is: `scheduler-plugins' kube-scheduler, built on Kubernetes 1.34`."""
        base = (
            "scheduler-plugins' kube-scheduler" if self.project == "scheduler-plugins" else "kube-scheduler"
        )
        return f"{base}, built on Kubernetes 1.{self.minor}" if self.minor is not None else base

    def versions_read(self) -> list[ApiVersion]:
        """The configuration versions this image reads, newest first (its release must be known)."""
        assert self.minor is not None
        return [version for version in reversed(ApiVersion) if read_by(version, self.minor)]


def upstream_image(image: str) -> UpstreamImage | None:
    """`image` as an upstream scheduler image (any registry or mirror), or None if it is not one.

    Recognised by its repository's last component, `kube-scheduler` (a parent `scheduler-plugins`
    makes it scheduler-plugins'), and its release by the tag: v1.Y.Z is Kubernetes 1.Y, v0.Y.Z
    scheduler-plugins' numbering for the same.
    """
    reference = image.split("@", 1)[0]
    repository, _, tag = (
        reference.rpartition(":") if ":" in reference.rsplit("/", 1)[-1] else (reference, "", "")
    )
    parts = repository.split("/")
    if parts[-1] != "kube-scheduler":
        return None
    match = _RELEASE_TAG.match(tag)
    minor = int(match["minor"]) if match else None
    scheduler_plugins = "scheduler-plugins" in parts[:-1] or (match is not None and match["major"] == "0")
    return UpstreamImage(image, "scheduler-plugins" if scheduler_plugins else "kube-scheduler", minor)


def version_problem(image: UpstreamImage, document: dict[str, Any], text: str) -> str | None:
    """Why `image` cannot read the configuration `document` (parsed from `text`), or None."""
    version = _version_of(document)
    if version is None or image.minor is None or read_by(version, image.minor):
        return None
    read = ", ".join(f"{GROUP}/{each}" for each in image.versions_read()) or "none of the versions we know"
    first, last = SERVED_BY_MINORS[version]
    span = f"1.{first} to 1.{last}" if last is not None else f"1.{first} and later"
    problem = (
        f"its config.yaml is {GROUP}/{version}, which {image.image} cannot read: that image is "
        f"{image.described()}, which reads only {read} ({version} was read by kube-scheduler {span}), "
        "so its pods would crash-loop at start. Nothing is rolled out until config.yaml is in a "
        "version the image reads"
    )
    if image.minor < SERVED_BY_MINORS[ApiVersion.V1][0]:
        return f"{problem}: or use an image built for the cluster's Kubernetes minor version"
    return f"{problem}; its {GROUP}/v1 equivalent:\n{v1_equivalent(document, text)}"


def unknown_field_problems(problems: list[str]) -> list[str]:
    """The loader's findings that kube-scheduler's strict decoding would refuse as well."""
    return [problem for problem in problems if ": unknown field `" in problem]


def v1_equivalent(document: dict[str, Any], text: str) -> str:
    """The configuration `document` (parsed from `text`) rewritten as v1: the same document with
    its apiVersion (and its plugin args') moved to v1 and what v1 no longer has removed, checked
    to load to the same effective configuration; else the whole effective configuration."""
    migrated = _migrated(document)
    rewritten = yaml.safe_dump(migrated, sort_keys=False, allow_unicode=True)
    try:
        before = load_config(text, catalog=IN_TREE_CATALOG).config
    except ConfigError:
        return rewritten  # plugins we do not ship (scheduler-plugins has more): not checkable here
    try:
        after = load_config(rewritten, catalog=IN_TREE_CATALOG).config
    except ConfigError:
        return dump_config_yaml(before)
    return rewritten if dump_config(after) == dump_config(before) else dump_config_yaml(before)


def _version_of(document: dict[str, Any]) -> ApiVersion | None:
    group, _, name = str(document.get("apiVersion", "")).partition("/")
    return ApiVersion(name) if group == GROUP and name in set(ApiVersion) else None


def _migrated(document: dict[str, Any]) -> dict[str, Any]:
    """`document` in v1's words: v1beta1's no-op fields and disabled legacy score plugins dropped."""
    migrated = copy.deepcopy(document)
    migrated["apiVersion"] = f"{GROUP}/v1"
    for removed in ("healthzBindAddress", "metricsBindAddress"):
        migrated.pop(removed, None)
    for profile in migrated.get("profiles") or []:
        if not isinstance(profile, dict):
            continue
        for entry in profile.get("pluginConfig") or []:
            args = entry.get("args") if isinstance(entry, dict) else None
            if isinstance(args, dict) and str(args.get("apiVersion", "")).startswith(f"{GROUP}/"):
                args["apiVersion"] = f"{GROUP}/v1"
        for plugin_set in (profile.get("plugins") or {}).values():
            if isinstance(plugin_set, dict) and isinstance(plugin_set.get("disabled"), list):
                plugin_set["disabled"] = [
                    entry
                    for entry in plugin_set["disabled"]
                    if not (isinstance(entry, dict) and entry.get("name") in STRATEGY_OF)
                ]
                if not plugin_set["disabled"]:
                    del plugin_set["disabled"]
    return migrated
