"""`secsched snapshot`: the state `secsched score` needs, taken from a live cluster.

"Why did my pod go there?" and "why is it Pending?" are answered on real state: the nodes,
the pods bound to them, the objects the configured plugins read (PVCs, StorageClasses,
PDBs...: the snapshot's `objects`), the load-aware plugins' metrics fetched once from their
configured source, the pods placed in the last minute with their bind times, and the time
it was all taken. `secsched score --snapshot` then runs the scheduler's own cycle on it.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path

import click
import yaml

from secondary_scheduler.cli.errors import InputError, read_input
from secondary_scheduler.cli.plugin_option import registry_or_exit
from secondary_scheduler.cli.trace_cmd import plan_history, record_history
from secondary_scheduler.config import ConfigError, SchedulerConfiguration, load_config
from secondary_scheduler.framework import Framework, Handle
from secondary_scheduler.framework.handle import Snapshot
from secondary_scheduler.framework.informers import Resource
from secondary_scheduler.kube import kubeconfig as kubeconfig_loader
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.podphase import scheduled_at
from secondary_scheduler.kube.reflector import failure_hint
from secondary_scheduler.plugins.registry import Registry, catalog_of
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs
from secondary_scheduler.plugins.trimaran.source import MetricSource
from secondary_scheduler.safeyaml import MAX_CONFIG_BYTES

DEFAULT_CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
BOUND_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
"""The pods that hold node resources, as the scheduler's own pod informer selects them."""
RECENT_SECONDS = 60.0
"""Pods bound this recently go in `recentlyScheduled` (TargetLoadPacking's window)."""
_NOISE = ("managedFields",)
_NOISY_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


@click.command("snapshot")
@click.option(
    "--config",
    "config_path",
    type=click.Path(),
    help="The scheduler's KubeSchedulerConfiguration: which objects its plugins read and where "
    "their metrics come from (default: kube-scheduler's default profile).",
)
@click.option("--kubeconfig", type=click.Path(), help="Default: in-cluster, $KUBECONFIG, ~/.kube/config.")
@click.option("--context", help="The kubeconfig context to use.")
@click.option(
    "--node-selector",
    default="",
    help="Only nodes with these labels (a label selector, e.g. node-role.kubernetes.io/worker=), "
    "and the pods on them.",
)
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Only pods and namespaced objects of this namespace (repeatable). Pods of other namespaces "
    "then do not count against their nodes' resources.",
)
@click.option(
    "--metrics/--no-metrics",
    default=True,
    show_default=True,
    help="Fetch the load-aware plugins' metrics once from their configured source.",
)
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    show_default=True,
    help="Where to write it: a .json file is JSON, anything else YAML (- is standard output).",
)
@click.option(
    "--history",
    metavar="DURATION",
    help="Also record the pods' lives and CPU/memory use over this past (e.g. 30m, 12h, 7d) from "
    "Prometheus into a trace for `secsched replay` (docs/replay-inputs.md).",
)
@click.option("--history-step", metavar="DURATION", help="Time between a pod's samples in the trace [1m].")
@click.option("--prometheus", metavar="URL", help="The Prometheus --history reads [the config's].")
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    help="Where --history writes the trace [the snapshot's name + .trace.jsonl.gz].",
)
def snapshot(
    config_path: str | None,
    kubeconfig: str | None,
    context: str | None,
    node_selector: str,
    namespaces: tuple[str, ...],
    metrics: bool,
    output: str,
    history: str | None,
    history_step: str | None,
    prometheus: str | None,
    trace_path: str | None,
) -> None:
    """Write a `secsched score` snapshot of a live cluster.

    \b
    Example: why would (or did) this VM land where it did?
      secsched snapshot --config config.yaml -o snapshot.yaml
      secsched score --config config.yaml --snapshot snapshot.yaml --pod vm-pod.yaml
    """
    history_plan = plan_history(history, history_step, prometheus, trace_path, output, namespaces)
    registry = registry_or_exit()  # in-tree and installed plugins (no --plugin here)
    config = _config(config_path, registry)
    try:
        connection = kubeconfig_loader.load(kubeconfig, context, context_flag="--context")
    except kubeconfig_loader.KubeconfigError as error:
        raise click.ClickException(str(error)) from error
    resources = informer_resources(config, registry)
    document = asyncio.run(
        take_snapshot(connection, config, resources, node_selector, namespaces, metrics=metrics)
    )
    text = (
        json.dumps(document, indent=1)
        if output.endswith(".json")
        else yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    )
    if output == "-":
        click.echo(text, nl=False)
    else:
        try:
            Path(output).write_text(text)
        except OSError as error:
            raise InputError(output, f"cannot be written ({error.strerror or error})") from error
    click.echo(
        f"snapshot: {len(document['nodes'])} nodes, {len(document['pods'])} pods, "
        f"{len(document.get('objects', []))} objects"
        + (", metrics" if document.get("metrics") else ", no metrics")
        + (f" -> {output}" if output != "-" else ""),
        err=True,
    )
    record_history(connection, [MetricSource.of(args) for args in trimaran_args(config)], history_plan)


