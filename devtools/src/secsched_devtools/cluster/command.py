"""`secsched cluster …`: build, start, inspect and stop the local control plane.

The local cluster's modules need devtools' [cluster] extra (httpx, rich): each command imports
them when it runs, so that `secsched cluster up --help` reads without the extra, and running a
command without it names the extra to install (`secondary_scheduler.cli.errors.missing_extra`).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from secondary_scheduler.kube.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from rich.table import Table

name_option = click.option(
    "--name",
    default="secsched",
    show_default=True,
    help="Cluster name: several clusters can run side by side.",
)


def _fail(error: Exception) -> NoReturn:
    from secsched_devtools.cluster.progress import console

    console.print(f"[red]error:[/red] {error}")
    sys.exit(1)


def _table(title: str, columns: tuple[str, ...], right_aligned: tuple[str, ...] = ()) -> Table:
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right" if column in right_aligned else "left")
    return table


@click.group()
def cluster() -> None:
    """A real Kubernetes control plane on this machine: etcd, kube-apiserver,
    kube-controller-manager, KWOK fake nodes, the upstream kube-scheduler, Prometheus, and
    storage (classes local-wffc and zonal-immediate, served by our provisioner)."""


@cluster.command("build")
def build_command() -> None:
    """Build (or reuse) the control-plane binaries from the Go module proxy.

    Binaries go to a cache outside the repository (override with $SECSCHED_CACHE_DIR);
    a cold build takes 15-30 minutes on 2 cores, a warm one a moment."""
    from secsched_devtools.cluster import build as build_module
    from secsched_devtools.cluster import versions
    from secsched_devtools.cluster.progress import console

    try:
        build_module.build()
    except build_module.BuildError as error:
        _fail(error)
    for spec in versions.BINARIES:
        console.print(f"  {spec.name:<24} {build_module.installed_path(spec)}")


def _quantity(_: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A Kubernetes quantity (16, 64Gi, 500m), checked before anything starts."""
    from secondary_scheduler.apivalidation import quantity_problem

    if value is not None and (problem := quantity_problem(value)):
        raise click.BadParameter(problem, param=param)
    return value


@cluster.command("up")
@name_option
@click.option(
    "--nodes", type=click.IntRange(0, 10_000), default=3, show_default=True, help="Number of KWOK fake nodes."
)
@click.option(
    "--node-cpu", default="16", show_default=True, callback=_quantity, help="CPU capacity of each node."
)
@click.option(
    "--node-memory",
    default="64Gi",
    show_default=True,
    callback=_quantity,
    help="Memory capacity of each node.",
)
@click.option(
    "--max-pods",
    type=click.IntRange(1, 10_000),
    default=110,
    show_default=True,
    help="Pod capacity of each node.",
)
@click.option(
    "--node-storage",
    default=None,
    callback=_quantity,
    help="Local storage pool of each node for class local-wffc (label secsched.io/storage) [default: 100Gi].",
)
@click.option(
    "--node-max-volumes",
    type=click.IntRange(0),
    default=None,
    help="Volume limit of each node's CSINode (label secsched.io/max-volumes) [default: 16].",
)
@click.option("--mixed-sizes", is_flag=True, help="Cycle nodes through 8, 16 and 32 cores (32/64/128Gi).")
@click.option(
    "--zones",
    type=click.IntRange(1, 1000),
    default=3,
    show_default=True,
    help="Spread nodes over this many zones.",
)
@click.option(
    "--default-scheduler/--no-default-scheduler",
    default=True,
    show_default=True,
    help="Run the upstream kube-scheduler as the cluster's default-scheduler.",
)
@click.option(
    "--prometheus/--no-prometheus",
    default=True,
    show_default=True,
    help="Run Prometheus and the node-load exporter.",
)
@click.option(
    "--base-cpu",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Starting base CPU load of every node, as a ratio.",
)
@click.option(
    "--base-memory",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Starting base memory load of every node, as a ratio.",
)
@click.option(
    "--noise",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Standard deviation of the load noise (ratio), so stddev_over_time is not 0.",
)
def up(
    name: str,
    nodes: int,
    node_cpu: str,
    node_memory: str,
    max_pods: int,
    node_storage: str | None,
    node_max_volumes: int | None,
    mixed_sizes: bool,
    zones: int,
    default_scheduler: bool,
    prometheus: bool,
    base_cpu: float,
    base_memory: float,
    noise: float,
) -> None:
    """Start a local cluster and leave it running; prints how to use it with kubectl."""
    from secsched_devtools.cluster import build as build_module
    from secsched_devtools.cluster import versions
    from secsched_devtools.cluster.localcluster import ClusterError, ClusterOptions, LocalCluster
    from secsched_devtools.cluster.nodes import NodeShape
    from secsched_devtools.cluster.progress import console

    if mixed_sizes and (node_storage is not None or node_max_volumes is not None):
        _fail(
            click.UsageError(
                "--node-storage and --node-max-volumes set one node shape: not with --mixed-sizes"
            )
        )
    if node_storage is not None:
        try:
            parse_quantity(node_storage)
        except QuantityError as error:
            _fail(error)
    options = ClusterOptions(
        name=name,
        nodes=nodes,
        shape=None
        if mixed_sizes
        else NodeShape(node_cpu, node_memory, max_pods, storage=node_storage, max_volumes=node_max_volumes),
        zones=zones,
        default_scheduler=default_scheduler,
        prometheus=prometheus,
        base_load={"default": {"cpu": base_cpu, "memory": base_memory, "noise": noise}},
    )
    try:
        local = LocalCluster(options).up()
    except (ClusterError, build_module.BuildError) as error:
        _fail(error)
    kubectl = versions.bin_dir() / "kubectl"
    console.print(
        f"\nkubeconfig: {local.kubeconfig}\n  export KUBECONFIG={local.kubeconfig}\n  {kubectl} get nodes"
    )
    console.print(
        "Storage classes: local-wffc (default; WaitForFirstConsumer, per-node pools) and "
        "zonal-immediate (Immediate, one zone per volume)"
    )
    if prometheus:
        console.print(f"Prometheus: {local.prometheus_url}    load exporter: {local.exporter_url}/load")
    console.print(f"Stop it with: secsched cluster down{'' if name == 'secsched' else f' --name {name}'}")


