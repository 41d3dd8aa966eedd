"""One reconcile: read the CR, its ConfigMap and the cluster facts, apply the plan, report.

Level-based and idempotent: whatever triggered it (the CR, the ConfigMap, a managed object,
the periodic resync), it converges the cluster on `render.plan` and writes the status. It
does no kopf-specific work, so tests and the CLI can drive it directly. All API calls go
through our one client; objects are server-side applied with a fixed field manager, which
also reverts manual edits of the fields we own.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from dataclasses import dataclass

from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, plural_of, resource_path
from secondary_scheduler.kube.events.core import CoreEventRecorder
from secondary_scheduler.kube.events.objects import ObjectReference
from secondary_scheduler.operator import certs, loglevel, names
from secondary_scheduler.operator.render import (
    BEST_EFFORT,
    SERVICE_MONITOR_API,
    ClusterFacts,
    ObjectRef,
    Plan,
    ha_node_selector,
    managed_refs,
    plan,
)
from secondary_scheduler.operator.spec import Instance, SpecError, parse_instance
from secondary_scheduler.operator.status import Outcome, status_body

log = logging.getLogger(__name__)

REPEAT_EVENTS_AFTER = 600.0
"""Seconds an identical event on the CR is not posted again (a periodic resync repeats them)."""


def _ref_path(ref: ObjectRef) -> str:
    return resource_path(ref.api_version, plural_of(ref.kind), ref.namespace, ref.name)


def _describe(obj: JSON) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


@dataclass(frozen=True)
class Result:
    """What the controller needs to schedule the next run."""

    outcome: Outcome | None
    retry: bool = False
    """A failure worth retrying soon (an API error, not a bad spec or config)."""


class Reconciler:
    """Reconciles the one SecondaryScheduler `instance_name` in `namespace`."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        instance_name: str = names.INSTANCE_NAME,
        events: CoreEventRecorder | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.instance_name = instance_name
        self.events = events or CoreEventRecorder(api, repeat_after=REPEAT_EVENTS_AFTER, log_events=True)
        self.lock = asyncio.Lock()
        self.scheduler_config: str | None = None
        """The ConfigMap the CR named last time, so the controller knows which ConfigMap matters."""

    @property
    def cr_path(self) -> str:
        return resource_path(names.API_VERSION, names.PLURAL, self.namespace, self.instance_name)

    async def _get(self, path: str) -> JSON | None:
        try:
            return await self.api.get(path)
        except ApiError as error:
            if error.not_found:
                return None
            raise

    # -- the reconcile ---------------------------------------------------------------
    async def reconcile(self) -> Result:
        async with self.lock:
            body = await self._get(self.cr_path)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return Result(None)
            try:
                instance = parse_instance(body, self.namespace)
            except SpecError as error:
                return await self._report_spec_error(body, error)
            loglevel.apply(instance.spec.operator_log_level)
            self.scheduler_config = instance.spec.scheduler_config
            if instance.spec.state == "Managed":
                outcome = await self._manage(body, instance)
            else:
                outcome = await self._leave_or_remove(body, instance)
            await self._write_status(body, outcome)
            return Result(outcome, retry=outcome.apply_error is not None)

    async def _leave_or_remove(self, body: JSON, instance: Instance) -> Outcome:
        """Unmanaged: touch nothing, only report. Removed: delete the operand, keep the CR."""
        state = instance.spec.state
        try:
            if state == "Removed":
                await self.remove()
            deployment = await self._get(self._deployment_path())
        except ApiError as error:
            return Outcome(self.namespace, instance.generation, state, apply_error=str(error))
        reason, message = ("Removed", _REMOVED) if state == "Removed" else ("Unmanaged", _UNMANAGED)
        await self.post_event(body["metadata"], "Normal", reason, message)
        return Outcome(self.namespace, instance.generation, state, deployment=deployment)

    async def _manage(self, body: JSON, instance: Instance) -> Outcome:
        meta = body["metadata"]
        spec = instance.spec
        try:
            configmap = (
                await self._get(resource_path("v1", "configmaps", self.namespace, spec.scheduler_config))
                if spec.scheduler_config
                else None
            )
            facts = await self._facts(instance)
            before = await self._get(self._deployment_path())
        except ApiError as error:
            return Outcome(
                self.namespace, instance.generation, "Managed", apply_error=f"reading the cluster: {error}"
            )
        desired = plan(instance, configmap, facts)
        deployment, failure, skipped = await self._apply(desired, before)
        await self._announce(meta, desired, before, deployment, skipped)
        return Outcome(
            self.namespace,
            instance.generation,
            "Managed",
            config=desired.config,
            apply_error=failure,
            deployment=deployment,
        )

    async def _apply(self, desired: Plan, before: JSON | None) -> tuple[JSON | None, str | None, list[str]]:
        """Apply every object in order, then delete the unwanted optional ones.

        Stops at the first failure, so the Deployment never goes ahead of its RBAC; except that a
        best-effort object the API server forbids is skipped (listed in the third item)."""
        deployment = before
        skipped: list[str] = []
        best_effort = {(ref.kind, ref.namespace, ref.name) for ref in desired.best_effort}
        for obj in desired.objects:
            try:
                applied = await self.api.apply(obj, names.FIELD_MANAGER)
            except ApiError as error:
                meta = obj["metadata"]
                if error.status == 403 and (obj["kind"], meta.get("namespace"), meta["name"]) in best_effort:
                    log.warning("cannot apply %s, going on without it: %s", _describe(obj), error)
                    skipped.append(_describe(obj))
                    continue
                return deployment, f"cannot apply {_describe(obj)}: {error}", skipped
            if obj["kind"] == "Deployment":
                deployment = applied
        for ref in desired.absent:
            try:
                await self.api.delete(_ref_path(ref))
                log.info("deleted %s %s: no longer needed", ref.kind, ref.name)
            except ApiError as error:
                if not error.not_found:
                    return deployment, f"cannot delete {ref.kind} {ref.name}: {error}", skipped
        return deployment, None, skipped

    async def _announce(
        self, meta: JSON, desired: Plan, before: JSON | None, after: JSON | None, skipped: list[str]
    ) -> None:
        """Events for what changed or needs a person; the recorder drops recent repeats."""
        config = desired.config
        if config.blocks_rollout:
            await self.post_event(meta, "Warning", config.reason, config.held_message(before is not None))
        elif config.state == "unverified":
            await self.post_event(meta, "Warning", config.reason, config.message)
        elif config.notes:
            listing = "\n".join(config.notes)
            await self.post_event(
                meta, "Warning", "ConfigWarnings", f"{config.message}, with warnings:\n{listing}"
            )
        for note in desired.notes:
            await self.post_event(meta, "Warning", "ManualRBACNeeded", note)
        for what in skipped:
            await self.post_event(meta, "Warning", "ManualRBACNeeded", _skipped_message(what, self.namespace))
        if after is None or desired.deployment is None:
            return
        if before is None:
            replicas = after["spec"]["replicas"]
            image = after["spec"]["template"]["spec"]["containers"][0]["image"]
            message = f"created Deployment {names.OPERAND} ({replicas} x {image})"
            await self.post_event(meta, "Normal", "DeploymentCreated", message)
            return
        changes = _rollout_causes(before, desired.deployment)
        if changes:
            await self.post_event(
                meta, "Normal", "RollingOut", "rolling out the scheduler: " + "; ".join(changes)
            )
        elif int(after["metadata"].get("generation") or 0) > int(before["metadata"].get("generation") or 0):
            await self.post_event(
                meta,
                "Normal",
                "DriftReverted",
                f"Deployment {names.OPERAND} was changed outside the operator; restored it "
                "(change the SecondaryScheduler instead)",
            )

    # -- facts -------------------------------------------------------------------------
    async def _facts(self, instance: Instance) -> ClusterFacts:
        """How many nodes count for HA, and which optional APIs the cluster serves."""
        matching = 0
        if instance.spec.highly_available:
            selector = ",".join(f"{key}={value}" for key, value in ha_node_selector(instance).items())
            params = {"labelSelector": selector} if selector else {}
            matching = len((await self.api.list_all("/api/v1/nodes", params))["items"])
        service_monitor = await self._serves(SERVICE_MONITOR_API, "servicemonitors")
        service_ca = await self._serves(names.API_VERSION, "servicecas")
        serving_cert = None
        if not service_ca:
            secret = await self._get(
                f"/api/v1/namespaces/{self.namespace}/secrets/{names.SERVING_CERT_SECRET}"
            )
            if secret is not None and not _self_signed(secret):
                log.debug(
                    "Secret %s is provided by someone else; leaving it alone", names.SERVING_CERT_SECRET
                )
            elif secret is not None and certs.reusable(secret.get("data"), self.namespace):
                serving_cert = certs.from_secret_data(secret["data"])
            else:
                serving_cert = certs.generate(self.namespace)
                await self.post_event(
                    {"name": instance.name, "namespace": instance.namespace, "uid": instance.uid},
                    "Normal",
                    "ServingCertCreated",
                    f"no service-ca in this cluster: created self-signed Secret {names.SERVING_CERT_SECRET} "
                    f"for Service {names.SERVICE} (valid {certs.VALIDITY.days} days, renewed automatically)",
                )
        return ClusterFacts(matching, service_monitor, service_ca, serving_cert)

    async def _serves(self, api_version: str, plural: str) -> bool:
        try:
            listing = await self.api.get(f"/apis/{api_version}")
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return any(resource.get("name") == plural for resource in listing.get("resources") or [])

    # -- removal -----------------------------------------------------------------------
    async def remove(self) -> list[str]:
        """Delete every object the operator manages here (Removed, or the CR is going away).

        Cluster-scoped bindings (and kube-system's) are deleted only if they bind this namespace's
        ServiceAccount, the serving-cert Secret only if we made it; a best-effort object the
        operator may not even read is skipped (it could not have created it either). Returns what
        was deleted."""
        deleted = []
        for ref in managed_refs(self.namespace):
            path = _ref_path(ref)
            try:
                current = await self.api.get(path)
                if not _ours(current, ref, self.namespace):
                    continue
                await self.api.delete(path, {"propagationPolicy": "Background"})
            except ApiError as error:
                if error.not_found:
                    continue
                if error.status == 403 and ref in BEST_EFFORT:
                    log.warning("cannot delete %s %s/%s: %s", ref.kind, ref.namespace, ref.name, error)
                    continue
                raise
            deleted.append(f"{ref.kind} {ref.name}")
        if deleted:
            log.info("deleted %s", ", ".join(deleted))
        return deleted

    async def post_event(self, meta: JSON, event_type: str, reason: str, message: str) -> None:
        """An Event on the CR whose metadata is ``meta``: `kubectl describe` is where people look."""
        regarding = ObjectReference(
            names.API_VERSION, names.KIND, str(meta["namespace"]), str(meta["name"]), str(meta.get("uid", ""))
        )
        await self.events.post(regarding, names.MANAGED_BY, event_type, reason, "Reconcile", message)

    async def cleanup(self, body: JSON) -> None:
        """The finalizer's work when the CR is deleted: nothing may be left behind."""
        async with self.lock:
            deleted = await self.remove()
            self.events.forget(str(body["metadata"].get("uid", "")))
            self.scheduler_config = None
            log.info("%s/%s deleted; cleaned up %d objects", self.namespace, self.instance_name, len(deleted))

    # -- status --------------------------------------------------------------------------
    async def _report_spec_error(self, body: JSON, error: SpecError) -> Result:
        meta = body["metadata"]
        message = "; ".join(error.problems)
        await self.post_event(meta, "Warning", "InvalidSpec", message)
        deployment = await self._get(self._deployment_path())
        outcome = Outcome(
            self.namespace,
            int(meta.get("generation") or 0),
            "Managed",
            spec_error=message,
            deployment=deployment,
        )
        await self._write_status(body, outcome)
        return Result(outcome)

    async def _write_status(self, body: JSON, outcome: Outcome) -> None:
        previous = body.get("status") or {}
        wanted = status_body(outcome, previous, datetime.datetime.now(datetime.UTC))
        if all(previous.get(key) == value for key, value in wanted.items()):
            return
        try:
            await self.api.patch(f"{self.cr_path}/status", {"status": wanted})
        except ApiError as error:
            if not error.not_found:  # the CR went away meanwhile: nothing to report on
                raise

    def _deployment_path(self) -> str:
        return resource_path("apps/v1", "deployments", self.namespace, names.OPERAND)


