"""What a user sees on a pending pod besides Events (``scheduler.events``): the PodScheduled condition
and ``status.nominatedNodeName``, written as kube-scheduler writes them after a failed attempt
(one status patch carrying both).

kube-scheduler (1.34, without the SchedulerAsyncAPICalls gate) sends that patch from its
scheduling loop and waits for it, so failures can never outrun the API server. Ours sends it in
the background, and would: a burst of preemptions queued their status patches ahead of the
victims' evictions on the shared connections, the evictions took seconds, and preemptors
retried before their victims showed as terminating and preempted again. So the writer keeps at
most one pending patch per pod (a newer failure replaces what was not yet sent, as upstream's
asynchronous API dispatcher merges calls per object) and sends a few at a time, leaving the
other connections to bindings and evictions.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path

log = logging.getLogger(__name__)


UNSCHEDULABLE = "Unschedulable"
"""The pod fits nowhere (cluster-autoscaler reads this reason to add nodes)."""
SCHEDULER_ERROR = "SchedulerError"
"""Something failed that is not the pod's fault (an API error while binding, a plugin error)."""
STATUS_LANES = 4
"""Status patches in flight at once (of the client's 32 connections): enough to keep up with
failures at thousands of nodes, few enough that bindings and evictions never wait behind them."""


@dataclass
class _Pending:
    pod: PodInfo
    reason: str | None
    message: str
    nominated: str | None
    """A node, "" to clear the nomination, None to leave it."""


class PodStatusWriter:
    """Pending pods' scheduling status, patched in the background: newest wins, a few at a time."""

    def __init__(self, api: ApiClient, lanes: int = STATUS_LANES) -> None:
        self.api = api
        self.lanes = lanes
        self._pending: dict[str, _Pending] = {}
        """Pod UID -> what to write next (merged from every update since the last patch)."""
        self._order: deque[str] = deque()
        """UIDs waiting for a lane, oldest first; a UID is never in it twice."""
        self._in_flight: set[str] = set()
        self._workers: set[asyncio.Task[None]] = set()

    def update(
        self, pod: PodInfo, *, reason: str | None = None, message: str = "", nominated: str | None = None
    ) -> None:
        """Write PodScheduled=False with ``reason`` and ``message`` (if a reason is given) and the
        nomination (unless None), merged with whatever is still unsent for this pod."""
        if reason is None and nominated is None:
            return
        entry = self._pending.get(pod.uid)
        if entry is None:
            self._pending[pod.uid] = _Pending(pod, reason, message, nominated)
            if pod.uid not in self._in_flight:
                self._order.append(pod.uid)
        else:
            entry.pod = pod
            if reason is not None:
                entry.reason, entry.message = reason, message
            if nominated is not None:
                entry.nominated = nominated
        self._start_workers()

    def forget(self, uid: str) -> None:
        """Drop what is unsent for this pod: it is being bound, and a late PodScheduled=False would
        contradict the binding (upstream's dispatcher lets a binding call supersede a status patch)."""
        if self._pending.pop(uid, None) is not None and uid not in self._in_flight:
            self._order.remove(uid)

    @property
    def backlog(self) -> int:
        """Patches not yet sent (for tests and the debugging dump)."""
        return len(self._order)

    def abandon(self) -> None:
        """Stop the patches being sent now; what is unsent stays unsent (``close`` drops it)."""
        for task in self._workers:
            task.cancel()

    async def close(self, grace: float) -> None:
        """Send what is pending for up to ``grace`` seconds, then drop the rest."""
        if self._workers:
            await asyncio.wait(list(self._workers), timeout=grace)
        for task in list(self._workers):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _start_workers(self) -> None:
        while self._order and len(self._workers) < self.lanes:
            task = asyncio.get_running_loop().create_task(self._work(), name="pod-status-writer")
            self._workers.add(task)
            task.add_done_callback(self._workers.discard)

    async def _work(self) -> None:
        while self._order:
            uid = self._order.popleft()
            entry = self._pending.pop(uid)
            self._in_flight.add(uid)
            try:
                await self._send(entry)
            except Exception as error:  # one pod's failure must not stop the lane
                log.warning("could not update the status of pod %s: %s", entry.pod.key, error)
            finally:
                self._in_flight.discard(uid)
                if uid in self._pending:  # updated while its patch was on the way
                    self._order.append(uid)

    async def _send(self, entry: _Pending) -> None:
        status = status_patch(entry.pod, entry.reason, entry.message, entry.nominated)
        if not status:
            return
        path = resource_path("v1", "pods", entry.pod.namespace, entry.pod.name, "status")
        try:
            await self.api.patch(path, {"status": status}, patch_type="strategic")
        except ApiError as error:
            if not error.not_found:
                raise


def status_patch(pod: PodInfo, reason: str | None, message: str, nominated: str | None) -> dict[str, Any]:
    """The ``status`` part of the patch; empty when there is nothing new to say (updatePod).

    The condition is left out when the pod already shows it, as upstream compares; the
    nomination is written whenever given (the framework gives it only when it changed).
    """
    current = pod.obj.get("status") or {}
    patch: dict[str, Any] = {}
    if reason is not None and not _says(current, reason, message):
        patch["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        ]
    if nominated is not None:  # the framework said it changed: the pod's copy may predate our last patch
        patch["nominatedNodeName"] = nominated or None  # null removes the field
    return patch


def _says(status: dict[str, Any], reason: str, message: str) -> bool:
    return any(
        condition.get("type") == "PodScheduled"
        and condition.get("status") == "False"
        and condition.get("reason") == reason
        and condition.get("message") == message
        for condition in status.get("conditions") or ()
    )
