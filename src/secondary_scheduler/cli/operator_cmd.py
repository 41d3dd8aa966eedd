"""`secsched operator`: run the SecondaryScheduler operator, or print what it would apply."""

from __future__ import annotations

import asyncio
import errno
import logging
import re
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import click
import yaml

from secondary_scheduler.apivalidation import dns_label_problem
from secondary_scheduler.cli.errors import InputError, read_input
from secondary_scheduler.kube import kubeconfig as kubeconfig_loader
from secondary_scheduler.operator import certs, names
from secondary_scheduler.operator.render import ClusterFacts, plan
from secondary_scheduler.operator.spec import SpecError, parse_instance
from secondary_scheduler.safeyaml import MAX_MANIFEST_BYTES, YamlLimitError, describe_error, safe_load


@click.group("operator")
def operator() -> None:
    """The SecondaryScheduler operator (a drop-in for OpenShift's Secondary Scheduler Operator)."""


def _read_yaml(path: str, what: str) -> dict[str, Any]:
    """One manifest, read within secondary_scheduler.safeyaml's limits; InputError if unusable."""
    text = read_input(path, what, MAX_MANIFEST_BYTES)
    try:
        document = safe_load(text, max_bytes=MAX_MANIFEST_BYTES, what=f"the {what}")
    except yaml.YAMLError as error:
        line, problem = describe_error(error)
        fix = "" if isinstance(error, YamlLimitError) else f"give the {what} as YAML (one document)"
        raise InputError(path, problem, line=line, fix=fix) from error
    if not isinstance(document, dict):
        raise InputError(path, f"does not hold a {what} (a YAML mapping)", fix=f"give the {what}'s manifest")
    return document


def _as_configmap(document: dict[str, Any], name: str, path: str) -> dict[str, Any]:
    """A ConfigMap manifest as is; a bare KubeSchedulerConfiguration wrapped as its config.yaml;
    any other object (a Secret holding the config, the CR given twice) refused by its kind."""
    kind = document.get("kind")
    if kind == "ConfigMap" and document.get("apiVersion", "v1") == "v1":
        return document
    if kind not in (None, "KubeSchedulerConfiguration"):
        refused = f"{document.get('apiVersion')}/{kind}" if kind == "ConfigMap" else kind
        fix = (
            f"the operator reads its configuration only from ConfigMap {name} (spec.schedulerConfig), "
            f"never from a Secret: kubectl create configmap {name} --from-file={names.CONFIG_KEY}"
            if kind == "Secret"
            else "give the ConfigMap (apiVersion: v1) or a bare KubeSchedulerConfiguration"
        )
        problem = f"this is a {refused}, not a ConfigMap or a KubeSchedulerConfiguration"
        raise InputError(path, problem, field="kind", fix=fix)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {names.CONFIG_KEY: yaml.safe_dump(document, sort_keys=False)},
    }