_UNMANAGED = "managementState is Unmanaged: the operator leaves the scheduler and its objects alone"
_REMOVED = "managementState is Removed: deleted the scheduler and its RBAC; the SecondaryScheduler stays"


def _self_signed(secret: JSON) -> bool:
    return (secret["metadata"].get("annotations") or {}).get(names.SELF_SIGNED_ANNOTATION) == "true"


def _skipped_message(what: str, namespace: str) -> str:
    return (
        f"the operator may not create {what} (its RBAC predates it: apply deploy/'s "
        f"03a_kube-system_role.yaml, or the CSV's clusterPermissions), so the scheduler cannot read "
        f"ConfigMap {names.AUTH_NAMESPACE}/extension-apiserver-authentication and accepts no client "
        f"certificates; or grant it yourself: `kubectl create rolebinding {names.AUTH_READER_BINDING} "
        f"-n {names.AUTH_NAMESPACE} --role={names.AUTH_READER_ROLE} "
        f"--serviceaccount={namespace}:{names.OPERAND}`"
    )


def _ours(current: JSON, ref: ObjectRef, namespace: str) -> bool:
    """Whether a managed name really is this instance's object (never delete someone else's)."""
    if ref.kind == "Secret":
        return _self_signed(current)
    if ref.kind == "ClusterRoleBinding" or (ref.kind == "RoleBinding" and ref.namespace != namespace):
        return any(subject.get("namespace") == namespace for subject in current.get("subjects") or [])
    if ref.kind == "ClusterRole":
        return (current["metadata"].get("labels") or {}).get(names.MANAGED_BY_KEY) == names.MANAGED_BY
    return True


def _template_annotations(deployment: JSON) -> dict[str, str]:
    template = (deployment.get("spec") or {}).get("template") or {}
    return dict((template.get("metadata") or {}).get("annotations") or {})


def _rollout_causes(before: JSON, desired: JSON) -> list[str]:
    """Why applying `desired` over `before` rolls the pods, in words."""
    old, new = _template_annotations(before), _template_annotations(desired)
    causes = []
    for key, value in new.items():
        if old.get(key) == value:
            continue
        if key.startswith(names.CONFIGMAP_ANNOTATION_PREFIX):
            name = key.removeprefix(names.CONFIGMAP_ANNOTATION_PREFIX)
            causes.append(f"ConfigMap {name} changed (resourceVersion {old.get(key, 'none')} -> {value})")
        elif key.startswith(names.GENERATION_ANNOTATION_PREFIX):
            causes.append(f"the SecondaryScheduler changed (generation {old.get(key, 'none')} -> {value})")
    return causes
