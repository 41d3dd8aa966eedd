"""`secsched demo`: the operator installs our load-aware scheduler, VMs are placed by real load,
and the same workload is replayed with the upstream schedulers for comparison.
"""

from __future__ import annotations

import asyncio
import json
import platform
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from secondary_scheduler.config.errors import ConfigError
from secondary_scheduler.config.loader import load_config
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.kube.manifests import substitute
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secsched_devtools.cluster import versions
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.progress import console, step
from secsched_devtools.cluster.schedulers import (
    OURS,
    UPSTREAM,
    SchedulerRun,
    scheduler_config,
    start_scheduler,
)
from secsched_devtools.demo import operatorflow
from secsched_devtools.demo.replayscene import ReplaySceneError, ReplaySceneResult, run_replay_scene
from secsched_devtools.demo.run import RunResult, run_workload
from secsched_devtools.demo.scenario import STORAGE_PER_CORE_GI, Scenario
from secsched_devtools.demo.scenes import run_scenes
from secsched_devtools.demo.storage import size_node_storage
from secsched_devtools.demo.workload import (
    CRITICAL_PRIORITY,
    CRITICAL_PRIORITY_VALUE,
    SECONDARY_SCHEDULER,
    STANDARD_PRIORITY,
    Vm,
    web_pod,
)
from secsched_devtools.repo import REPO, deploy_dir, example_config, replay_example

OURS_LABEL = "ours: secsched + TargetLoadPacking"
UPSTREAM_DEFAULT_LABEL = "upstream kube-scheduler, default profile"
UPSTREAM_TRIMARAN_LABEL = "upstream Trimaran (scheduler-plugins)"
OURS_LOAD_AWARE_LABEL = "ours: secsched + LoadAwarePacking"
DEMO_METRICS_LAG = "2s"
"""LoadAwarePacking's metricsLag on the demo cluster, whose Prometheus scrapes and evaluates every
2 s (the example's 30s is for a 30-s scrape)."""


class DemoError(RuntimeError):
    """Something the demo needs is missing; the message says what."""


@dataclass
class DemoOptions:
    scenario: Scenario
    output: Path
    keep: bool = False


def seed_config() -> tuple[str, str]:
    """The KubeSchedulerConfiguration users put in their ConfigMap (seed 000), and where it came from."""
    seeds = sorted((REPO.parent / "shared" / "seeds").glob("000_*.txt"))
    if seeds:
        text = seeds[0].read_text()
        start = text.index("apiVersion: kubescheduler.config.k8s.io/")
        return text[start : text.index("```", start)], f"shared/seeds/{seeds[0].name}"
    return example_config(), "deploy/06_configmap.yaml"


def run_demo(options: DemoOptions) -> Path:
    scenario = options.scenario
    output = options.output / time.strftime("demo-%Y%m%d-%H%M%S")
    output.mkdir(parents=True, exist_ok=True)
    vms, web = scenario.fleet(), [web_pod(i) for i in range(scenario.web_pods)]
    preemptor = scenario.preemptor()
    runs: list[RunResult] = []
    seed_text, seed_source = seed_config()

    console.rule("1/6  ours, installed by the operator")
    runs.append(_run_ours(options, vms, preemptor, web, seed_text, output / "ours"))
    _print_ours(runs[0], scenario.target)

    default_profile = _with_prometheus(scheduler_config(SECONDARY_SCHEDULER))
    others = (
        (OURS_LOAD_AWARE_LABEL, OURS, load_aware_config, "ours-loadaware"),
        (UPSTREAM_DEFAULT_LABEL, UPSTREAM, default_profile, "upstream-default"),
        (UPSTREAM_TRIMARAN_LABEL, UPSTREAM, _with_prometheus(example_config()), "upstream-trimaran"),
    )
    for number, (label, kind, config, directory) in enumerate(others, start=2):
        console.rule(f"{number}/6  {label}, same VMs, same starting load")
        runs.append(_run_alone(options, label, kind, config, vms, preemptor, web, output / directory))

    _print_comparison(runs)
    _print_disks(runs)
    _print_preemption(runs)
    console.rule("5/6  HPC and telco: gang scheduling and NUMA-aware placement, each scheduler in turn")
    scene_problems = run_scenes(output / "scenes", options.keep)
    console.rule("6/6  replay: a generated week, every example profile side by side, in simulated time")
    replay = _run_replay(output / "replay")
    heavy = scenario.heavy_size()
    facts = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": f"{platform.node()} ({platform.machine()}, Python {platform.python_version()})",
        "control plane": f"Kubernetes {versions.KUBERNETES}, scheduler-plugins {versions.SCHEDULER_PLUGINS}, "
        f"KWOK {versions.KWOK}, etcd {versions.ETCD}",
        "cluster": f"{scenario.nodes} KWOK nodes of 8, 16 and 32 cores; starting load seed {scenario.seed}",
        "workload": f"{scenario.vms} VMs over {scenario.arrival_seconds:.0f}s, each a launcher pod with a "
        f"root disk (PVC of class local-wffc, WaitForFirstConsumer), priority class {STANDARD_PRIORITY}"
        + (f"; the first {scenario.heavy_count()} are {heavy.name} ({heavy.memory_gi}Gi)" if heavy else "")
        + f"; {scenario.web_pods} web pods for the default scheduler",
        "storage": "node-local volumes (StorageClass local-wffc) from the local cluster's provisioner; "
        f"each node's pool is {STORAGE_PER_CORE_GI}Gi per core (label secsched.io/storage), "
        "published as CSIStorageCapacity",
        "preemption scene": (
            f"{preemptor.pod_name}: {preemptor.size.name} ({preemptor.size.memory_gi}Gi), priority class "
            f"{CRITICAL_PRIORITY} ({CRITICAL_PRIORITY_VALUE:,}), after the fleet is placed"
            if preemptor
            else "off"
        ),
        "our scheduler's config": f"{seed_source} (PROM_URL and PROM_TOKEN filled in)",
        "upstream Trimaran's config": "deploy/06_configmap.yaml: seed 000's profile in v1",
        "logs": str(output),
    }
    from secsched_devtools.demo.report import write_report  # matplotlib loads only when a report is written

    report = write_report(output / "report.html", runs, scenario.target, facts, replay)
    console.print(f"\n[bold]Report:[/bold] {report}")
    load_aware = [f"with LoadAwarePacking {problem}" for problem in _our_problems(runs[1])]
    problems = [*_our_problems(runs[0]), *load_aware, *scene_problems]
    if problems:
        raise DemoError(f"our scheduler {'; '.join(problems)} (the report says more: {report})")
    return report


