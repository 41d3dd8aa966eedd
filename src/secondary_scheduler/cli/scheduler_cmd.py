"""`secsched scheduler`: run the scheduler with kube-scheduler's command-line flags."""

from __future__ import annotations

import asyncio
import sys

import click

from secondary_scheduler.cli.plugin_option import plugin_option
from secondary_scheduler.scheduler.app import StartupError, configure_logging, run
from secondary_scheduler.scheduler.options import LeaderElectionFlags, SchedulerFlags, parse_go_duration


def _duration(_: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_go_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param=param) from error


def _bool_flag(_: click.Context, param: click.Parameter, value: str | None) -> bool | None:
    """pflag booleans: `--leader-elect`, `--leader-elect=true`, `--leader-elect=false`."""
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("", "true", "1", "t"):
        return True
    if lowered in ("false", "0", "f"):
        return False
    raise click.BadParameter(f"{value!r} is not a boolean (true or false)", param=param)


@click.command(context_settings={"max_content_width": 110})
@plugin_option
@click.option("--config", type=click.Path(dir_okay=False), help="Path to a KubeSchedulerConfiguration file.")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig with the API server and credentials (used when the config file sets no "
    "clientConnection.kubeconfig; "
    "default: in-cluster, then $KUBECONFIG, then ~/.kube/config).",
)
@click.option("--master", help="The API server address (overrides the kubeconfig's).")
@click.option(
    "--secure-port",
    default=10259,
    show_default=True,
    type=int,
    help="HTTPS port for /healthz, /livez, /readyz and /metrics; 0 turns serving off.",
)
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="Address to serve on.")
@click.option(
    "--tls-cert-file",
    type=click.Path(dir_okay=False),
    help="Serving certificate (PEM); without it a self-signed one is made at start.",
)
@click.option("--tls-private-key-file", type=click.Path(dir_okay=False), help="Key of --tls-cert-file.")
@click.option("--tls-min-version", help="VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13.")
@click.option(
    "--tls-cipher-suites", default="", help="Comma-separated Go cipher suite names (TLS 1.2 and below)."
)
@click.option("-v", "--v", "verbosity", default=0, type=int, help="Log verbosity (klog): 2 normal, 4 debug.")
@click.option(
    "--leader-elect",
    "leader_elect",
    is_flag=False,
    flag_value="true",
    default=None,
    callback=_bool_flag,
    help="Take part in leader election before scheduling (also --leader-elect=false).",
)
@click.option(
    "--leader-elect-lease-duration",
    callback=_duration,
    help="How long a lease holds without renewal (e.g. 137s).",
)
@click.option(
    "--leader-elect-renew-deadline",
    callback=_duration,
    help="How long the leader retries renewing before it gives up.",
)
@click.option("--leader-elect-retry-period", callback=_duration, help="Time between election attempts.")
@click.option("--leader-elect-resource-lock", help="Lock type; only 'leases' exists.")
@click.option("--leader-elect-resource-name", help="Name of the Lease.")
@click.option("--leader-elect-resource-namespace", help="Namespace of the Lease.")
@click.option(
    "--kube-api-qps", type=float, help="Client QPS when no --config is given (else clientConnection.qps)."
)
@click.option("--kube-api-burst", type=int, help="Client burst when no --config is given.")
@click.option("--authentication-kubeconfig", help="Accepted for compatibility (reported at start).")
@click.option("--authorization-kubeconfig", help="Accepted for compatibility (reported at start).")
@click.option("--authorization-always-allow-paths", default="", help="Accepted for compatibility.")
@click.option("--feature-gates", help="Accepted for compatibility (reported at start).")
def scheduler(**options: object) -> None:
    """Run the load-aware scheduler. It takes kube-scheduler's flags, so it can replace the
    scheduler image the OpenShift Secondary Scheduler Operator runs (`/bin/kube-scheduler`).

    \b
    Example, outside a cluster:
      secsched scheduler --config=config.yaml --kubeconfig=$KUBECONFIG --leader-elect=false
    """
    flags = SchedulerFlags(
        config=_text(options["config"]),
        kubeconfig=_text(options["kubeconfig"]),
        master=_text(options["master"]),
        secure_port=int(str(options["secure_port"])),
        bind_address=str(options["bind_address"]),
        tls_cert_file=_text(options["tls_cert_file"]),
        tls_private_key_file=_text(options["tls_private_key_file"]),
        tls_min_version=_text(options["tls_min_version"]),
        tls_cipher_suites=[item for item in str(options["tls_cipher_suites"]).split(",") if item],
        verbosity=int(str(options["verbosity"])),
        kube_api_qps=options["kube_api_qps"],  # type: ignore[arg-type]
        kube_api_burst=options["kube_api_burst"],  # type: ignore[arg-type]
        leader_election=LeaderElectionFlags(
            leader_elect=options["leader_elect"],  # type: ignore[arg-type]
            lease_duration=options["leader_elect_lease_duration"],  # type: ignore[arg-type]
            renew_deadline=options["leader_elect_renew_deadline"],  # type: ignore[arg-type]
            retry_period=options["leader_elect_retry_period"],  # type: ignore[arg-type]
            resource_lock=_text(options["leader_elect_resource_lock"]),
            resource_name=_text(options["leader_elect_resource_name"]),
            resource_namespace=_text(options["leader_elect_resource_namespace"]),
        ),
        authentication_kubeconfig=_text(options["authentication_kubeconfig"]),
        authorization_kubeconfig=_text(options["authorization_kubeconfig"]),
        authorization_always_allow_paths=[
            p for p in str(options["authorization_always_allow_paths"]).split(",") if p
        ],
        feature_gates=_text(options["feature_gates"]),
    )
    configure_logging(flags.verbosity)
    try:
        sys.exit(asyncio.run(run(flags)))
    except StartupError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)


def _text(value: object) -> str | None:
    return None if value is None else str(value)