def _config(path: str | None, registry: Registry) -> SchedulerConfiguration:
    catalog = catalog_of(registry)
    if path is None:
        return load_config(DEFAULT_CONFIG, "<defaults>", catalog=catalog).config
    try:
        return load_config(read_input(path, "configuration", MAX_CONFIG_BYTES), path, catalog=catalog).config
    except ConfigError as error:
        first, *more = error.problems
        raise InputError(
            path,
            first.message,
            line=first.line,
            field=first.path or None,
            more=[p.render(path) for p in more],
        ) from error


def informer_resources(config: SchedulerConfiguration, registry: Registry) -> list[Resource]:
    """The resources the profiles' plugins read through informers (what the scheduler would watch)."""
    handle = Handle(snapshot=Snapshot(now=0.0, data={}))  # plugins read no live source while counted
    for profile in config.profiles:
        try:
            Framework(profile, registry, handle, rng=random.Random(0))
        except ValueError as error:  # the framework's words already name the profile
            raise click.ClickException(str(error)) from error
    return [informer.resource for informer in handle.informers.all()]


def trimaran_args(config: SchedulerConfiguration) -> list[TrimaranArgs]:
    return [
        args
        for profile in config.profiles
        for name in profile.enabled_plugins()
        if isinstance(args := profile.plugin_args.get(name), TrimaranArgs)
    ]


async def take_snapshot(
    connection: kubeconfig_loader.Connection,
    config: SchedulerConfiguration,
    resources: list[Resource],
    node_selector: str,
    namespaces: tuple[str, ...],
    *,
    metrics: bool = True,
) -> JSON:
    """Everything `score` reads, listed now (one list per resource, each consistent in itself)."""
    async with ApiClient(
        connection, qps=50, burst=100, max_retry_seconds=10.0, user_agent="secsched-snapshot"
    ) as api:
        now = time.time()
        params = {"labelSelector": node_selector} if node_selector else None
        nodes = [_clean(node) for node in await _list(api, "/api/v1/nodes", "nodes", params)]
        names = {node["metadata"]["name"] for node in nodes}
        pods = [
            _clean(pod)
            for pod in await _list(api, "/api/v1/pods", "pods", {"fieldSelector": BOUND_PODS})
            if pod.get("spec", {}).get("nodeName") in names and _in(pod, namespaces)
        ]
        objects: list[JSON] = []
        for resource in resources:
            listed = await _list(api, resource.path, resource.plural, None)
            for obj in listed:
                obj.setdefault("apiVersion", resource.api_version)
                obj.setdefault("kind", resource.kind)
                if not resource.namespaced or _in(obj, namespaces):
                    objects.append(_clean(obj))
        document: JSON = {"now": round(now, 3), "nodes": nodes, "pods": pods}
        if objects:
            document["objects"] = objects
        recent = _recently_scheduled(pods, now)
        if recent:
            document["recentlyScheduled"] = recent
        if metrics:
            fetched = await _metrics(api, config)
            if fetched is not None:
                document["metrics"] = fetched
        return document