def _run_replay(directory: Path) -> ReplaySceneResult:
    """The replay scene (no cluster): the week replayed per profile, its table printed."""
    from secondary_scheduler.replay.report import print_table

    with step("replaying a generated week for each example profile") as current:
        try:
            result = run_replay_scene(directory, current.update)
        except ReplaySceneError as error:
            raise DemoError(str(error)) from error
    week = result.scene
    print_table(
        week.target,
        result.results,
        f"a generated week ({week.vms:,} VMs, seed {week.seed})",
        result.facts()["cluster"],
    )
    for name, why in result.skipped.items():
        console.print(f"  [yellow]{name} not replayed:[/yellow] {why}", soft_wrap=True)
    console.print(f"  the replay's own page: {result.page}")
    return result


def _our_problems(run: RunResult) -> list[str]:
    """What our run got wrong that the demo promises: every disk on its VM's node, and the
    high-priority VM bound by preemption. (Upstream's runs are shown, never judged.)"""
    problems = []
    on_node, total = run.disks_on_pod_node
    if on_node != total:
        problems.append(f"left {total - on_node} of {total} VM disks off their VM's node")
    scene = run.preemption
    if scene is not None and (scene.error or not scene.node):
        problems.append(f"did not place the high-priority VM: {scene.error or 'not bound'}")
    return problems


def postfilter_plugins(config_text: str) -> str:
    """The PostFilter plugins of the config's first profile, as kube-scheduler's defaulting makes
    them (our loader does the same): a profile that names only score plugins keeps the default
    postFilter, DefaultPreemption among it."""
    try:
        text = substitute(config_text, {"PROM_URL": "http://prometheus", "PROM_TOKEN": "t"})
        loaded = load_config(text, catalog=IN_TREE_CATALOG)
    except ConfigError as error:
        return f"unknown ({error})"
    entries = loaded.config.profiles[0].plugins[ExtensionPoint.POST_FILTER]
    return ", ".join(entry.name for entry in entries) or "none"


def logged_postfilter(log: Path) -> str:
    """The PostFilter plugins upstream kube-scheduler says it runs ("the scheduler starts to work
    with those plugins"), from its log; "" if the line is not there."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    found = re.search(r'"PostFilter":\{"Enabled":(\[.*?\]|null)', text)
    if found is None:
        return ""
    entries = json.loads(found.group(1)) or []
    return ", ".join(str(entry.get("Name")) for entry in entries) or "none"


def _cluster(options: DemoOptions, name: str) -> LocalCluster:
    """A fresh cluster, its nodes' storage sized for VM hosts before any scheduler starts."""
    cluster = LocalCluster(options.scenario.cluster_options(name)).up()
    try:
        with step("sizing each node's local storage (64Gi per core) and waiting for the provisioner"):

            async def size() -> None:
                async with cluster.api() as api:
                    await size_node_storage(api, options.scenario.storage_labels())

            asyncio.run(size())
    except BaseException:
        if not options.keep:
            cluster.down()
        raise
    return cluster


