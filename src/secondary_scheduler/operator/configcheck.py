"""Check the scheduler's ConfigMap before rolling it out, with the scheduler's own loader.

Upstream mounts whatever the ConfigMap holds and lets the scheduler crash-loop on a bad
file. We load it first: a config our scheduler would refuse holds the rollout back and says
why, with the loader's file:line messages.

Another scheduler image (say, upstream scheduler-plugins) may ship plugins we do not, so for
a foreign `schedulerImage` only what every kube-scheduler needs is enforced (YAML that is a
KubeSchedulerConfiguration); the loader's other findings are reported but do not block. For
upstream's own images (`operator.upstreamimage`) what their strict decoder refuses blocks too:
a version their release no longer reads (the seeds' v1beta1 on kube-scheduler 1.34, with the
v1 equivalent in the message) and unknown fields.

Our image runs the in-tree plugins, so the check loads with `plugins.catalog.IN_TREE_CATALOG`:
their names, extension points and args models, without their code (the operator imports
neither the scheduling framework nor numpy; tests/unit/test_import_graph.py holds it to that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from secondary_scheduler.config import ConfigError, load_config
from secondary_scheduler.config.versions import GROUP
from secondary_scheduler.operator import names
from secondary_scheduler.operator.spec import SecondarySchedulerSpec
from secondary_scheduler.operator.upstreamimage import (
    UpstreamImage,
    unknown_field_problems,
    upstream_image,
    version_problem,
)
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.safeyaml import MAX_CONFIG_BYTES, safe_load

State = Literal["valid", "unverified", "invalid", "missing", "unset"]
MAX_PROBLEMS = 10


@dataclass(frozen=True)
class ConfigCheck:
    """The outcome, worded for a condition: `reason` in CamelCase, `message` says what to do."""

    state: State
    reason: str
    message: str
    document: dict[str, Any] | None = None
    """The parsed YAML, for deriving RBAC; None when there is none."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Loader warnings (or, for a foreign image, its errors) worth an Event."""

    @property
    def blocks_rollout(self) -> bool:
        return self.state in ("invalid", "missing", "unset")

    def held_message(self, deployed: bool) -> str:
        """The message of a config that blocks the rollout, saying what runs meanwhile."""
        meanwhile = "the running scheduler is left as it is" if deployed else "the scheduler is not deployed"
        return f"{meanwhile.capitalize()}. {self.message}"


def is_our_image(image: str) -> bool:
    """Our scheduler image (any registry, tag or digest): the config must load exactly as it will run.

    Images built from this repository and pushed elsewhere keep the repository name
    `secsched-scheduler` (docs/images.md, "Use your own images"), so that is what is recognised.
    """
    repository = names.SCHEDULER_IMAGE.rsplit(":", 1)[0]
    if image == repository or image.startswith((f"{repository}:", f"{repository}@")):
        return True
    name = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    return name == repository.rsplit("/", 1)[-1]


