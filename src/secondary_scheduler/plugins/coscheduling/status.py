"""PodGroup status, kept as scheduler-plugins' PodGroup controller keeps it.

Upstream runs this in its controller binary (``pkg/controllers/podgroup_controller.go``
of scheduler-plugins v0.34.7, deployed beside the scheduler), not in kube-scheduler: the
upstream scheduler binary alone leaves ``status`` empty. Here it is a service that the
Coscheduling plugin registers with the handle when it runs against a cluster, so it runs
exactly when the plugin is enabled.

Each reconcile of a PodGroup moves it one step, from the pods carrying its label:

- no phase -> ``Pending``;
- ``Pending`` -> ``Scheduling`` once the group has ``minMember`` pods (and ``occupiedBy``
  names their owners);
- otherwise the counters ``running``/``succeeded``/``failed`` are refreshed and the phase
  is ``Pending`` (fewer pods than minMember), ``Scheduling`` (fewer than minMember running
  or succeeded), ``Running`` (minMember running or succeeded), ``Failed`` (some failed and
  failed + running + succeeded reach minMember) or ``Finished`` (minMember succeeded);
- ``Finished`` and ``Failed`` are final.

Its own write brings the PodGroup back for the next step, until nothing changes. One
difference: upstream lists the labelled pods of every namespace (its List has no
namespace option), so same-named groups of two namespaces count each other's pods; here a
group counts the pods of its own namespace only, as the label's meaning says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.informers import Informer
from secondary_scheduler.kube.client import JSON, ApiClient, ApiError, resource_path
from secondary_scheduler.kube.reflector import Reflector
from secondary_scheduler.kube.store import object_key
from secondary_scheduler.plugins.coscheduling.podgroup import (
    FAILED,
    FINISHED,
    PENDING,
    POD_GROUP_LABEL,
    PODGROUPS,
    RUNNING,
    SCHEDULING,
    full_name,
    parse_time,
)

log = logging.getLogger(__name__)

SERVICE = "coscheduling/podgroup-status"
"""The controller's name in ``Handle.services``."""
GIVE_UP_SECONDS = 48 * 3600.0
"""Upstream stops reconciling a group whose scheduling started this long after its creation."""
RETRY_SECONDS = 1.0

_COUNTERS = ("running", "succeeded", "failed")


