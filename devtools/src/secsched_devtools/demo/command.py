"""`secsched demo`: the tour, on a local cluster (what `make demo` runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from secsched_devtools.cluster.build import BuildError
from secsched_devtools.cluster.localcluster import ClusterError
from secsched_devtools.cluster.progress import console
from secsched_devtools.repo import RepositoryFileMissing


@click.command()
@click.option("--nodes", default=20, show_default=True, help="KWOK worker nodes (8, 16 and 32 cores, mixed).")
@click.option("--vms", default=40, show_default=True, help="VM launcher pods for our scheduler.")
@click.option("--web-pods", default=12, show_default=True, help="Ordinary pods for the default scheduler.")
@click.option("--arrival-seconds", default=60.0, show_default=True, help="VMs arrive spread over this long.")
@click.option("--seed", default=7, show_default=True, help="Seed of the starting load and the VM mix.")
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("out"),
    show_default=True,
    help="Where the report and logs go (a new demo-<time> folder each run).",
)
@click.option("--keep", is_flag=True, help="Leave our cluster, operator and scheduler running at the end.")
def demo(
    nodes: int, vms: int, web_pods: int, arrival_seconds: float, seed: int, output: Path, keep: bool
) -> None:
    """Run the whole system on this machine and compare it with upstream.

    \b
    1. A local cluster with uneven node load and Prometheus; deploy/ applied, the seed's
       ConfigMap and the `cluster` CR created, the operator run; our scheduler started
       exactly as the operator's Deployment runs it.
    2. KubeVirt-style VMs, each with its root disk (a PVC on the WaitForFirstConsumer class
       `local-wffc`), placed by real load; the events and a per-node load table printed.
    3. A high-priority VM that fits nowhere arrives and preempts a lower-priority one.
    4. The same VMs and scene on the same starting load with our own load-aware plugin
       (LoadAwarePacking, examples/replay/ours.yaml), the upstream kube-scheduler's default
       profile and upstream Trimaran; an HTML report with plots, each disk's node and the
       preemption, for all four.
    5. A generated week of VMs replayed (`secsched replay`, no cluster) for seed 000's profile,
       the default profile and ours; its measures and plots join the report.
    """
    from secsched_devtools.demo.main import DemoError, DemoOptions, run_demo
    from secsched_devtools.demo.scenario import Scenario

    scenario = Scenario(nodes=nodes, vms=vms, web_pods=web_pods, arrival_seconds=arrival_seconds, seed=seed)
    try:
        run_demo(DemoOptions(scenario, output, keep))
    except (DemoError, RepositoryFileMissing, ClusterError, BuildError, TimeoutError) as error:
        console.print(f"[red]error:[/red] {error}")
        sys.exit(1)
