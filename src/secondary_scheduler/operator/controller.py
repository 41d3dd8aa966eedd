"""kopf wiring: credentials from our kubeconfig loader, watches that trigger one reconcile loop.

kopf does the watching (the CR, its ConfigMap, the objects we manage) and owns the
finalizer; every handler only *triggers* the reconcile loop below, which coalesces bursts
of events into one level-based `Reconciler.reconcile` at a time, retries failures with
backoff and resyncs periodically (node counts for HA, drift of cluster-scoped objects).

Only the CR named `cluster` (upstream's rule) in the one watched namespace is reconciled;
other SecondarySchedulers get a Warning event saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import kopf
from aiohttp import web

from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import ApiClient, ApiError, ApiUnavailable
from secondary_scheduler.kube.kubeconfig import Connection
from secondary_scheduler.kube.reflector import failure_hint
from secondary_scheduler.operator import loglevel, names
from secondary_scheduler.operator.reconcile import Reconciler

log = logging.getLogger(__name__)

OPERATOR_RBAC = (
    "apply deploy/'s RBAC for the operator's ServiceAccount "
    "(02_clusterrole, 03_clusterrolebinding, 03_role, 03a_kube-system_role)"
)

TOKEN_FILE_RELOGIN = datetime.timedelta(minutes=5)
"""How often kopf re-reads a token file (projected ServiceAccount tokens rotate)."""
MANAGED_KINDS = (
    ("apps", "v1", "deployments"),
    ("", "v1", "services"),
    ("", "v1", "serviceaccounts"),
    ("rbac.authorization.k8s.io", "v1", "roles"),
    ("rbac.authorization.k8s.io", "v1", "rolebindings"),
)
"""Namespaced kinds we manage and watch (by our label) to revert drift and track readiness."""


@dataclass(frozen=True)
class OperatorOptions:
    namespace: str = names.DEFAULT_NAMESPACE
    kubeconfig: str | None = None
    context: str | None = None
    resync_seconds: float = 60.0
    liveness_endpoint: str | None = None
    readiness_endpoint: str | None = None
    """http://HOST:PORT/PATH answering 200 once a reconcile has read the CR and its ConfigMap."""


def connection_info(connection: Connection, namespace: str) -> kopf.ConnectionInfo:
    """kopf's credentials, from the same Connection our own client uses (one source of auth)."""
    expiration = None
    if connection.token_file:
        expiration = datetime.datetime.now(datetime.UTC) + TOKEN_FILE_RELOGIN
    return kopf.ConnectionInfo(
        server=connection.server,
        ca_path=connection.ca_file,
        insecure=connection.insecure_skip_verify,
        certificate_path=connection.client_cert_file,
        private_key_path=connection.client_key_file,
        token=connection.bearer_token(),
        default_namespace=namespace,
        expiration=expiration,
    )


