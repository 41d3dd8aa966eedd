"""Load a KubeSchedulerConfiguration: YAML in, the effective configuration (or every error) out.

Each stage records into one collector and later stages still run where they can (every
profile, every plugin's args), so a single run reports all problems, each with its line.
Which plugins exist is the caller's `PluginCatalog`: the loader imports no plugin.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secondary_scheduler.config.base import format_go_duration
from secondary_scheduler.config.diagnose import validate_model
from secondary_scheduler.config.errors import ConfigError, Finding, Findings, Problem, YamlPath, format_path
from secondary_scheduler.config.extenders import Extender, ignored_by_scheduler, validate_extenders
from secondary_scheduler.config.model import LeaderElection, Profile, SchedulerConfiguration
from secondary_scheduler.config.placeholders import find_placeholders
from secondary_scheduler.config.plugin_catalog import PluginCatalog
from secondary_scheduler.config.profiles import build_profile
from secondary_scheduler.config.schema import DocumentInput
from secondary_scheduler.config.versions import ApiVersion, check_header, check_versioned_fields
from secondary_scheduler.config.yaml_source import YamlDocument, parse_yaml

_FIT = "NodeResourcesFit"
_JITTER_FACTOR = 1.2  # client-go's leader election requires renewDeadline > 1.2 x retryPeriod


@dataclass(frozen=True)
class LoadResult:
    """A usable configuration, and the warnings (in file order) worth showing whoever wrote it."""

    config: SchedulerConfiguration
    warnings: tuple[Problem, ...]
    source: str


def load_config(text: str, source: str = "<config>", *, catalog: PluginCatalog) -> LoadResult:
    """The effective configuration in `text`; raises ConfigError listing every problem.

    `source` names the text in messages (a file name); `catalog` holds the plugins the
    configuration may enable (the command's registry, `plugins.registry.catalog_of`).
    """
    findings = Findings()
    document = parse_yaml(text, findings)
    config = _effective(document.data, findings, catalog) if document is not None else None
    problems = _problems(findings.errors, document)
    warnings = _problems(findings.warnings, document)
    if config is None or problems:
        raise ConfigError(source, problems, warnings)
    return LoadResult(config, tuple(warnings), source)


def load_config_file(path: str | os.PathLike[str], *, catalog: PluginCatalog) -> LoadResult:
    """`load_config` on a file (UTF-8, a BOM is fine). OSError if it cannot be read."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problem = Problem("", None, f"not UTF-8 text (byte {error.start}): save the file as UTF-8")
        raise ConfigError(str(path), [problem]) from error
    return load_config(text, str(path), catalog=catalog)


def _effective(data: Any, findings: Findings, catalog: PluginCatalog) -> SchedulerConfiguration | None:
    if not isinstance(data, dict):
        findings.error((), "expected a KubeSchedulerConfiguration (key: value lines) at the top level")
        return None
    for path, message in find_placeholders(data):
        findings.error(path, message)
        findings.shadow(path)
    for path, number in _huge_integers(data, ()):
        findings.error(path, f"{number} is out of range: Kubernetes integers are at most 64-bit (±9.2e18)")
        findings.shadow(path)
    version = check_header(data, findings)
    if version is None:
        return None
    check_versioned_fields(version, data, findings)
    top = validate_model(DocumentInput, data, (), findings, fields=catalog.fields)
    profiles = _profiles(data.get("profiles"), version, findings, catalog)
    extenders = validate_extenders(data.get("extenders") or [], findings, catalog.fields)
    if top is not None:
        _check_top_level(top, version, findings)
    _check_across_profiles(profiles, findings)
    profiles = _ignore_extender_resources(profiles, extenders, findings)
    if top is None or findings.errors:
        return None
    return SchedulerConfiguration(
        parallelism=top.parallelism,
        percentage_of_nodes_to_score=top.percentage_of_nodes_to_score,
        pod_initial_backoff_seconds=top.pod_initial_backoff_seconds,
        pod_max_backoff_seconds=top.pod_max_backoff_seconds,
        enable_profiling=top.enable_profiling,
        enable_contention_profiling=(
            top.enable_profiling
            if top.enable_contention_profiling is None
            else top.enable_contention_profiling
        ),
        delay_cache_until_active=top.delay_cache_until_active,
        client_connection=top.client_connection,
        leader_election=top.leader_election,
        profiles=tuple(profile for _, profile in profiles),
        extenders=extenders,
    )


def _huge_integers(data: Any, path: YamlPath) -> list[tuple[YamlPath, int]]:
    """Integers Go's JSON decoder cannot hold in an int64 (it refuses the whole file for them)."""
    found: list[tuple[YamlPath, int]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            found += _huge_integers(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _huge_integers(value, (*path, index))
    elif isinstance(data, int) and not isinstance(data, bool) and not -(2**63) <= data < 2**63:
        found.append((path, data))
    return found


def _profiles(
    raw: Any, version: ApiVersion, findings: Findings, catalog: PluginCatalog
) -> list[tuple[int, Profile]]:
    """Each profile that could be built, with its index. No profiles means one default profile."""
    if raw is None or raw == []:
        raw = [{}]
    if not isinstance(raw, list):
        return []  # DocumentInput reports the type error
    built = []
    for index, item in enumerate(raw):
        if isinstance(item, dict):
            profile = build_profile(item, ("profiles", index), version, findings, catalog)
            if profile is not None:
                built.append((index, profile))
    return built


def _check_top_level(top: DocumentInput, version: ApiVersion, findings: Findings) -> None:
    if top.pod_max_backoff_seconds < top.pod_initial_backoff_seconds:
        findings.error(
            ("podMaxBackoffSeconds",),
            f"must be at least podInitialBackoffSeconds ({top.pod_initial_backoff_seconds}), "
            f"got {top.pod_max_backoff_seconds}",
        )
    for key, value in (
        ("healthzBindAddress", top.healthz_bind_address),
        ("metricsBindAddress", top.metrics_bind_address),
    ):
        if value is not None and version is ApiVersion.V1BETA1:
            findings.warn(
                (key,), "deprecated and ignored (a no-op since Kubernetes 1.20, gone in v1beta2): delete it"
            )
    if top.leader_election.leader_elect:
        _check_leader_election(top.leader_election, findings)


def _ignore_extender_resources(
    profiles: list[tuple[int, Profile]], extenders: tuple[Extender, ...], findings: Findings
) -> list[tuple[int, Profile]]:
    """Managed resources marked ignoredByScheduler become every profile's NodeResourcesFit ignoredResources.

    As upstream's buildExtenders: they replace the args' list, and a profile without
    NodeResourcesFit args (the plugin disabled) is an error.
    """
    ignored = ignored_by_scheduler(extenders)
    if not ignored:
        return profiles
    updated = []
    for index, profile in profiles:
        args = profile.plugin_args.get(_FIT)
        if args is None:
            findings.error(
                ("profiles", index),
                f"can't find NodeResourcesFitArgs in plugin config: extenders mark {', '.join(ignored)} "
                "ignoredByScheduler, which needs the NodeResourcesFit plugin enabled in every profile",
            )
            updated.append((index, profile))
            continue
        new_args = args.model_copy(update={"ignored_resources": list(ignored)})
        updated.append(
            (index, profile.model_copy(update={"plugin_args": {**profile.plugin_args, _FIT: new_args}}))
        )
    return updated


def _check_leader_election(election: LeaderElection, findings: Findings) -> None:
    at = ("leaderElection",)
    durations = {
        "leaseDuration": election.lease_duration,
        "renewDeadline": election.renew_deadline,
        "retryPeriod": election.retry_period,
    }
    not_positive = [key for key, seconds in durations.items() if seconds <= 0]
    for key in not_positive:
        findings.error((*at, key), f"must be a positive duration, got {format_go_duration(durations[key])}")
    if not not_positive:
        if election.renew_deadline >= election.lease_duration:
            findings.error(
                (*at, "renewDeadline"),
                f"must be shorter than leaseDuration ({format_go_duration(election.lease_duration)})",
            )
        if election.renew_deadline <= _JITTER_FACTOR * election.retry_period:
            findings.error(
                (*at, "retryPeriod"),
                f"must be shorter than renewDeadline "
                f"({format_go_duration(election.renew_deadline)}) divided by 1.2",
            )
    for key, value in (
        ("resourceName", election.resource_name),
        ("resourceNamespace", election.resource_namespace),
    ):
        if not value:
            findings.error((*at, key), "must not be empty while leaderElect is true")


def _check_across_profiles(profiles: list[tuple[int, Profile]], findings: Findings) -> None:
    """Each profile needs its own schedulerName.

    (Upstream also requires one queueSort plugin for all profiles; we ship only PrioritySort
    and each profile must enable exactly one, so that always holds.)
    """
    first_with_name: dict[str, int] = {}
    for index, profile in profiles:
        name = profile.scheduler_name
        if name in first_with_name:
            findings.error(
                ("profiles", index, "schedulerName"),
                f"{name!r} is already the schedulerName of profiles[{first_with_name[name]}]: "
                "names must be unique",
            )
        first_with_name.setdefault(name, index)


def _problems(found: list[Finding], document: YamlDocument | None) -> list[Problem]:
    problems = [
        Problem(
            format_path(finding.path),
            finding.line if finding.line is not None or document is None else document.line_of(finding.path),
            finding.message,
        )
        for finding in found
    ]
    return sorted(problems, key=lambda problem: problem.line or 0)
