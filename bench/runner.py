"""One benchmark run: wait for a quiet machine, grow one cluster through the sizes, run the sections."""

from __future__ import annotations

import asyncio
import datetime
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import nodes, report
from bench.context import BenchContext, BenchOptions
from bench.machine import component_versions, load_average, machine, wait_for_low_load
from bench.runinfo import RunInfo, Section
from bench.sections import SECTIONS
from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import ApiClient
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster
from secsched_devtools.cluster.nodes import NodeShape
from secsched_devtools.cluster.progress import console, step

ENVIRONMENT = "environment"
NODE_SHAPE = NodeShape(cpu="16", memory="64Gi", pods=110)
ZONES = 3


def render_environment(run: RunInfo, node_lease_seconds: int, control_plane_gogc: int | None) -> str:
    machine_info = run.machine
    waited = "" if run.load_waited else " (it had not dropped below the limit asked for)"
    version_rows = [[name, f"`{version}`"] for name, version in run.versions.items()]
    return "\n".join(
        [
            "## Environment of the latest run",
            "",
            report.table(
                ["", ""],
                [
                    ["command", f"`{run.command}`"],
                    ["started", run.started],
                    ["CPUs (`nproc`)", str(machine_info.cpus)],
                    ["CPU model", machine_info.cpu_model],
                    ["memory", f"{machine_info.memory_gib:.1f} GiB"],
                    ["kernel", f"Linux {machine_info.kernel}"],
                    ["Python", machine_info.python],
                    ["1-minute load at start", f"{run.load_before:.2f}{waited}"],
                ],
                align="ll",
            ),
            report.table(["component", "version"], version_rows, align="ll"),
            f"The cluster: etcd on tmpfs without fsync, one kube-apiserver, kube-controller-manager and "
            f"KWOK, all on this machine; every node is {NODE_SHAPE.cpu} CPUs / {NODE_SHAPE.memory} / "
            f"{NODE_SHAPE.pods} pods, in {ZONES} zones, with {node_lease_seconds}s node leases (KWOK renews "
            "each every quarter of that, those of the nodes made together within a minute: a burst that "
            "would slow the runs it fell in, so the default lease outlasts the benchmark). The nodes are "
            "created Ready, with the conditions KWOK's "
            "initialisation would give them but not its `phase: Running`, so KWOK renews their leases and "
            "does not also patch each node's status every minute or so (about 80 writes a second at 5,000 "
            "nodes, more than one of the two CPUs; a real kubelet reports every 5 minutes when nothing "
            "changes). Each size is measured once KWOK holds every node's lease and "
            "kube-controller-manager has lifted the not-ready taint admission gives new nodes. "
            f"{_gogc_sentence(control_plane_gogc)} Prometheus "
            "and the node-load exporter run only during the workloads section's `load-aware` and "
            "`load-variation` classes, so that no other measurement pays for scraping thousands of "
            "nodes; the cluster runs no NUMA "
            "topology exporter (no section reads NodeResourceTopologies).",
            "",
        ]
    )


def _gogc_sentence(control_plane_gogc: int | None) -> str:
    if control_plane_gogc is None:
        return "The cluster's Go processes are given no GOGC (Go's default is 100)."
    return (
        "etcd, kube-apiserver, kube-controller-manager, KWOK and Prometheus run with "
        f"GOGC={control_plane_gogc} (Go's default is 100; at 100 the API server collects every few "
        "seconds, each collection 0.4-0.9 s of CPU on these two cores, and both schedulers' "
        "slowest pods are the ones in flight then). The schedulers measured do not: upstream's "
        "kube-scheduler runs with Go's default, as it ships."
    )


async def _measure(cluster: LocalCluster, options: BenchOptions, sections: Sequence[Section]) -> None:
    current = 0
    connection = kubeconfig.from_kubeconfig(cluster.kubeconfig)
    async with ApiClient(connection, qps=0, burst=0, timeout=300, user_agent="secsched-bench") as api:
        for size in options.sizes:
            if size > current:
                title = f"adding {size - current:,} nodes (to {size:,}), Ready, with their leases"
                with step(title, log_every=10.0) as progress:
                    await nodes.grow(api, current, size - current, NODE_SHAPE, ZONES, progress.update)
                current = size
            console.rule(f"{size:,} nodes")
            context = BenchContext(options, cluster, size, api)
            idle = await context.measure_idle()
            console.print(f"idle cluster: {idle:.2f} CPUs busy (load average {load_average():.2f})")
            for section in sections:
                await section.measure(context)


def run(
    options: BenchOptions,
    section_names: Sequence[str],
    output: Path | None,
    *,
    max_load: float,
    load_timeout: float,
    cluster_name: str,
    node_lease_seconds: int,
    control_plane_gogc: int | None,
    command: str,
) -> str:
    """Measure, then write the sections into ``output`` (None: only return the Markdown)."""
    sections = [SECTIONS[name](options) for name in section_names]
    options.workdir.mkdir(parents=True, exist_ok=True)
    console.print(f"benchmark working directory (logs, raw results): {options.workdir}")
    load, below = wait_for_low_load(max_load, load_timeout, console.print)
    console.print(f"1-minute load average {load:.2f}: starting")
    info = RunInfo(
        command=command,
        started=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=machine(),
        versions=component_versions(),
        load_before=load,
        load_waited=below,
        options=options,
    )
    cluster_options = ClusterOptions(
        name=cluster_name,
        nodes=0,  # grown by the benchmark itself (bench.nodes)
        shape=NODE_SHAPE,
        zones=ZONES,
        default_scheduler=False,
        prometheus=False,  # started for the workloads section's load classes alone
        topology_exporter=False,  # no section reads NodeResourceTopologies
        dra_driver=False,  # the workloads section's dra class publishes its own slices (bench.dra)
        node_lease_seconds=node_lease_seconds,
        control_plane_gogc=control_plane_gogc,
    )
    with LocalCluster(cluster_options) as cluster:
        asyncio.run(_measure(cluster, options, sections))
    updates = {ENVIRONMENT: render_environment(info, node_lease_seconds, control_plane_gogc)}
    updates.update({section.name: section.render(info) for section in sections})
    order = [ENVIRONMENT, *SECTIONS]
    if output is None:
        return report.merge("", updates, order)
    report.write(output, updates, order)
    console.print(f"[green]✓[/green] wrote {', '.join(updates)} to {output}")
    return output.read_text()


def default_command() -> str:
    return " ".join(["python -m bench", *sys.argv[1:]])