class Controller:
    """One reconcile at a time; any number of triggers meanwhile collapse into one more run."""

    def __init__(self, reconciler: Reconciler, resync_seconds: float) -> None:
        self.reconciler = reconciler
        self.resync_seconds = resync_seconds
        self._wake = asyncio.Event()
        self.reconciled = False
        """A reconcile has completed since start: the operator has seen the cluster (readiness)."""
        self.last_error: str | None = None

    def trigger(self, why: str) -> None:
        log.debug("reconcile requested: %s", why)
        self._wake.set()

    async def run(self) -> None:
        """Reconcile on every trigger, on retry after a failure, and every `resync_seconds`."""
        backoff = 1.0
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.resync_seconds)
            except TimeoutError:
                log.debug("periodic resync")
            self._wake.clear()
            try:
                result = await self.reconciler.reconcile()
            except (ApiError, ApiUnavailable) as error:
                # The API server's answer (or its silence) is the cause: no traceback, say what to do.
                message = f"reconcile failed: {error}: {failure_hint(error, OPERATOR_RBAC)}"
                if message != self.last_error or backoff >= 60.0:
                    log.error("%s; retrying in %.0fs", message, backoff)
                self.last_error = message
                retry = True
            except Exception as error:
                log.error(
                    "reconcile failed (a bug): %s: %s; retrying in %.0fs",
                    type(error).__name__,
                    error,
                    backoff,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
                self.last_error = f"{type(error).__name__}: {error}"
                retry = True
            else:
                retry = result.retry
                if not retry:
                    if self.last_error is not None:
                        log.info("reconcile works again")
                    self.reconciled, self.last_error = True, None
            if retry:
                asyncio.get_running_loop().call_later(backoff, self.trigger, "retry after a failure")
                backoff = min(backoff * 2, 60.0)
            else:
                backoff = 1.0


def build_kopf_registry(
    controller: Controller, connection: Connection, namespace: str
) -> kopf.OperatorRegistry:
    """The handlers, in a registry of their own (so several operators can live in one process)."""
    registry = kopf.OperatorRegistry()
    reconciler = controller.reconciler
    instance = reconciler.instance_name
    warned: set[str] = set()

    def is_instance(name: str, **_: Any) -> bool:
        return name == instance

    def is_other(name: str, **_: Any) -> bool:
        return name != instance

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(connection, namespace)

    @kopf.on.event(names.GROUP, names.VERSION, names.PLURAL, when=is_instance, registry=registry)
    def on_instance(type: str | None, **_: Any) -> None:
        controller.trigger(f"SecondaryScheduler {instance}: {type or 'listed'}")

    @kopf.on.delete(names.GROUP, names.VERSION, names.PLURAL, when=is_instance, registry=registry)
    async def on_delete(body: kopf.Body, **_: Any) -> None:
        await reconciler.cleanup(dict(body))

    @kopf.on.event(names.GROUP, names.VERSION, names.PLURAL, when=is_other, registry=registry)
    async def on_other(meta: kopf.Meta, type: str | None, **_: Any) -> None:
        uid = str(meta.get("uid"))
        if type == "DELETED" or uid in warned:
            return
        warned.add(uid)
        await reconciler.post_event(
            dict(meta),
            "Warning",
            "Ignored",
            f"this operator reconciles only the SecondaryScheduler named {instance!r} in namespace "
            f"{namespace}; this one is ignored (one scheduler Deployment per operator namespace)",
        )

    @kopf.on.event("", "v1", "configmaps", registry=registry)
    def on_configmap(name: str, type: str | None, **_: Any) -> None:
        if reconciler.scheduler_config in (None, name):
            controller.trigger(f"ConfigMap {name}: {type or 'listed'}")

    for group, version, plural in MANAGED_KINDS:

        @kopf.on.event(
            group,
            version,
            plural,
            labels={names.MANAGED_BY_KEY: names.MANAGED_BY},
            registry=registry,
            id=f"managed-{plural}",
        )
        def on_managed(name: str, type: str | None, resource: kopf.Resource, **_: Any) -> None:
            controller.trigger(f"{resource.plural} {name}: {type or 'listed'}")

    return registry


async def serve_readiness(controller: Controller, endpoint: str) -> web.AppRunner:
    """`--readiness`: 200 once a reconcile has completed, 503 (with the last error) before that."""
    parts = urlsplit(endpoint)

    async def ready(_: web.Request) -> web.Response:
        if controller.reconciled:
            return web.Response(text="ok")
        return web.Response(status=503, text=f"not reconciled yet: {controller.last_error or 'starting'}\n")

    app = web.Application()
    app.add_routes([web.get(parts.path or "/readyz", ready)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, parts.hostname or "0.0.0.0", parts.port or 8081).start()
    return runner


def operator_identity() -> str:
    """Who this operator process is, for kopf: `POD_ID` if set, else host name and pid.

    kopf's own default asks the OS user database for the user's name, which fails when the
    container runs as a UID without a passwd entry (OpenShift's restricted SCC picks one).
    """
    return os.environ.get("POD_ID") or f"{socket.gethostname()}/{os.getpid()}"


def build_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.peering.standalone = True  # one replica (deploy/05 uses Recreate): no peering CRDs
    settings.scanning.disabled = True  # the namespace is fixed: no need to list namespaces or CRDs
    settings.posting.enabled = False  # our CoreEventRecorder posts the events
    settings.persistence.finalizer = names.FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=names.KOPF_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=names.KOPF_PREFIX, key="last-handled-configuration"
    )
    settings.watching.server_timeout = 270
    settings.watching.client_timeout = 300
    return settings


Flag = asyncio.Event | threading.Event


async def run(
    options: OperatorOptions,
    *,
    stop_flag: Flag | None = None,
    ready_flag: Flag | None = None,
) -> None:
    """Run the operator until `stop_flag` is set (or SIGINT/SIGTERM).

    kopf cancels every task started in its event loop after it started, so a program that
    embeds the operator runs it on a loop of its own (a thread; threading.Events as flags)."""
    loglevel.apply("Normal")  # until the CR says otherwise
    connection = kubeconfig.load(options.kubeconfig, options.context)
    async with ApiClient(connection, user_agent="secsched-operator") as api:
        controller = Controller(Reconciler(api, options.namespace), options.resync_seconds)
        registry = build_kopf_registry(controller, connection, options.namespace)
        loop_task = asyncio.create_task(controller.run(), name="secsched-operator-reconcile")
        readiness = (
            await serve_readiness(controller, options.readiness_endpoint)
            if options.readiness_endpoint
            else None
        )
        controller.trigger("start")
        log.info(
            "operator watching namespace %s for SecondaryScheduler %s", options.namespace, names.INSTANCE_NAME
        )
        try:
            await kopf.operator(
                registry=registry,
                settings=build_settings(),
                namespaces=[options.namespace],
                standalone=True,
                identity=operator_identity(),  # type: ignore[arg-type]  # kopf's NewType over str
                liveness_endpoint=options.liveness_endpoint,
                stop_flag=stop_flag,
                ready_flag=ready_flag,
            )
        finally:
            loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop_task
            if readiness is not None:
                await readiness.cleanup()
            _release_signals()
            log.info("operator stopped")


def _release_signals() -> None:
    """kopf leaves its SIGINT/SIGTERM handlers on the loop; a process embedding it wants its own back."""
    if threading.current_thread() is threading.main_thread():
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