def check_config(
    spec: SecondarySchedulerSpec, configmap: dict[str, Any] | None, namespace: str
) -> ConfigCheck:
    """Whether `configmap` (None: not found) holds a config the scheduler in `spec.image` can run."""
    name = spec.scheduler_config
    if not name:
        return ConfigCheck(
            "unset",
            "SchedulerConfigNotSet",
            f"spec.schedulerConfig is empty: set it to the name of a ConfigMap in namespace {namespace} "
            f"whose key {names.CONFIG_KEY} holds the KubeSchedulerConfiguration",
        )
    if configmap is None:
        return ConfigCheck(
            "missing",
            "ConfigMapMissing",
            f"ConfigMap {name} (spec.schedulerConfig) does not exist in namespace {namespace}: create it "
            f"with `kubectl create -n {namespace} configmap {name} --from-file={names.CONFIG_KEY}`; "
            "the scheduler is deployed as soon as it appears",
        )
    data = configmap.get("data") or {}
    text = data.get(names.CONFIG_KEY)
    if not isinstance(text, str):
        keys = ", ".join(sorted(data)) or "none"
        return ConfigCheck(
            "invalid",
            "ConfigKeyMissing",
            f"ConfigMap {name} has no key {names.CONFIG_KEY} (its keys: {keys}): the scheduler reads "
            f"/etc/kubernetes/{names.CONFIG_KEY}; recreate the ConfigMap with "
            f"--from-file={names.CONFIG_KEY}",
        )
    source = f"configmap/{name}:{names.CONFIG_KEY}"
    document = _parse(text)
    upstream = upstream_image(spec.image)
    try:
        result = load_config(text, source, catalog=IN_TREE_CATALOG)
    except ConfigError as error:
        problems = [problem.render(source) for problem in error.problems]
        if is_our_image(spec.image) or not _is_scheduler_config(document):
            return ConfigCheck(
                "invalid",
                "ConfigInvalid",
                f"ConfigMap {name} does not hold a valid KubeSchedulerConfiguration; nothing is rolled "
                f"out until it does. Fix:\n{_listing(problems)}",
                document,
            )
        refused = _upstream_refusal(spec, upstream, document, text, problems)
        if refused is not None:
            return refused
        return ConfigCheck(
            "unverified",
            "ConfigNotVerified",
            f"ConfigMap {name}: {spec.image} is not our scheduler, so these findings of our loader "
            f"may not apply to it:\n{_listing(problems)}",
            document,
            tuple(problems),
        )
    refused = _upstream_refusal(spec, upstream, document, text, [])
    if refused is not None:
        return refused
    warnings = tuple(problem.render(source) for problem in result.warnings)
    version = (document or {}).get("apiVersion")
    if upstream is not None and upstream.minor is None and version != f"{GROUP}/v1":
        warnings += (
            f"{spec.image}: its tag does not say which Kubernetes release it is built on, and "
            f"kube-scheduler 1.29 and later read only {GROUP}/v1: if it is one of them it will not start "
            f"with this {version} config (`secsched config validate` prints it as v1)",
        )
    return ConfigCheck(
        "valid", "ConfigValid", f"ConfigMap {name} holds a valid configuration", document, warnings
    )


def _upstream_refusal(
    spec: SecondarySchedulerSpec,
    upstream: UpstreamImage | None,
    document: dict[str, Any] | None,
    text: str,
    problems: list[str],
) -> ConfigCheck | None:
    """What upstream's image would refuse at start (its strict decoder), as a held-back config:
    a version its release does not read, fields it does not know (among our loader's `problems`)."""
    if upstream is None or document is None:
        return None
    name = spec.scheduler_config
    unknown = unknown_field_problems(problems)
    strict = (
        f"{upstream.release} decodes its configuration strictly and would stop at start on fields "
        f"it does not know:\n{_listing(unknown)}"
    )
    if problem := version_problem(upstream, document, text):
        also = f"\nAlso, {strict}" if unknown else ""
        return ConfigCheck(
            "invalid", "ConfigVersionUnsupported", f"ConfigMap {name}: {problem}{also}", document
        )
    if unknown:
        return ConfigCheck(
            "invalid",
            "ConfigInvalid",
            f"ConfigMap {name} holds fields {spec.image} does not know, so nothing is rolled out until "
            f"they are fixed (its pods would crash-loop): {strict}",
            document,
        )
    return None


def _parse(text: str) -> dict[str, Any] | None:
    """The ConfigMap's YAML for deriving RBAC, read within safeyaml's limits (anyone who may edit
    a ConfigMap in the namespace writes this text; an alias bomb must not take the operator down)."""
    try:
        document = safe_load(text, max_bytes=MAX_CONFIG_BYTES, what="the configuration")
    except yaml.YAMLError:
        return None
    return document if isinstance(document, dict) else None


def _is_scheduler_config(document: dict[str, Any] | None) -> bool:
    """What any kube-scheduler build insists on, whatever plugins it ships."""
    return (
        document is not None
        and document.get("kind") == "KubeSchedulerConfiguration"
        and str(document.get("apiVersion", "")).startswith("kubescheduler.config.k8s.io/")
    )


def _listing(problems: list[str]) -> str:
    shown = problems[:MAX_PROBLEMS]
    more = len(problems) - len(shown)
    tail = [f"... and {more} more (run `secsched config validate` on the file)"] if more else []
    return "\n".join(shown + tail)
