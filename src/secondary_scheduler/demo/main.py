"""`secsched demo`: the operator installs our load-aware scheduler, VMs are placed by real load,
and the same workload is replayed with the upstream schedulers for comparison.
"""

from __future__ import annotations

import asyncio
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from secondary_scheduler.cluster import versions
from secondary_scheduler.cluster.localcluster import LocalCluster
from secondary_scheduler.cluster.progress import console, step
from secondary_scheduler.cluster.schedulers import UPSTREAM, SchedulerRun, scheduler_config, start_scheduler
from secondary_scheduler.kube.manifests import read_manifests, substitute

from . import operatorflow
from .run import RunResult, run_workload
from .scenario import Scenario
from .workload import SECONDARY_SCHEDULER, vm_fleet, web_pod

REPO = Path(__file__).resolve().parents[3]
OURS_LABEL = "ours: secsched + TargetLoadPacking"
UPSTREAM_DEFAULT_LABEL = "upstream kube-scheduler, default profile"
UPSTREAM_TRIMARAN_LABEL = "upstream Trimaran (scheduler-plugins)"


class DemoError(RuntimeError):
    """Something the demo needs is missing; the message says what."""


@dataclass
class DemoOptions:
    scenario: Scenario
    output: Path
    keep: bool = False


def deploy_dir() -> Path:
    for candidate in (REPO / "deploy", Path.cwd() / "deploy"):
        if (candidate / "00_secondary-scheduler-operator.crd.yaml").exists():
            return candidate
    raise DemoError("the deploy/ manifests were not found: run the demo from a clone of the repository")


def seed_config() -> tuple[str, str]:
    """The KubeSchedulerConfiguration users put in their ConfigMap (seed 000), and where it came from."""
    seeds = sorted((REPO.parent / "shared" / "seeds").glob("000_*.txt"))
    if seeds:
        text = seeds[0].read_text()
        start = text.index("apiVersion: kubescheduler.config.k8s.io/")
        return text[start : text.index("```", start)], f"shared/seeds/{seeds[0].name}"
    return example_config(), "deploy/06_configmap.yaml"


def example_config() -> str:
    """deploy/06's config.yaml: seed 000's profile in v1, which upstream kube-scheduler 1.34 also reads."""
    [configmap] = [doc for doc in read_manifests([deploy_dir()]) if doc["kind"] == "ConfigMap"]
    return str(configmap["data"]["config.yaml"])


def run_demo(options: DemoOptions) -> Path:
    scenario = options.scenario
    output = options.output / time.strftime("demo-%Y%m%d-%H%M%S")
    output.mkdir(parents=True, exist_ok=True)
    vms, web = vm_fleet(scenario.vms, scenario.seed), [web_pod(i) for i in range(scenario.web_pods)]
    runs: list[RunResult] = []
    seed_text, seed_source = seed_config()

    console.rule("1/3  ours, installed by the operator")
    runs.append(_run_ours(options, vms, web, seed_text, output / "ours"))
    _print_ours(runs[0], scenario.target)

    upstream = (
        (UPSTREAM_DEFAULT_LABEL, scheduler_config(SECONDARY_SCHEDULER), "upstream-default"),
        (UPSTREAM_TRIMARAN_LABEL, example_config(), "upstream-trimaran"),
    )
    for number, (label, config, directory) in enumerate(upstream, start=2):
        console.rule(f"{number}/3  {label}, same VMs, same starting load")
        runs.append(_run_upstream(options, label, config, vms, web, output / directory))

    _print_comparison(runs)
    facts = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": f"{platform.node()} ({platform.machine()}, Python {platform.python_version()})",
        "control plane": f"Kubernetes {versions.KUBERNETES}, scheduler-plugins {versions.SCHEDULER_PLUGINS}, "
        f"KWOK {versions.KWOK}, etcd {versions.ETCD}",
        "cluster": f"{scenario.nodes} KWOK nodes of 8, 16 and 32 cores; starting load seed {scenario.seed}",
        "workload": f"{scenario.vms} VM launcher pods over {scenario.arrival_seconds:.0f}s, "
        f"{scenario.web_pods} web pods for the default scheduler",
        "our scheduler's config": f"{seed_source} (PROM_URL and PROM_TOKEN filled in)",
        "logs": str(output),
    }
    from .report import write_report  # matplotlib loads only when a report is written

    report = write_report(output / "report.html", runs, scenario.target, facts)
    console.print(f"\n[bold]Report:[/bold] {report}")
    return report


def _cluster(options: DemoOptions, name: str) -> LocalCluster:
    return LocalCluster(options.scenario.cluster_options(name)).up()


def _run_ours(
    options: DemoOptions,
    vms: list[dict[str, object]],
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
            with step(f"submitting {len(vms)} VMs and {len(web)} web pods") as current:
                return await run_workload(
                    cluster,
                    OURS_LABEL,
                    vms,
                    web,
                    options.scenario.arrival_seconds,
                    options.scenario.target,
                    current.update,
                )

        return asyncio.run(install_and_run())
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


def _run_upstream(
    options: DemoOptions,
    label: str,
    config_text: str,
    vms: list[dict[str, object]],
    web: list[dict[str, object]],
    directory: Path,
) -> RunResult:
    cluster = _cluster(options, "demo-upstream")
    try:
        config = substitute(config_text, {"PROM_URL": cluster.prometheus_url})
        with step(f"starting {label}"):
            scheduler = start_scheduler(UPSTREAM, config, cluster.kubeconfig, directory, name="scheduler")
        try:
            with step(f"submitting {len(vms)} VMs and {len(web)} web pods") as current:
                return asyncio.run(
                    run_workload(
                        cluster,
                        label,
                        vms,
                        web,
                        options.scenario.arrival_seconds,
                        options.scenario.target,
                        current.update,
                    )
                )
        finally:
            scheduler.stop()
    finally:
        cluster.down()


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
    console.print(table)