def _run_ours(
    options: DemoOptions,
    vms: list[Vm],
    preemptor: Vm | None,
    web: list[dict[str, object]],
    seed_text: str,
    directory: Path,
) -> RunResult:
    directory.mkdir(parents=True, exist_ok=True)
    cluster = _cluster(options, "demo")
    operator: subprocess.Popen[bytes] | None = None
    scheduler: SchedulerRun | None = None
    try:
        config = substitute(
            seed_text, {"PROM_URL": cluster.prometheus_url, "PROM_TOKEN": "local-prometheus-needs-none"}
        )

        async def install_and_run() -> RunResult:
            nonlocal operator, scheduler
            async with cluster.api() as api:
                with step(
                    "kubectl apply -f deploy/ (CRD, RBAC, operator), the seed's ConfigMap and the cluster CR"
                ):
                    await operatorflow.install(api, deploy_dir(), config)
                with step("running the operator with its own ServiceAccount"):
                    token = await operatorflow.service_account_token(
                        api, "openshift-secondary-scheduler-operator", operatorflow.OPERATOR_ACCOUNT
                    )
                    operator = operatorflow.start_operator(cluster, token, directory)
                    deployment = await operatorflow.operand(api)
                conditions = await operatorflow.cr_conditions(api)
                for condition in conditions:
                    console.print(
                        f"  SecondaryScheduler/cluster {condition['type']}={condition['status']}: "
                        f"{condition.get('message', '')}",
                        soft_wrap=True,
                    )
                with step("running the scheduler as the operator's Deployment runs it"):
                    scheduler = await operatorflow.run_operand(cluster, api, deployment, directory)
                console.print(f"  command: {directory / 'scheduler.command'}")
            with step(_submitting(vms, preemptor, web)) as current:
                return await run_workload(
                    cluster,
                    OURS_LABEL,
                    vms,
                    web,
                    options.scenario.arrival_seconds,
                    options.scenario.target,
                    current.update,
                    preemptor,
                )

        result = asyncio.run(install_and_run())
        result.postfilter = f"{postfilter_plugins(seed_text)} (its effective config)"
        return result
    finally:
        if not options.keep:
            if scheduler is not None:
                scheduler.stop()
            if operator is not None:
                operator.terminate()
                operator.wait(15)
            cluster.down()
        else:
            console.print(
                f"[yellow]--keep:[/yellow] cluster 'demo' left running (KUBECONFIG={cluster.kubeconfig});"
                " stop it with `secsched cluster down --name demo`"
            )


def load_aware_config(prometheus: str) -> str:
    """examples/replay/ours.yaml, the recommended load-aware profile, reading this cluster's Prometheus."""
    return replay_example("ours.yaml", prometheus, metricsLag=DEMO_METRICS_LAG)


def _with_prometheus(config_text: str) -> Callable[[str], str]:
    """A config whose ${PROM_URL} is filled in once the run's cluster is up."""
    return lambda prometheus: substitute(config_text, {"PROM_URL": prometheus})


def _run_alone(
    options: DemoOptions,
    label: str,
    kind: str,
    config_of: Callable[[str], str],
    vms: list[Vm],
    preemptor: Vm | None,
    web: list[dict[str, object]],
    directory: Path,
) -> RunResult:
    """One scheduler started by hand (no operator) on a fresh cluster, the same workload submitted."""
    cluster = _cluster(options, "demo-compare")
    try:
        config = config_of(cluster.prometheus_url)
        with step(f"starting {label}"):
            scheduler = start_scheduler(kind, config, cluster.kubeconfig, directory, name="scheduler")
        try:
            with step(_submitting(vms, preemptor, web)) as current:
                result = asyncio.run(
                    run_workload(
                        cluster,
                        label,
                        vms,
                        web,
                        options.scenario.arrival_seconds,
                        options.scenario.target,
                        current.update,
                        preemptor,
                    )
                )
        finally:
            scheduler.stop()
        logged = logged_postfilter(directory / "scheduler.log") if kind == UPSTREAM else ""
        result.postfilter = f"{logged} (its log)" if logged else f"{postfilter_plugins(config)} (its config)"
        return result
    finally:
        cluster.down()


def _submitting(vms: list[Vm], preemptor: Vm | None, web: list[dict[str, object]]) -> str:
    scene = ", then the high-priority VM" if preemptor else ""
    return f"submitting {len(vms)} VMs with their disks and {len(web)} web pods{scene}"