@operator.command("render")
@click.option(
    "--cr",
    "cr_file",
    required=True,
    type=click.Path(),
    help="A SecondaryScheduler manifest.",
)
@click.option(
    "--configmap",
    "configmap_file",
    type=click.Path(),
    help="Its ConfigMap manifest (or a bare KubeSchedulerConfiguration). Omitted: treated as missing.",
)
@click.option(
    "--allow-invalid",
    is_flag=True,
    help="Render the Deployment even when the operator would hold it back (missing or invalid "
    "config); the problems become warnings and the exit status 0.",
)
@click.option(
    "--namespace",
    default=names.DEFAULT_NAMESPACE,
    show_default=True,
    callback=lambda _ctx, param, value: _namespace(param, value),
    help="When the CR names none.",
)
@click.option(
    "--nodes",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="Nodes matching the HA nodeSelector (HighlyAvailable mode: replicas = min(nodes, maxReplicas)).",
)
@click.option(
    "--service-monitor/--no-service-monitor",
    default=False,
    show_default=True,
    help="Whether the cluster serves monitoring.coreos.com ServiceMonitors.",
)
@click.option(
    "--service-ca/--no-service-ca",
    default=True,
    show_default=True,
    help="Whether OpenShift's service-ca makes the serving-cert Secret; without it a self-signed "
    "Secret is rendered too (with a fresh private key in it).",
)
def render(
    cr_file: str,
    configmap_file: str | None,
    allow_invalid: bool,
    namespace: str,
    nodes: int,
    service_monitor: bool,
    service_ca: bool,
) -> None:
    """Print, as YAML, exactly the objects the operator would apply for a CR and its ConfigMap.

    \b
    The same function builds them for the running operator; the cluster facts it would
    look up (matching nodes, ServiceMonitor and service-ca support) come from the flags.
    Refused (exit 1, nothing on stdout, the reasons on stderr): a CR the operator would
    not reconcile (invalid, or not named `cluster`), a ConfigMap it would not read (not
    the one spec.schedulerConfig names), and a config it would hold back (missing, or
    refused by the scheduler's loader; --allow-invalid renders it anyway).
    """
    body = _read_yaml(cr_file, "SecondaryScheduler")
    try:
        instance = parse_instance(body, namespace)
    except SpecError as error:
        first, *more = error.problems
        raise InputError(cr_file, first, more=[f"{cr_file}: {problem}" for problem in more]) from error
    name = (body.get("metadata") or {}).get("name")
    if name is not None and name != names.INSTANCE_NAME:
        raise InputError(
            cr_file,
            f"{name!r}: the operator reconciles only the SecondaryScheduler named {names.INSTANCE_NAME!r} "
            "(upstream's rule); it would give this one a Warning event (Ignored) and deploy nothing",
            field="metadata.name",
            fix=f"name it {names.INSTANCE_NAME}",
        )
    configmap = None
    if configmap_file:
        document = _read_yaml(configmap_file, "ConfigMap")
        configmap = _as_configmap(document, instance.spec.scheduler_config, configmap_file)
        _check_configmap(configmap, configmap_file, instance.spec.scheduler_config, instance.namespace)
    cert = None if service_ca else certs.generate(instance.namespace)
    facts = ClusterFacts(nodes, service_monitor, service_ca, cert)
    result = plan(instance, configmap, facts, deploy_anyway=allow_invalid)
    if result.config.blocks_rollout and not allow_invalid:
        source = configmap_file or cr_file
        raise InputError(
            source,
            f"Deployment held back: the operator would set Degraded=True (reason {result.config.reason}) "
            "and deploy nothing until this is fixed (--allow-invalid renders the objects anyway): "
            f"{result.config.message}",
        )
    click.echo(yaml.safe_dump_all(result.objects, sort_keys=False), nl=False)
    if not instance.uid:
        click.echo(
            "note: the CR has no metadata.uid (not read from a cluster), so no ownerReferences were "
            "rendered; the operator sets them",
            err=True,
        )
    for note in (*result.config.notes, *result.notes):
        click.echo(f"note: {note}", err=True)
    if result.config.blocks_rollout:
        click.echo(
            f"warning: rendered with --allow-invalid: the operator would hold the Deployment back "
            f"(Degraded=True, reason {result.config.reason}): {result.config.message}",
            err=True,
        )


def _check_configmap(configmap: dict[str, Any], path: str, wanted: str, namespace: str) -> None:
    """What the API server and the operator require of the ConfigMap the CR names."""
    metadata = configmap.get("metadata")
    if not isinstance(metadata, dict):
        raise InputError(path, "missing or not a mapping", field="metadata", fix="give the ConfigMap a name")
    name = metadata.get("name")
    if wanted and name != wanted:
        raise InputError(
            path,
            f"this is ConfigMap {name!r}, but the CR's spec.schedulerConfig names {wanted!r}: the operator "
            f"would not read this one, and would report ConfigMapMissing until {wanted!r} exists",
            field="metadata.name",
            fix=f"name it {wanted}, or set spec.schedulerConfig: {name}",
        )
    given_namespace = metadata.get("namespace")
    if given_namespace not in (None, "", namespace):
        raise InputError(
            path,
            f"this ConfigMap is in namespace {given_namespace!r}, but the operator reads it from "
            f"{namespace!r} (the CR's namespace)",
            field="metadata.namespace",
            fix=f"put it in {namespace}",
        )
    for key in ("data", "binaryData"):
        values = configmap.get(key)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise InputError(
                path, "expected a mapping of key to text", field=key, fix="write key: value lines"
            )
        for entry, value in values.items():
            if not isinstance(entry, str) or not re.fullmatch(r"[-._a-zA-Z0-9]{1,253}", entry):
                raise InputError(
                    path,
                    f"{entry!r} is not a valid ConfigMap key",
                    field=key,
                    fix="keys are letters, digits, '-', '_' and '.'",
                )
            if not isinstance(value, str):
                raise InputError(
                    path,
                    "expected a string (the API server stores text only)",
                    field=f"{key}.{entry}",
                    fix="quote it, or write it as a block (`config.yaml: |`)",
                )


