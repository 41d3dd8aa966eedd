"""`secsched scheduler`: the process — config, flags, API clients, servers, leader election, signals.

Exit codes follow kube-scheduler: 0 after a clean shutdown (SIGTERM/SIGINT), 1 when the
configuration is invalid or leadership is lost (the pod restarts and rejoins the election).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import ssl
import tempfile
from dataclasses import replace as dataclass_replace

from secondary_scheduler.certs import self_signed
from secondary_scheduler.config import (
    ConfigError,
    LoadResult,
    SchedulerConfiguration,
    load_config,
    load_config_file,
)
from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import HTTP_LOGGER, ApiClient
from secondary_scheduler.kube.leaderelection import LeaderElectionConfig, LeaderElector
from secondary_scheduler.plugins.registry import default_registry

from .metrics import SchedulerMetrics
from .options import SchedulerFlags
from .scheduler import Scheduler
from .server import HealthServer, tls_context

log = logging.getLogger("secsched.scheduler")

DEFAULT_CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class StartupError(RuntimeError):
    """The scheduler cannot start; the message says what to fix."""


def configure_logging(verbosity: int) -> None:
    """klog's -v: 0-3 informational, 4 and up debug (per-pod detail), 6 and up every API request."""
    level = logging.DEBUG if verbosity >= 4 else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(levelname).1s %(name)s] %(message)s", force=True)
    for noisy in ("aiohttp", HTTP_LOGGER):
        logging.getLogger(noisy).setLevel(logging.WARNING if verbosity < 6 else logging.DEBUG)


def load_configuration(flags: SchedulerFlags) -> LoadResult:
    try:
        return load_config_file(flags.config) if flags.config else load_config(DEFAULT_CONFIG, "<defaults>")
    except OSError as error:
        raise StartupError(f"--config={flags.config}: {error.strerror or error}") from error
    except ConfigError as error:
        raise StartupError(str(error)) from error


def effective_leader_election(
    config: SchedulerConfiguration, flags: SchedulerFlags
) -> LeaderElectionConfig | None:
    """The config's leaderElection, with each --leader-elect-* flag given on the command line on top."""
    given = flags.leader_election
    base = config.leader_election
    enabled = base.leader_elect if given.leader_elect is None else given.leader_elect
    if not enabled:
        return None
    return LeaderElectionConfig(
        namespace=given.resource_namespace or base.resource_namespace,
        name=given.resource_name or base.resource_name,
        lease_duration=given.lease_duration if given.lease_duration is not None else base.lease_duration,
        renew_deadline=given.renew_deadline if given.renew_deadline is not None else base.renew_deadline,
        retry_period=given.retry_period if given.retry_period is not None else base.retry_period,
    )


def serving_context(flags: SchedulerFlags) -> ssl.SSLContext:
    """The given certificate, or (as kube-scheduler does) a self-signed one made now."""
    if flags.tls_cert_file and flags.tls_private_key_file:
        return tls_context(
            flags.tls_cert_file, flags.tls_private_key_file, flags.tls_min_version, flags.tls_cipher_suites
        )
    if flags.tls_cert_file or flags.tls_private_key_file:
        raise StartupError("--tls-cert-file and --tls-private-key-file must be given together")
    cert, key = self_signed(
        f"secsched@{socket.gethostname()}", ["localhost", "127.0.0.1", socket.gethostname()]
    )
    directory = tempfile.mkdtemp(prefix="secsched-serving-")
    cert_path, key_path = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
    with open(cert_path, "wb") as cert_file:
        cert_file.write(cert)
    with open(key_path, "wb") as key_file:
        key_file.write(key)
    return tls_context(cert_path, key_path, flags.tls_min_version, flags.tls_cipher_suites)


async def run(flags: SchedulerFlags) -> int:
    """Run the scheduler until SIGTERM/SIGINT (0) or lost leadership (1)."""
    loaded = load_configuration(flags)
    for warning in loaded.warnings:
        log.warning("config: %s", warning.render(loaded.source))
    for note in flags.notes():
        log.warning("%s", note)
    config = loaded.config
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
        connection = dataclass_replace(connection, server=flags.master.rstrip("/"))
    qps = flags.kube_api_qps if flags.kube_api_qps is not None and not flags.config else connection_config.qps
    burst = (
        flags.kube_api_burst
        if flags.kube_api_burst is not None and not flags.config
        else connection_config.burst
    )
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
        scheduler = Scheduler(config, api, events_api, default_registry(), metrics=metrics)
        server = HealthServer(metrics.registry, ready=scheduler.synced)
        if context is not None:
            await server.start(flags.bind_address, flags.secure_port, context)
            log.info(
                "serving /healthz, /readyz and /metrics on https://%s:%d",
                flags.bind_address,
                flags.secure_port,
            )
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
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    error = scheduling.exception() if scheduling in done else None
    if error is not None:
        raise error
    if elector is not None:
        metrics.leader.labels(elector.config.name).set(0)
        if lost:
            log.error("leaderelection lost")
            return 1
        await elector.release()
    return 0
