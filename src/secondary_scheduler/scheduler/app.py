"""`secsched scheduler`: the process — config, flags, API clients, servers, leader election, signals.

Exit codes follow kube-scheduler: 0 after a clean shutdown (SIGTERM/SIGINT), 1 when the
configuration is invalid or leadership is lost (the pod restarts and rejoins the election).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import time
from dataclasses import replace as dataclass_replace
from pathlib import Path
from urllib.parse import urlsplit

import uvloop

from secondary_scheduler.certs import self_signed, write_pair
from secondary_scheduler.config import (
    ConfigError,
    LoadResult,
    PluginCatalog,
    SchedulerConfiguration,
    dump_config_yaml,
    load_config,
)
from secondary_scheduler.config.base import format_go_duration
from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import HTTP_LOGGER, ApiClient
from secondary_scheduler.kube.leaderelection import LeaderElectionConfig, LeaderElector
from secondary_scheduler.plugins.registry import Registry, catalog_of
from secondary_scheduler.safeyaml import MAX_CONFIG_BYTES, YamlLimitError, read_limited
from secondary_scheduler.scheduler import delegatedauth, profiling
from secondary_scheduler.scheduler.metrics import SchedulerMetrics
from secondary_scheduler.scheduler.options import SchedulerFlags
from secondary_scheduler.scheduler.scheduler import Scheduler
from secondary_scheduler.scheduler.server import HealthServer, tls_context

log = logging.getLogger("secsched.scheduler")
LOST_LEADERSHIP = 1
"""The exit code once leadership is lost (kube-scheduler's): the pod restarts and rejoins."""

DEFAULT_CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class StartupError(RuntimeError):
    """The scheduler cannot start; the message says what to fix."""


class JsonFormatter(logging.Formatter):
    """--logging-format=json: one JSON object a line, with klog's keys (ts, v, msg) plus level and logger."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.levelno <= logging.DEBUG:
            entry["v"] = 4
        if record.exc_info:
            entry["err"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class _Below(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def configure_logging(verbosity: int, logging_format: str = "text", split_stream: bool = False) -> None:
    """klog's -v: 0-3 informational, 4 and up debug (per-pod detail), 6 and up every API request.

    `split_stream` (--log-text-split-stream, --log-json-split-stream): errors to stderr, the rest
    to stdout; otherwise everything goes to stderr, as klog's default.
    """
    level = logging.DEBUG if verbosity >= 4 else logging.INFO
    formatter: logging.Formatter = (
        JsonFormatter()
        if logging_format == "json"
        else logging.Formatter("%(asctime)s %(levelname).1s %(name)s] %(message)s")
    )
    handlers: list[logging.Handler] = []
    if split_stream:
        info = logging.StreamHandler(sys.stdout)
        info.addFilter(_Below(logging.ERROR))
        errors = logging.StreamHandler(sys.stderr)
        errors.setLevel(logging.ERROR)
        handlers = [info, errors]
    else:
        handlers = [logging.StreamHandler(sys.stderr)]
    for handler in handlers:
        handler.setFormatter(formatter)
    logging.basicConfig(level=level, handlers=handlers, force=True)
    for noisy in ("aiohttp", HTTP_LOGGER):
        logging.getLogger(noisy).setLevel(logging.WARNING if verbosity < 6 else logging.DEBUG)


def load_configuration(flags: SchedulerFlags, catalog: PluginCatalog) -> LoadResult:
    """The --config file (or kube-scheduler's defaults), or a StartupError listing every problem."""
    if not flags.config:
        return load_config(DEFAULT_CONFIG, "<defaults>", catalog=catalog)
    try:
        data = read_limited(flags.config, MAX_CONFIG_BYTES, "the configuration")
    except YamlLimitError as error:
        raise StartupError(f"{flags.config}: {error.problem}") from error
    except FileNotFoundError as error:
        raise StartupError(f"{flags.config}: configuration not found: check --config") from error
    except OSError as error:
        raise StartupError(
            f"{flags.config}: cannot be read ({error.strerror or error}): check --config"
        ) from error
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise StartupError(f"{flags.config}: is not UTF-8 text: is this the configuration file?") from error
    try:
        return load_config(text, flags.config, catalog=catalog)
    except ConfigError as error:
        # One `error:` line per problem (the CLI's contract), as `secsched config validate` prints them.
        lines = [problem.render(error.source) for problem in error.problems]
        raise StartupError("\n".join(lines) or str(error)) from error


def effective_config(config: SchedulerConfiguration, flags: SchedulerFlags) -> SchedulerConfiguration:
    """The configuration with the flags that override it applied, as kube-scheduler applies them.

    The --leader-elect-* flags override leaderElection; --kube-api-qps/--kube-api-burst apply only
    without --config; --profiling overrides enableProfiling. The result is validated again with
    component-base's leader election rules (a flag can break them).
    """
    given = flags.leader_election
    base = config.leader_election
    election = base.model_copy(
        update={
            key: value
            for key, value in (
                ("leader_elect", given.leader_elect),
                ("lease_duration", given.lease_duration),
                ("renew_deadline", given.renew_deadline),
                ("retry_period", given.retry_period),
                ("resource_name", given.resource_name or None),
                ("resource_namespace", given.resource_namespace or None),
            )
            if value is not None
        }
    )
    connection = config.client_connection
    if not flags.config:
        connection = connection.model_copy(
            update={
                key: value
                for key, value in (
                    ("qps", flags.kube_api_qps or None),
                    ("burst", flags.kube_api_burst or None),
                )
                if value is not None
            }
        )
    updates: dict[str, object] = {"leader_election": election, "client_connection": connection}
    if flags.profiling is not None:
        updates["enable_profiling"] = flags.profiling
    effective = config.model_copy(update=updates)
    if election.leader_elect:
        if given.resource_lock not in (None, "leases"):
            raise StartupError(
                f'--leader-elect-resource-lock={given.resource_lock}: resourceLock value must be "leases" '
                "(as in kube-scheduler 1.34: the endpoints and configmaps locks are gone): use leases"
            )
        _check_leader_election(effective)
    return effective


def _check_leader_election(config: SchedulerConfiguration) -> None:
    """component-base's ValidateLeaderElectionConfiguration (and client-go's jitter rule) after the flags."""
    election = config.leader_election
    durations = (
        ("lease-duration", election.lease_duration),
        ("renew-deadline", election.renew_deadline),
        ("retry-period", election.retry_period),
    )
    for name, seconds in durations:
        if seconds <= 0:
            raise StartupError(f"--leader-elect-{name} (or leaderElection): must be greater than zero")
    if election.lease_duration <= election.renew_deadline:
        raise StartupError(
            f"leader election: leaseDuration ({format_go_duration(election.lease_duration)}) must be greater "
            f"than renewDeadline ({format_go_duration(election.renew_deadline)}): fix "
            "--leader-elect-lease-duration/--leader-elect-renew-deadline or the config's leaderElection"
        )
    if election.renew_deadline <= 1.2 * election.retry_period:
        raise StartupError(
            f"leader election: renewDeadline ({format_go_duration(election.renew_deadline)}) must be greater "
            f"than 1.2 x retryPeriod ({format_go_duration(election.retry_period)}): fix "
            "--leader-elect-renew-deadline/--leader-elect-retry-period or the config's leaderElection"
        )


def write_config(flags: SchedulerFlags, registry: Registry) -> None:
    """--write-config-to: the effective configuration (flags applied, defaults filled in), then exit 0."""
    loaded = load_configuration(flags, catalog_of(registry))
    for warning in loaded.warnings:
        log.warning("config: %s", warning.render(loaded.source))
    config = effective_config(loaded.config, flags)
    assert flags.write_config_to is not None
    try:
        Path(flags.write_config_to).write_text(dump_config_yaml(config))
    except OSError as error:
        raise StartupError(
            f"--write-config-to={flags.write_config_to}: cannot write ({error.strerror or error})"
        ) from error
    log.info("wrote the effective configuration to %s", flags.write_config_to)


def effective_leader_election(
    config: SchedulerConfiguration, flags: SchedulerFlags
) -> LeaderElectionConfig | None:
    """The config's leaderElection, with each --leader-elect-* flag given on the command line on top."""
    election = effective_config(config, flags).leader_election
    if not election.leader_elect:
        return None
    return LeaderElectionConfig(
        namespace=election.resource_namespace,
        name=election.resource_name,
        lease_duration=election.lease_duration,
        renew_deadline=election.renew_deadline,
        retry_period=election.retry_period,
    )


def _serving_files(flags: SchedulerFlags) -> tuple[str, str, str | None]:
    """--tls-cert-file/--tls-private-key-file, else a self-signed pair (kept in --cert-dir if given);
    the third item is the temporary directory holding the pair when there is no --cert-dir."""
    temporary = None
    if flags.tls_cert_file and flags.tls_private_key_file:
        return flags.tls_cert_file, flags.tls_private_key_file, None
    if flags.tls_cert_file or flags.tls_private_key_file:
        raise StartupError("--tls-cert-file and --tls-private-key-file must be given together")
    if flags.cert_dir:
        # kube-scheduler's pair name: reused when both files exist, else made and written there.
        cert_path, key_path = (
            os.path.join(flags.cert_dir, f"kube-scheduler.{ext}") for ext in ("crt", "key")
        )
        if os.path.isfile(cert_path) and os.path.isfile(key_path):
            return cert_path, key_path, None
        directory = flags.cert_dir
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise StartupError(
                f"--cert-dir={directory}: cannot create it ({error.strerror or error})"
            ) from error
    else:
        directory = temporary = tempfile.mkdtemp(prefix="secsched-serving-")
        cert_path, key_path = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
    cert, key = self_signed(
        f"secsched@{socket.gethostname()}", ["localhost", "127.0.0.1", socket.gethostname()]
    )
    try:
        write_pair(cert_path, key_path, cert, key)
    except OSError as error:
        raise StartupError(
            f"--cert-dir={directory}: cannot write the certificate ({error.strerror or error})"
        ) from error
    return cert_path, key_path, temporary


def serving_context(flags: SchedulerFlags) -> ssl.SSLContext:
    """The given certificate, or (as kube-scheduler does) a self-signed one; client CAs if given.

    A self-signed pair made without --cert-dir lives in memory only, as kube-scheduler's: its
    temporary files are gone once the context has read them.
    """
    cert_path, key_path, temporary = _serving_files(flags)
    try:
        return _serving_context(flags, cert_path, key_path)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def _serving_context(flags: SchedulerFlags, cert_path: str, key_path: str) -> ssl.SSLContext:
    for flag, path in (("--tls-cert-file", cert_path), ("--tls-private-key-file", key_path)):
        if not os.path.isfile(path):
            raise StartupError(f"{flag}={path}: not found: check the path")
    try:
        context = tls_context(cert_path, key_path, flags.tls_min_version, flags.tls_cipher_suites)
    except ssl.SSLError as error:
        if "cipher" in str(error).lower():
            raise StartupError(
                f"--tls-cipher-suites={','.join(flags.tls_cipher_suites)}: OpenSSL offers none of these "
                "suites: add a TLS 1.2 ECDHE suite such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            ) from error
        raise StartupError(
            f"--tls-cert-file={cert_path}, --tls-private-key-file={key_path}: cannot be used "
            f"({kubeconfig.ssl_reason(error)}): give a PEM certificate and its matching PEM private key"
        ) from error
    except (OSError, ValueError) as error:
        raise StartupError(f"--tls-cert-file={cert_path}: cannot be used ({error})") from error
    if flags.client_ca_file:
        try:
            context.load_verify_locations(cafile=flags.client_ca_file)
        except (ssl.SSLError, OSError) as error:
            raise StartupError(
                f"--client-ca-file={flags.client_ca_file}: cannot be used "
                f"({kubeconfig.ssl_reason(error)}): give a PEM bundle of CA certificates"
            ) from error
        # Go's VerifyClientCertIfGiven: a certificate presented must verify; none is fine.
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def _check_master(master: str) -> str:
    """--master, as client-go reads it: a URL, or host:port (https:// assumed)."""
    candidate = master if "://" in master else f"https://{master}"
    try:
        parts = urlsplit(candidate)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as error:
        raise StartupError(f"--master={master}: not a URL ({error}): e.g. https://10.0.0.1:6443") from error
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StartupError(f"--master={master}: not an http(s) URL with a host: e.g. https://10.0.0.1:6443")
    return candidate.rstrip("/")


def run_on_uvloop(flags: SchedulerFlags, registry: Registry) -> int:
    """``run`` on uvloop's event loop: its transports, TLS and timers are compiled, so the one
    thread that schedules, binds and reads the watches spends less of each API request in
    Python (the preemption class at 1,000 nodes: 15 ms of CPU per pod instead of 18.5)."""
    return uvloop.run(run(flags, registry))


async def run(flags: SchedulerFlags, registry: Registry) -> int:
    """Run the scheduler until SIGTERM/SIGINT (0) or lost leadership (1), with ``registry``'s plugins."""
    loaded = load_configuration(flags, catalog_of(registry))
    for warning in loaded.warnings:
        log.warning("config: %s", warning.render(loaded.source))
    for note in flags.notes():
        log.warning("%s", note)
    config = effective_config(loaded.config, flags)
    connection_config = config.client_connection
    # kube-scheduler takes the kubeconfig from the config file when one is given and ignores the
    # flag; we do the same, but fall back to the flag rather than drop it silently.
    kubeconfig_path = connection_config.kubeconfig or flags.kubeconfig or None
    if (
        flags.config
        and flags.kubeconfig
        and connection_config.kubeconfig
        and flags.kubeconfig != kubeconfig_path
    ):
        log.warning(
            "--kubeconfig=%s is ignored: the config's clientConnection.kubeconfig wins", flags.kubeconfig
        )
    try:
        connection = kubeconfig.load(kubeconfig_path)
    except kubeconfig.KubeconfigError as error:
        raise StartupError(str(error)) from error
    if flags.master:
        connection = dataclass_replace(connection, server=_check_master(flags.master))
    qps, burst = connection_config.qps, connection_config.burst
    leader_config = effective_leader_election(config, flags)
    context = serving_context(flags) if flags.secure_port else None

    metrics = SchedulerMetrics()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    async with (
        ApiClient(connection, qps=qps, burst=burst, user_agent="secsched-scheduler") as api,
        ApiClient(connection, qps=qps, burst=burst, user_agent="secsched-scheduler/events") as events_api,
        # Leader election has a client of its own (as in kube-scheduler): a renewal must never
        # wait behind a burst of bindings in the shared rate limiter.
        ApiClient(
            connection, qps=5, burst=10, user_agent="secsched-scheduler/leader-election"
        ) as election_api,
    ):
        for client in (api, events_api, election_api):
            client.on_response = metrics.count_requests_of(client.host)
        try:
            scheduler = Scheduler(config, api, events_api, registry, metrics=metrics)
        except ValueError as error:  # a plugin refusing its args or environment (Framework's contract)
            source = flags.config or "the configuration"
            raise StartupError(f"{source}: initializing profiles: {error}") from error
        try:
            auth = await delegatedauth.start(flags.auth_options(), context) if context is not None else None
        except delegatedauth.DelegatedAuthError as error:
            raise StartupError(str(error)) from error
        server = HealthServer(
            metrics.registry,
            ready=scheduler.synced,
            extra_routes=profiling.routes() if config.enable_profiling else (),
            auth=auth,
        )
        if context is not None:
            await _serve(server, flags, context)
        profiles = ", ".join(scheduler.frameworks)
        log.info("starting scheduler for profiles [%s] (qps %s, burst %s)", profiles, qps, burst)
        exit_code = 0
        try:
            await _until_stopped(scheduler.start_informers(), stop)
            if not stop.is_set():
                exit_code = await _lead_and_schedule(scheduler, election_api, leader_config, metrics, stop)
        finally:
            await scheduler.stop()
            await server.stop()
        log.info("scheduler stopped")
        return exit_code


async def _serve(server: HealthServer, flags: SchedulerFlags, context: ssl.SSLContext) -> None:
    """Start the HTTPS endpoints; a port that cannot be bound is a StartupError naming the flag."""
    started = time.monotonic()
    try:
        await server.start(
            flags.bind_address,
            flags.secure_port,
            context,
            reuse_port=flags.permit_port_sharing,
            reuse_address=flags.permit_address_sharing,
        )
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise StartupError(
                f"--secure-port={flags.secure_port}: {flags.bind_address}:{flags.secure_port} is already in "
                "use: stop what listens there, or choose another --secure-port (0 turns serving off)"
            ) from error
        raise StartupError(
            f"--bind-address={flags.bind_address} --secure-port={flags.secure_port}: cannot listen "
            f"({error.strerror or error}): use an address of this machine, or 0.0.0.0"
        ) from error
    log.info(
        "serving /healthz, /readyz and /metrics on https://%s:%d (%.0f ms)",
        flags.bind_address,
        flags.secure_port,
        (time.monotonic() - started) * 1000,
    )


async def _until_stopped(coroutine: object, stop: asyncio.Event) -> None:
    """Await `coroutine` unless `stop` is set first."""
    work = asyncio.ensure_future(coroutine)  # type: ignore[call-overload]
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({work, stopper}, return_when=asyncio.FIRST_COMPLETED)
    for task in (work, stopper):
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    error = work.exception() if work.done() and not work.cancelled() else None
    if error is not None:
        raise error


async def _lead_and_schedule(
    scheduler: Scheduler,
    api: ApiClient,
    leader_config: LeaderElectionConfig | None,
    metrics: SchedulerMetrics,
    stop: asyncio.Event,
) -> int:
    elector = LeaderElector(api, leader_config) if leader_config else None
    if elector is not None:
        await _until_stopped(elector.acquire(), stop)
        if stop.is_set():
            return 0
        metrics.leader.labels(leader_config.name if leader_config else "").set(1)
    scheduling = asyncio.create_task(scheduler.run(), name="scheduling-loop")
    watchers = {scheduling, asyncio.create_task(stop.wait())}
    holding = asyncio.create_task(elector.hold()) if elector else None
    if holding is not None:
        watchers.add(holding)
    done, _ = await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
    lost = holding is not None and holding in done
    for task in watchers:
        task.cancel()
    if lost:  # before anything else runs: another replica may lead already
        scheduler.abandon_in_flight()
    for task in watchers:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    error = scheduling.exception() if scheduling in done else None
    if error is not None:
        raise error
    if elector is not None:
        metrics.leader.labels(elector.config.name).set(0)
        if lost:
            log.error("leaderelection lost")
            return LOST_LEADERSHIP
        await elector.release()
    return 0