@operator.command("run")
@click.option(
    "--namespace",
    envvar="WATCH_NAMESPACE",
    default=names.DEFAULT_NAMESPACE,
    show_default=True,
    callback=lambda _ctx, param, value: _namespace(param, value),
    help="The operator's namespace: its SecondaryScheduler `cluster` and the scheduler live here "
    "($WATCH_NAMESPACE).",
)
@click.option(
    "--kubeconfig", type=click.Path(dir_okay=False), help="Default: in-cluster, $KUBECONFIG, ~/.kube/config."
)
@click.option("--context", help="The kubeconfig context to use.")
@click.option(
    "--resync",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Seconds between periodic reconciles (node count for HA, cluster-scoped drift).",
)
@click.option(
    "--liveness",
    callback=lambda _ctx, param, value: _probe_url(param, value),
    help="Serve kopf's liveness probe here, e.g. http://0.0.0.0:8080/healthz.",
)
@click.option(
    "--readiness",
    callback=lambda _ctx, param, value: _probe_url(param, value),
    help="Serve readiness here, e.g. http://0.0.0.0:8081/readyz: 200 once a reconcile has read the "
    "CR and its ConfigMap, 503 (with the last error) until then.",
)
def run_command(
    namespace: str,
    kubeconfig: str | None,
    context: str | None,
    resync: float,
    liveness: str | None,
    readiness: str | None,
) -> None:
    """Run the operator: reconcile SecondaryScheduler `cluster` until interrupted.

    \b
    Verbosity follows the CR's spec.operatorLogLevel while running.
    """
    # kopf takes a second to import: only this command pays for it.
    from secondary_scheduler.operator.controller import OperatorOptions, run

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    try:
        # Checked before kopf starts: a bad kubeconfig is the user's input, not the operator's failure.
        connection = kubeconfig_loader.load(kubeconfig, context, context_flag="--context")
    except kubeconfig_loader.KubeconfigError as error:
        raise click.ClickException(str(error)) from error  # already FILE:LINE: FIELD: problem: fix
    options = OperatorOptions(namespace, kubeconfig, context, resync, liveness, readiness)
    try:
        asyncio.run(run(options))
    except aiohttp.ClientConnectionError as error:  # kopf gave up on the API server after its retries
        raise click.ClickException(
            f"{connection.server}: cannot reach the API server ({error}): is it running and reachable "
            "from here (address, port, firewall, proxy)? Check the kubeconfig's server"
        ) from error
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise click.ClickException(
            f"--liveness/--readiness: the address is already in use ({error.strerror}): choose another port"
        ) from error


def _namespace(param: click.Parameter, value: str) -> str:
    """A namespace name as the API server requires it (a DNS label), checked before anything runs."""
    if problem := dns_label_problem(value):
        raise click.BadParameter(f"{problem} (a namespace name)", param=param)
    return value


def _probe_url(param: click.Parameter, value: str | None) -> str | None:
    """http://HOST:PORT/PATH, the only form kopf's probe server (and ours) can serve."""
    if value is None:
        return None
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as error:
        raise click.BadParameter(f"{value!r} is not a URL ({error})", param=param) from error
    if parts.scheme != "http" or not parts.hostname or port is None or not parts.path.startswith("/"):
        raise click.BadParameter(
            f"{value!r}: give http://HOST:PORT/PATH, e.g. http://0.0.0.0:8080/healthz", param=param
        )
    return value
