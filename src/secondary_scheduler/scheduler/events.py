"""What a user sees on the pod besides Events (``kube.events``): the PodScheduled condition,
as kube-scheduler writes it."""

from __future__ import annotations

import datetime
import logging

from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path

log = logging.getLogger(__name__)


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
