"""`secsched scheduler`: run the scheduler with kube-scheduler's command-line flags.

Every kube-scheduler 1.34 flag either works as upstream's or is refused by name as one this
scheduler does not support (`options.UNSUPPORTED_FLAGS`), so a Deployment written for
kube-scheduler never runs with a flag silently ignored.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from secondary_scheduler import __version__
from secondary_scheduler.cli.plugin_option import plugin_option
from secondary_scheduler.plugins.registry import Registry
from secondary_scheduler.scheduler.app import StartupError, configure_logging, run_on_uvloop, write_config
from secondary_scheduler.scheduler.authn import RequestHeaderConfig
from secondary_scheduler.scheduler.authz import AlwaysAllowPaths
from secondary_scheduler.scheduler.delegatedauth import DEFAULT_ALWAYS_ALLOW_PATHS, DelegatedAuthOptions
from secondary_scheduler.scheduler.options import (
    LOGGING_FORMATS,
    UNSUPPORTED_FLAGS,
    LeaderElectionFlags,
    SchedulerFlags,
    check_bind_address,
    check_burst,
    check_cipher_suites,
    check_qps,
    parse_go_duration,
    unsupported_flag_message,
)
from secondary_scheduler.scheduler.server import TLS_VERSIONS

KUBERNETES_VERSION = "v1.34.0"
"""The kube-scheduler release whose flags and configuration this scheduler follows."""


def _checked(check: Callable[[Any], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback running `check` on a given value, a usage error (exit 2) if it fails."""

    def callback(_: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return check(value)
        except ValueError as error:
            raise click.BadParameter(str(error), param=param) from error

    return callback


def _bool(value: str) -> bool:
    """pflag booleans: `--flag`, `--flag=true`, `--flag=false` (and Go's 1/0/t/f)."""
    lowered = value.lower()
    if lowered in ("", "true", "1", "t"):
        return True
    if lowered in ("false", "0", "f"):
        return False
    raise ValueError(f"{value!r} is not a boolean (true or false)")


def _string_slice(text: str) -> tuple[str, ...]:
    """pflag's StringSlice: comma-separated, an empty value is an empty list."""
    return tuple(text.split(",")) if text else ()


def check_always_allow_paths(text: str) -> tuple[str, ...]:
    """--authorization-always-allow-paths: only a trailing `*` (k8s.io/apiserver's path authorizer)."""
    paths = _string_slice(text)
    AlwaysAllowPaths(paths)
    return paths


def _version(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    """`--version` and `--version=raw` print and exit, as kube-scheduler's (`--version=false`: no-op)."""
    if value is None or ctx.resilient_parsing or value.lower() in ("false", "0", "f"):
        return
    if value.lower() in ("", "true", "1", "t"):
        click.echo(f"secsched {__version__} (kube-scheduler {KUBERNETES_VERSION} compatible)")
    elif value == "raw":
        major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
        click.echo(
            json.dumps(
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": f"{KUBERNETES_VERSION}+secsched-{__version__}",
                },
                indent=2,
            )
        )
    else:
        raise click.BadParameter(
            f"{value!r}: this scheduler takes --version, --version=raw or --version=false "
            "(it cannot report another version)"
        )
    ctx.exit(0)


class KubeSchedulerCommand(click.Command):
    """Refuses, by name, the kube-scheduler flags this scheduler does not support (a usage error)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for arg in args:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            if name in UNSUPPORTED_FLAGS:
                raise click.UsageError(unsupported_flag_message(name), ctx=ctx)
        return super().parse_args(ctx, args)


def _optional_value(*names: str, **kwargs: Any) -> Callable[[Any], Any]:
    """A pflag boolean: given alone means true; `=false` turns it off."""
    return click.option(*names, is_flag=False, flag_value="true", default=None, **kwargs)


@click.command(cls=KubeSchedulerCommand, context_settings={"max_content_width": 110})
@plugin_option
@_optional_value(
    "--version",
    callback=_version,
    expose_value=False,
    is_eager=True,
    help="Print the version and exit (--version=raw: as JSON).",
)
@click.option("--config", type=click.Path(), help="Path to a KubeSchedulerConfiguration file.")
@click.option(
    "--write-config-to",
    type=click.Path(dir_okay=False),
    help="Write the effective configuration (defaults filled in) to this file and exit.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(),
    help="Kubeconfig with the API server and credentials (used when the config file sets no "
    "clientConnection.kubeconfig; "
    "default: in-cluster, then $KUBECONFIG, then ~/.kube/config).",
)
@click.option("--master", help="The API server address (overrides the kubeconfig's).")
@click.option(
    "--secure-port",
    default=10259,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="HTTPS port for /healthz, /livez, /readyz and /metrics; 0 turns serving off.",
)
@click.option(
    "--bind-address",
    default="0.0.0.0",
    show_default=True,
    callback=_checked(check_bind_address),
    help="IP address to serve on.",
)
@click.option(
    "--cert-dir",
    type=click.Path(file_okay=False),
    help="Directory for the self-signed serving certificate (kube-scheduler.crt/.key, reused if "
    "present) when no --tls-cert-file is given.",
)
@click.option(
    "--tls-cert-file",
    type=click.Path(dir_okay=False),
    help="Serving certificate (PEM); without it a self-signed one is made at start.",
)
@click.option("--tls-private-key-file", type=click.Path(dir_okay=False), help="Key of --tls-cert-file.")
@click.option("--tls-min-version", type=click.Choice(list(TLS_VERSIONS)), help="Minimum TLS version.")
@click.option(
    "--tls-cipher-suites",
    default="",
    callback=_checked(lambda text: check_cipher_suites([item for item in text.split(",") if item])),
    help="Comma-separated Go cipher suite names (TLS 1.2 and below).",
)
@click.option(
    "--client-ca-file",
    type=click.Path(dir_okay=False),
    help="Authenticate client certificates signed by these CAs as their CN (groups: O) "
    "(default: the kube-system/extension-apiserver-authentication ConfigMap's client-ca-file).",
)
@_optional_value("--permit-port-sharing", callback=_checked(_bool), help="Bind with SO_REUSEPORT.")
@_optional_value("--permit-address-sharing", callback=_checked(_bool), help="Bind with SO_REUSEADDR.")
@_optional_value(
    "--disable-http2-serving",
    callback=_checked(_bool),
    help="Accepted: the endpoints are served over HTTP/1.1 only, which is what true asks for.",
)
@_optional_value(
    "--profiling",
    callback=_checked(_bool),
    help="Serve /debug/pprof/ (a cProfile CPU profile and task stacks); overrides enableProfiling.",
)
@click.option("-v", "--v", "verbosity", default=0, type=click.IntRange(min=0), help="Log verbosity (klog).")
@click.option(
    "--logging-format",
    type=click.Choice(LOGGING_FORMATS),
    default="text",
    show_default=True,
    help="Log lines as text (klog-like) or JSON (one object a line).",
)
@_optional_value(
    "--log-text-split-stream", callback=_checked(_bool), help="Errors to stderr, the rest to stdout (text)."
)
@_optional_value(
    "--log-json-split-stream", callback=_checked(_bool), help="Errors to stderr, the rest to stdout (json)."
)
@click.option(
    "--log-flush-frequency",
    callback=_checked(parse_go_duration),
    help="Accepted: every log line is flushed at once.",
)
@_optional_value(
    "--leader-elect",
    "leader_elect",
    callback=_checked(_bool),
    help="Take part in leader election before scheduling (also --leader-elect=false).",
)
@click.option(
    "--leader-elect-lease-duration",
    callback=_checked(parse_go_duration),
    help="How long a lease holds without renewal (e.g. 137s).",
)
@click.option(
    "--leader-elect-renew-deadline",
    callback=_checked(parse_go_duration),
    help="How long the leader retries renewing before it gives up.",
)
@click.option(
    "--leader-elect-retry-period",
    callback=_checked(parse_go_duration),
    help="Time between election attempts.",
)
@click.option("--leader-elect-resource-lock", help="Lock type; only 'leases' exists.")
@click.option("--leader-elect-resource-name", help="Name of the Lease.")
@click.option("--leader-elect-resource-namespace", help="Namespace of the Lease.")
@click.option(
    "--kube-api-qps",
    type=float,
    callback=_checked(check_qps),
    help="Client QPS when no --config is given (else clientConnection.qps).",
)
@click.option(
    "--kube-api-burst",
    type=int,
    callback=_checked(check_burst),
    help="Client burst when no --config is given.",
)
@click.option(
    "--kube-api-content-type",
    type=click.Choice(["application/json"]),
    help="Content type of API requests: JSON only (protobuf is not spoken).",
)
@click.option(
    "--authentication-kubeconfig",
    help="Kubeconfig allowed to create tokenreviews, to authenticate bearer tokens (default: in-cluster; "
    "without either every caller is anonymous).",
)
@click.option(
    "--authentication-token-webhook-cache-ttl",
    default="10s",
    show_default=True,
    callback=_checked(parse_go_duration),
    help="How long TokenReview answers are cached.",
)
@_optional_value(
    "--authentication-skip-lookup",
    callback=_checked(_bool),
    help="Do not read the client CA and front-proxy settings from ConfigMap "
    "kube-system/extension-apiserver-authentication.",
)
@click.option(
    "--authentication-tolerate-lookup-failure",
    is_flag=False,
    flag_value="true",
    default="true",
    show_default=True,
    callback=_checked(_bool),
    help="Start even when that ConfigMap cannot be read (front-proxy authentication then stays off).",
)
@click.option(
    "--authorization-kubeconfig",
    help="Kubeconfig allowed to create subjectaccessreviews (default: in-cluster; without either only "
    "system:masters and the always-allow paths are allowed).",
)
@click.option(
    "--authorization-webhook-cache-authorized-ttl",
    default="10s",
    show_default=True,
    callback=_checked(parse_go_duration),
    help="How long allowed SubjectAccessReview answers are cached.",
)
@click.option(
    "--authorization-webhook-cache-unauthorized-ttl",
    default="10s",
    show_default=True,
    callback=_checked(parse_go_duration),
    help="How long denied SubjectAccessReview answers are cached.",
)
@click.option(
    "--authorization-always-allow-paths",
    default=",".join(DEFAULT_ALWAYS_ALLOW_PATHS),
    show_default=True,
    callback=_checked(check_always_allow_paths),
    help="Paths served without authorization (a trailing * allows a prefix; empty: none).",
)
@click.option(
    "--requestheader-client-ca-file",
    type=click.Path(dir_okay=False),
    help="CAs of authenticating front proxies, whose headers then name the user "
    "(default: the extension-apiserver-authentication ConfigMap's).",
)
@click.option(
    "--requestheader-username-headers",
    default="x-remote-user",
    show_default=True,
    help="Headers a front proxy names the user in (comma-separated).",
)
@click.option("--requestheader-uid-headers", default="", help="Headers a front proxy names the UID in.")
@click.option(
    "--requestheader-group-headers",
    default="x-remote-group",
    show_default=True,
    help="Headers a front proxy names groups in.",
)
@click.option(
    "--requestheader-extra-headers-prefix",
    default="x-remote-extra-",
    show_default=True,
    help="Header prefixes a front proxy passes extra user fields in.",
)
@click.option(
    "--requestheader-allowed-names",
    default="",
    help="Front-proxy certificate common names allowed (empty: any the CA signed).",
)
@click.option("--feature-gates", help="Accepted for compatibility (reported at start).")
def scheduler(registry: Registry, **options: Any) -> None:
    """Run the load-aware scheduler. It takes kube-scheduler's flags, so it can replace the
    scheduler image the OpenShift Secondary Scheduler Operator runs (`/bin/kube-scheduler`).

    \b
    Example, outside a cluster:
      secsched scheduler --config=config.yaml --kubeconfig=$KUBECONFIG --leader-elect=false
    kube-scheduler flags it does not support are refused by name (see docs/scheduler.md).
    """
    flags = SchedulerFlags(
        config=options["config"],
        kubeconfig=options["kubeconfig"],
        master=options["master"],
        secure_port=options["secure_port"],
        bind_address=options["bind_address"],
        tls_cert_file=options["tls_cert_file"],
        tls_private_key_file=options["tls_private_key_file"],
        tls_min_version=options["tls_min_version"],
        tls_cipher_suites=options["tls_cipher_suites"] or [],
        verbosity=options["verbosity"],
        kube_api_qps=options["kube_api_qps"],
        kube_api_burst=options["kube_api_burst"],
        leader_election=LeaderElectionFlags(
            leader_elect=options["leader_elect"],
            lease_duration=options["leader_elect_lease_duration"],
            renew_deadline=options["leader_elect_renew_deadline"],
            retry_period=options["leader_elect_retry_period"],
            resource_lock=options["leader_elect_resource_lock"],
            resource_name=options["leader_elect_resource_name"],
            resource_namespace=options["leader_elect_resource_namespace"],
        ),
        delegated_auth=DelegatedAuthOptions(
            authentication_kubeconfig=options["authentication_kubeconfig"] or None,
            authorization_kubeconfig=options["authorization_kubeconfig"] or None,
            token_cache_ttl=options["authentication_token_webhook_cache_ttl"],
            authorized_ttl=options["authorization_webhook_cache_authorized_ttl"],
            unauthorized_ttl=options["authorization_webhook_cache_unauthorized_ttl"],
            always_allow_paths=options["authorization_always_allow_paths"],
            skip_lookup=bool(options["authentication_skip_lookup"]),
            tolerate_lookup_failure=options["authentication_tolerate_lookup_failure"],
            requestheader_client_ca_file=options["requestheader_client_ca_file"] or None,
            requestheader=RequestHeaderConfig(
                username_headers=_string_slice(options["requestheader_username_headers"]),
                uid_headers=_string_slice(options["requestheader_uid_headers"]),
                group_headers=_string_slice(options["requestheader_group_headers"]),
                extra_header_prefixes=_string_slice(options["requestheader_extra_headers_prefix"]),
                allowed_names=_string_slice(options["requestheader_allowed_names"]),
            ),
        ),
        feature_gates=options["feature_gates"],
        write_config_to=options["write_config_to"],
        cert_dir=options["cert_dir"],
        client_ca_file=options["client_ca_file"],
        permit_port_sharing=bool(options["permit_port_sharing"]),
        permit_address_sharing=bool(options["permit_address_sharing"]),
        profiling=options["profiling"],
        logging_format=options["logging_format"],
        log_split_stream=bool(
            options["log_json_split_stream"]
            if options["logging_format"] == "json"
            else options["log_text_split_stream"]
        ),
    )
    configure_logging(flags.verbosity, flags.logging_format, flags.log_split_stream)
    try:
        if flags.write_config_to:
            write_config(flags, registry)
            return
        sys.exit(run_on_uvloop(flags, registry))
    except StartupError as error:
        for line in str(error).splitlines():
            click.echo(f"error: {line}", err=True)
        sys.exit(1)
