"""What a user sees on the pod: Events and the PodScheduled condition, as kube-scheduler writes them.

Events go through their own client and rate limiter (as kube-scheduler's event broadcaster
does), from a bounded buffer: a burst of events never slows binding, and if the API server
cannot keep up the oldest news is dropped with a log line rather than memory growing.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import socket
import uuid
from typing import Any

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path

log = logging.getLogger(__name__)


def _micro_time() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRecorder:
    def __init__(self, api: ApiClient, buffer: int = 10000) -> None:
        self.api = api
        self.hostname = socket.gethostname()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=buffer)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="event-recorder")

    async def stop(self, drain_seconds: float = 2.0) -> None:
        """Send what is buffered (for at most `drain_seconds`), then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), drain_seconds)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def record(
        self, pod: PodInfo, scheduler_name: str, event_type: str, reason: str, action: str, note: str
    ) -> None:
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{pod.name}.{uuid.uuid4().hex[:16]}", "namespace": pod.namespace},
            "eventTime": _micro_time(),
            "reportingController": scheduler_name,
            "reportingInstance": f"{scheduler_name}-{self.hostname}",
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": note[:1024],
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
            },
        }
        try:
            self._queue.put_nowait(body)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 1000 == 1:
                log.warning("event buffer full: dropped %d events so far", self.dropped)

    def scheduled(self, pod: PodInfo, scheduler_name: str, node: str) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self.record(pod, scheduler_name, "Normal", "Scheduled", "Binding", note)

    def failed(self, pod: PodInfo, scheduler_name: str, message: str) -> None:
        self.record(pod, scheduler_name, "Warning", "FailedScheduling", "Scheduling", message)

    async def _run(self) -> None:
        while True:
            body = await self._queue.get()
            try:
                path = resource_path("events.k8s.io/v1", "events", body["metadata"]["namespace"])
                await self.api.create(path, body)
            except (ApiError, OSError) as error:
                log.debug("could not record event %s: %s", body["reason"], error)
            except Exception:
                log.exception("unexpected error recording an event")
            finally:
                self._queue.task_done()


UNSCHEDULABLE = "Unschedulable"
"""The pod fits nowhere (cluster-autoscaler reads this reason to add nodes)."""
SCHEDULER_ERROR = "SchedulerError"
"""Something failed that is not the pod's fault (an API error while binding, a plugin error)."""


async def set_unschedulable_condition(
    api: ApiClient, pod: PodInfo, message: str, reason: str = UNSCHEDULABLE
) -> None:
    """PodScheduled=False with ``reason``: skipped when the pod already says exactly that."""
    for condition in (pod.obj.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == reason
            and condition.get("message") == message
        ):
            return
    patch = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ]
        }
    }
    path = resource_path("v1", "pods", pod.namespace, pod.name, "status")
    try:
        await api.patch(path, patch, patch_type="strategic")
    except ApiError as error:
        if not error.not_found:
            log.warning("could not update the status of pod %s: %s", pod.key, error)