def pod_counts(pods: Iterable[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(running, succeeded, failed) by ``status.phase``."""
    running = succeeded = failed = 0
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            running += 1
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Failed":
            failed += 1
    return running, succeeded, failed


def occupied_by(pod: Mapping[str, Any]) -> str | None:
    """``namespace/owner`` of each owner of the pod, sorted and comma-joined (None without owners)."""
    metadata = pod.get("metadata") or {}
    owners = metadata.get("ownerReferences") or []
    if not owners:
        return None
    namespace = metadata.get("namespace", "")
    return ",".join(sorted(f"{namespace}/{owner.get('name', '')}" for owner in owners))


def next_status(podgroup: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> JSON | None:
    """The PodGroup's status after one reconcile, or None when it is left as it is."""
    status: JSON = dict(podgroup.get("status") or {})
    phase = status.get("phase") or ""
    if phase in (FINISHED, FAILED):
        return None
    running = int(status.get("running") or 0)
    if phase in (SCHEDULING, PENDING) and running == 0:
        created = parse_time((podgroup.get("metadata") or {}).get("creationTimestamp"))
        started = parse_time(status.get("scheduleStartTime"))
        if created is not None and started is not None and started - created > GIVE_UP_SECONDS:
            log.warning(
                "PodGroup %s: schedule time longer than 48 hours: not reconciled any more",
                object_key(dict(podgroup)),
            )
            return None
    min_member = int((podgroup.get("spec") or {}).get("minMember") or 0)
    if not phase:
        status["phase"] = PENDING
    elif phase == PENDING:
        if len(pods) >= min_member:
            status["phase"] = SCHEDULING
            if pods:
                owners = occupied_by(pods[0])
                if owners is not None:
                    status["occupiedBy"] = owners
    else:
        counts = dict(zip(_COUNTERS, pod_counts(pods), strict=True))
        for name, value in counts.items():
            status[name] = value
        if len(pods) < min_member:
            status["phase"] = PENDING
        else:
            if counts["succeeded"] + counts["running"] < min_member:
                status["phase"] = SCHEDULING
            if counts["succeeded"] + counts["running"] >= min_member:
                status["phase"] = RUNNING
            if counts["failed"] != 0 and sum(counts.values()) >= min_member:
                status["phase"] = FAILED
            if counts["succeeded"] >= min_member:
                status["phase"] = FINISHED
    return status


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> JSON:
    """A JSON merge patch from ``old`` to ``new`` status; zero counters are omitted, as Go's omitempty."""
    before, after = _omit_empty(old), _omit_empty(new)
    patch: JSON = {key: None for key in before if key not in after}
    patch.update({key: value for key, value in after.items() if before.get(key) != value})
    return patch


def _omit_empty(status: Mapping[str, Any]) -> JSON:
    return {
        key: value
        for key, value in status.items()
        if value is not None and not (key in _COUNTERS and value == 0)
    }


class PodGroupStatusController:
    """Reconciles PodGroups when they or their pods change (a handle service: ``start``/``stop``)."""

    def __init__(self, api: ApiClient, podgroups: Informer) -> None:
        self.api = api
        self.podgroups = podgroups
        self._pods: dict[str, dict[str, JSON]] = {}
        """Gang -> pod key -> pod, every phase (the scheduler's own pod watch skips finished pods)."""
        self._gang_of: dict[str, str] = {}
        self._dirty: dict[str, None] = {}
        self._written: dict[str, JSON] = {}
        """Gang -> the PodGroup as our last write returned it, until the watch brings it (or newer)."""
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        podgroups.add_listener(self._podgroup_changed)

    @classmethod
    def of(cls, handle: Handle) -> PodGroupStatusController:
        """The handle's controller, created and registered on first use (needs ``handle.client``)."""
        if SERVICE in handle.services:
            return handle.service(SERVICE, cls)
        if handle.client is None:
            raise ValueError("the PodGroup status controller needs an API client")
        controller = cls(handle.client, handle.informer(PODGROUPS))
        handle.register_service(SERVICE, controller)
        return controller

    # -- lifecycle (handle.Service) --------------------------------------------------------------
    async def start(self) -> None:
        """Watch the labelled pods (all phases), then reconcile every PodGroup once."""
        reflector = Reflector(
            self.api,
            "/api/v1/pods",
            self,
            params={"labelSelector": POD_GROUP_LABEL},
            name="podgroup-pods",
        )
        self._tasks.append(asyncio.create_task(reflector.run(), name="podgroup-pods"))
        await reflector.synced.wait()
        for podgroup in self.podgroups:
            self._mark(object_key(podgroup))
        self._tasks.append(asyncio.create_task(self._work(), name="podgroup-status"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    # -- what changes (the pod reflector's handler and the PodGroup informer's listener) ----------
    def replace(self, items: list[JSON]) -> None:
        listed = {object_key(item) for item in items}
        for key in [key for key in self._gang_of if key not in listed]:
            self.event("DELETED", {"metadata": _meta_of(key)})
        for item in items:
            self.event("MODIFIED", item)

    def event(self, kind: str, obj: JSON) -> None:
        key = object_key(obj)
        previous = self._gang_of.pop(key, None)
        if previous is not None:
            self._pods[previous].pop(key, None)
            if not self._pods[previous]:
                del self._pods[previous]
            self._mark(previous)
        if kind == "DELETED":
            return
        metadata = obj.get("metadata") or {}
        gang = full_name(
            str(metadata.get("namespace", "")), str((metadata.get("labels") or {}).get(POD_GROUP_LABEL, ""))
        )
        if not gang:
            return
        self._pods.setdefault(gang, {})[key] = obj
        self._gang_of[key] = gang
        self._mark(gang)

    def _podgroup_changed(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if new is not None:
            self._mark(object_key(new))

    def _mark(self, gang: str) -> None:
        self._dirty[gang] = None
        self._wake.set()

    # -- reconciling ---------------------------------------------------------------------------
    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._dirty:
                gang = next(iter(self._dirty))
                del self._dirty[gang]
                try:
                    await self.reconcile(gang)
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    log.warning("PodGroup %s: status update failed: %s; retrying", gang, error)
                    await asyncio.sleep(RETRY_SECONDS)
                    self._mark(gang)

    async def reconcile(self, gang: str) -> None:
        """One step of the PodGroup's status (see the module docstring); requeued after a write."""
        namespace, _, name = gang.partition("/")
        podgroup = self._latest(gang, self.podgroups.get(name, namespace))
        if podgroup is None:
            return
        pods = sorted(self._pods.get(gang, {}).values(), key=lambda pod: str(pod["metadata"].get("name")))
        new = next_status(podgroup, pods)
        if new is None:
            return
        patch = status_patch(podgroup.get("status") or {}, new)
        if not patch:
            return
        path = resource_path(PODGROUPS.api_version, PODGROUPS.plural, namespace, name, "status")
        try:
            written = await self.api.patch(path, {"status": patch})
        except ApiError as error:
            if error.not_found:
                return
            raise
        # Not assumed into the informer: upstream runs this controller in its own process, so
        # the scheduler hears each write as a PodGroup update, on which Coscheduling retries
        # the pods it rejected (its events: PodGroup Add/Update). An assumed version's watch
        # event would be dropped as old news; the next step reads our copy until it arrives.
        self._written[gang] = written
        self._mark(gang)

    def _latest(self, gang: str, cached: KubeObject | None) -> KubeObject | None:
        """The informer's PodGroup, or the one we wrote last if the watch has not brought it yet."""
        written = self._written.get(gang)
        if cached is None or written is None:
            self._written.pop(gang, None)
            return cached
        if _resource_version(written) > _resource_version(cached):
            return written
        del self._written[gang]
        return cached


def _resource_version(obj: Mapping[str, Any]) -> int:
    """The object's resourceVersion as a number (-1 when it is not one: trust the informer)."""
    try:
        return int(str((obj.get("metadata") or {}).get("resourceVersion")))
    except ValueError:
        return -1


def _meta_of(key: str) -> JSON:
    namespace, _, name = key.rpartition("/")
    return {"namespace": namespace, "name": name} if namespace else {"name": name}