def _print_ours(run: RunResult, target: int) -> None:
    console.print(
        f"\n[bold]Events from our scheduler[/bold] ({len(run.events)} VMs scheduled; the first ten):"
    )
    for line in run.events[:10]:
        console.print(f"  Normal  Scheduled  {line}", soft_wrap=True)
    table = Table(title="Node CPU load before and after (ours)")
    for column in ("node", "before", "after", "VMs"):
        table.add_column(column, justify="left" if column == "node" else "right")
    counts: dict[str, int] = {}
    for node in run.placements.values():
        counts[node] = counts.get(node, 0) + 1
    for node in sorted(run.before, key=lambda name: int(name.rsplit("-", 1)[-1])):
        after = run.after[node][0] * 100
        style = "red" if after > target else ""
        table.add_row(
            node,
            f"{run.before[node][0] * 100:.0f} %",
            f"[{style}]{after:.0f} %[/{style}]" if style else f"{after:.0f} %",
            str(counts.get(node, 0)),
        )
    console.print(table)


def _print_comparison(runs: list[RunResult]) -> None:
    """One column per scheduler, one row per measure: it stays readable on a narrow terminal."""
    table = Table(title="Placement quality, same VMs and starting load")
    table.add_column("")
    measured = [run for run in runs if run.quality]
    for run in measured:
        table.add_column(run.label, justify="right")
    rows = [run.quality.as_row() for run in measured if run.quality]
    for key in rows[0]:
        table.add_row(key, *(row[key] for row in rows))
    table.add_row("disks on the VM's node", *("{}/{}".format(*run.disks_on_pod_node) for run in measured))
    console.print(table)


def _gi(count: int) -> str:
    return f"{count / 1024**3:.1f}Gi"


def _print_disks(runs: list[RunResult]) -> None:
    """Per run: how many disks were made on their VM's node, and any that were not."""
    console.print("\n[bold]VM disks[/bold] (PVC -> PV node affinity, against the VM pod's node):")
    for run in runs:
        on_node, total = run.disks_on_pod_node
        style = "green" if on_node == total and total else "red"
        nodes = len({disk.volume_node for disk in run.disks if disk.volume_node})
        console.print(
            f"  {run.label}: [{style}]{on_node}/{total} on the VM's node[/{style}], on {nodes} nodes",
            soft_wrap=True,
        )
        for disk in run.all_disks:
            if not disk.on_pod_node:
                console.print(
                    f"    [red]{disk.claim}[/red]: {disk.phase}, PV {disk.volume or '-'} on "
                    f"{disk.volume_node or '-'}, pod on {disk.pod_node or '-'}",
                    soft_wrap=True,
                )


def _seconds(value: float | None) -> str:
    return f"{value:.2f}s" if value is not None else "-"


def _print_preemption(runs: list[RunResult]) -> None:
    """Per run: who was evicted for the preemptor, where it was nominated, where it runs, how fast."""
    scenes = [(run, run.preemption) for run in runs if run.preemption]
    if not scenes:
        return
    first = scenes[0][1]
    console.print(
        f"\n[bold]Preemption[/bold]: {first.preemptor} (priority {first.priority:,}, "
        f"{_gi(first.memory_request)} memory) arrives once the fleet is placed",
        soft_wrap=True,
    )
    for run, scene in scenes:
        console.print(f"  [bold]{run.label}[/bold] (PostFilter: {run.postfilter})", soft_wrap=True)
        console.print(
            f"    most free memory: {_gi(scene.largest_free[1])} on {scene.largest_free[0]}"
            f"{'' if scene.fits_nowhere else ' [yellow](it fits without preemption)[/yellow]'}",
            soft_wrap=True,
        )
        for victim in scene.victims:
            condition = victim.condition.split(":", 1)[0] if victim.condition else "not seen"
            console.print(
                f"    evicted {victim.pod} on {victim.node} ({_gi(victim.memory)}, priority "
                f"{victim.priority:,}; DisruptionTarget: {condition}) after {_seconds(victim.deleted_after)}",
                soft_wrap=True,
            )
        if not scene.victims:
            console.print("    evicted nothing", soft_wrap=True)
        disk = scene.disk
        disk_text = (
            f"disk on {disk.volume_node} {'[green]✓[/green]' if disk.on_pod_node else '[red]✗[/red]'}"
            if disk
            else "no disk"
        )
        console.print(
            f"    nominatedNodeName {scene.nominated_node or '-'} after {_seconds(scene.nominated_after)}; "
            f"bound to {scene.node or '[red]nothing[/red]'} after {_seconds(scene.bound_after)}; {disk_text}",
            soft_wrap=True,
        )
        if scene.error:
            console.print(f"    [red]{scene.error}[/red]", soft_wrap=True)