@cluster.command("down")
@name_option
def down(name: str) -> None:
    """Stop exactly the processes `cluster up` started (by pid) and delete the cluster's data."""
    from secsched_devtools.cluster.localcluster import ClusterError, LocalCluster

    try:
        LocalCluster.attach(name).down()
    except ClusterError as error:
        _fail(error)


@cluster.command("status")
@name_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(name: str, as_json: bool) -> None:
    """Tell what runs where: each process, its pid and log, the cluster's addresses, and its
    storage classes with whether their provisioner is running."""
    from secsched_devtools.cluster.localcluster import ClusterError, LocalCluster
    from secsched_devtools.cluster.progress import console

    try:
        local = LocalCluster.attach(name)
    except ClusterError as error:
        _fail(error)
    components = local.status()
    addresses = {"apiserver": local.api_url, "kubeconfig": str(local.kubeconfig)}
    if local.options.prometheus:
        addresses |= {"prometheus": local.prometheus_url, "exporter": local.exporter_url}
    storage = local.storage()
    if as_json:
        click.echo(
            json.dumps({"components": components, "addresses": addresses, "storage": storage}, indent=2)
        )
        return
    table = _table(f"cluster {name!r}", ("component", "pid", "state", "log"))
    for component, info in components.items():
        state = "[green]running[/green]" if info["running"] else "[red]stopped[/red]"
        table.add_row(component, str(info["pid"]), state, info["log"])
    console.print(table)
    for key, value in addresses.items():
        console.print(f"{key:>11}: {value}")
    _print_storage(storage)


def _print_storage(storage: dict[str, Any]) -> None:
    """The storage classes, and whether the provisioner that serves them runs."""
    from secsched_devtools.cluster.progress import console

    provisioner = storage["provisioner"]
    state = "[green]running[/green]" if provisioner["running"] else "[red]not running[/red]"
    console.print(f"\nstorage provisioner ({', '.join(provisioner['serves'])}): {state}")
    classes = storage["storageClasses"]
    if classes is None:
        console.print("storage classes: the API server cannot be reached")
        return
    table = _table("storage classes", ("name", "provisioner", "binding mode", "reclaim", "default"))
    for item in classes:
        table.add_row(
            item["name"],
            str(item["provisioner"]),
            str(item["volumeBindingMode"]),
            str(item["reclaimPolicy"]),
            "yes" if item["default"] else "",
        )
    console.print(table)


@cluster.command("load")
@name_option
@click.option("--node", "nodes", multiple=True, help="Node to change (repeatable); default: every node.")
@click.option("--cpu", type=click.FloatRange(0, 1), help="Base CPU load ratio.")
@click.option("--memory", type=click.FloatRange(0, 1), help="Base memory load ratio.")
@click.option("--noise", type=click.FloatRange(0, 1), help="Noise standard deviation (ratio).")
@click.option("--pod-factor", type=click.FloatRange(0), help="Multiplier applied to pod requests.")
def load(
    name: str,
    nodes: tuple[str, ...],
    cpu: float | None,
    memory: float | None,
    noise: float | None,
    pod_factor: float | None,
) -> None:
    """Show, or change at run time, the node-load model the exporter serves to Prometheus."""
    from secsched_devtools.cluster.localcluster import ClusterError, LocalCluster
    from secsched_devtools.cluster.progress import console

    try:
        local = LocalCluster.attach(name)
        values = {
            key: value
            for key, value in (("cpu", cpu), ("memory", memory), ("noise", noise))
            if value is not None
        }
        update: dict[str, object] = {}
        if values:
            update = {"nodes": {node: values for node in nodes}} if nodes else {"default": values}
        if pod_factor is not None:
            update["podFactor"] = pod_factor
        result = local.set_base_load(update) if update else local.load()
    except ClusterError as error:
        _fail(error)
    table = _table("node load (ratios, without noise)", ("node", "cpu", "memory"), ("cpu", "memory"))
    for node, current in sorted(result["current"].items()):
        table.add_row(node, f"{current['cpu']:.2f}", f"{current['memory']:.2f}")
    console.print(table)
