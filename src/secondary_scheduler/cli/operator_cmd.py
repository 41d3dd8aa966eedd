"""`secsched operator`: run the SecondaryScheduler operator, or print what it would apply."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from secondary_scheduler.operator import certs, names
from secondary_scheduler.operator.render import ClusterFacts, plan
from secondary_scheduler.operator.spec import SpecError, parse_instance


@click.group("operator")
def operator() -> None:
    """The SecondaryScheduler operator (a drop-in for OpenShift's Secondary Scheduler Operator)."""


def _read_yaml(path: str, what: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise click.BadParameter(f"cannot read {what} {path}: {error}") from error
    if not isinstance(document, dict):
        raise click.BadParameter(f"{path} does not hold a {what} (a YAML mapping)")
    return document


def _as_configmap(document: dict[str, Any], name: str) -> dict[str, Any]:
    """A ConfigMap manifest as is; a bare KubeSchedulerConfiguration wrapped as its config.yaml."""
    if document.get("kind") == "ConfigMap":
        return document
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
    type=click.Path(exists=True, dir_okay=False),
    help="A SecondaryScheduler manifest.",
)
@click.option(
    "--configmap",
    "configmap_file",
    type=click.Path(exists=True, dir_okay=False),
    help="Its ConfigMap manifest (or a bare KubeSchedulerConfiguration). Omitted: treated as missing.",
)
@click.option(
    "--namespace", default=names.DEFAULT_NAMESPACE, show_default=True, help="When the CR names none."
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
    namespace: str,
    nodes: int,
    service_monitor: bool,
    service_ca: bool,
) -> None:
    """Print, as YAML, exactly the objects the operator would apply for a CR and its ConfigMap.

    \b
    The same function builds them for the running operator; the cluster facts it would
    look up (matching nodes, ServiceMonitor and service-ca support) come from the flags.
    Exit status 1 when the Deployment would be held back (missing or invalid config, said
    on stderr); 2 when the CR itself is invalid.
    """
    try:
        instance = parse_instance(_read_yaml(cr_file, "SecondaryScheduler"), namespace)
    except SpecError as error:
        for problem in error.problems:
            click.echo(f"{cr_file}: {problem}", err=True)
        sys.exit(2)
    configmap = None
    if configmap_file:
        configmap = _as_configmap(_read_yaml(configmap_file, "ConfigMap"), instance.spec.scheduler_config)
    cert = None if service_ca else certs.generate(instance.namespace)
    facts = ClusterFacts(nodes, service_monitor, service_ca, cert)
    result = plan(instance, configmap, facts)
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
        click.echo(f"error: Deployment held back: {result.config.message}", err=True)
        sys.exit(1)


@operator.command("run")
@click.option(
    "--namespace",
    envvar="WATCH_NAMESPACE",
    default=names.DEFAULT_NAMESPACE,
    show_default=True,
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
@click.option("--liveness", help="Serve kopf's liveness probe here, e.g. http://0.0.0.0:8080/healthz.")
def run_command(
    namespace: str, kubeconfig: str | None, context: str | None, resync: float, liveness: str | None
) -> None:
    """Run the operator: reconcile SecondaryScheduler `cluster` until interrupted.

    \b
    Verbosity follows the CR's spec.operatorLogLevel while running.
    """
    # kopf takes a second to import: only this command pays for it.
    from secondary_scheduler.operator.controller import OperatorOptions, run

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    options = OperatorOptions(namespace, kubeconfig, context, resync, liveness)
    asyncio.run(run(options))