async def _list(api: ApiClient, path: str, what: str, params: dict[str, str] | None) -> list[JSON]:
    try:
        return list((await api.list_all(path, params))["items"])
    except ApiError as error:
        if error.status == 400 and params and "labelSelector" in params:
            raise click.BadParameter(
                f"{params['labelSelector']!r}: {error.message}", param_hint="'--node-selector'"
            ) from error
        raise click.ClickException(
            f"{api.connection.server}: {what}: the API server refused the list ({error}): "
            f"{failure_hint(error)}"
        ) from error
    except ApiUnavailable as error:
        raise click.ClickException(
            f"{api.connection.server}: {what}: cannot reach the API server "
            f"({str(error).split(': ', 1)[-1].rsplit(' (API server', 1)[0]}): {failure_hint(error)}"
        ) from error


def _in(obj: JSON, namespaces: tuple[str, ...]) -> bool:
    return not namespaces or obj.get("metadata", {}).get("namespace") in namespaces


def _clean(obj: JSON) -> JSON:
    """Without what only the API server needs (managedFields, last-applied copies): smaller files."""
    metadata = obj.get("metadata") or {}
    for key in _NOISE:
        metadata.pop(key, None)
    annotations = metadata.get("annotations") or {}
    for key in _NOISY_ANNOTATIONS:
        annotations.pop(key, None)
    if "annotations" in metadata and not annotations:
        del metadata["annotations"]
    return obj


def _recently_scheduled(pods: list[JSON], now: float) -> list[JSON]:
    """Pods bound in the last minute, with their PodScheduled time (what TargetLoadPacking adds on top
    of metrics that do not show them yet)."""
    recent = []
    for pod in pods:
        stamp = scheduled_at(pod)
        if stamp is not None and now - stamp <= RECENT_SECONDS:
            metadata = pod["metadata"]
            recent.append(
                {"pod": f"{metadata.get('namespace', 'default')}/{metadata['name']}", "timestamp": stamp}
            )
    return recent


async def _metrics(api: ApiClient, config: SchedulerConfiguration) -> JSON | None:
    """One fetch from the first load-aware plugin's source (the snapshot holds one metrics object)."""
    from secondary_scheduler.plugins.trimaran.collectorset import MetricsCollectors
    from secondary_scheduler.plugins.trimaran.source import MetricSource
    from secondary_scheduler.plugins.trimaran.telemetry import TrimaranMetrics

    sources = list(dict.fromkeys(MetricSource.of(args) for args in trimaran_args(config)))
    if not sources:
        return None
    if len(sources) > 1:
        click.echo(
            f"note: the config names {len(sources)} metric sources; the snapshot holds one: "
            f"{sources[0].label}",
            err=True,
        )
    collectors = MetricsCollectors(TrimaranMetrics(), api=api)
    try:
        provider = collectors._provider(sources[0])
    except ValueError as error:  # e.g. a caFile that exists only in the scheduler's pod
        click.echo(f"warning: metrics from {sources[0].label} skipped: {error}", err=True)
        return None
    problems = []
    try:
        for window in provider.windows:
            try:
                fetched = await provider.fetch(window)
            except Exception as error:  # any provider failure: try the next window, as the collector
                problems.append(f"{window}: {error}")
                continue
            return fetched.model_dump(by_alias=True)
    finally:
        await provider.close()
    click.echo(
        f"warning: metrics from {sources[0].label} could not be fetched ({'; '.join(problems)}): the "
        "snapshot has none, so `score` estimates load from requests (fallbackToRequests)",
        err=True,
    )
    return None
