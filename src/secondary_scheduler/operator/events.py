"""Events on the CR, through our API client (kopf's own event posting is switched off).

`kubectl describe secondaryscheduler cluster` is where people look first; each event says
what the operator did or what blocks it. Identical events are not repeated while the
previous one is recent, so a periodic resync does not flood the namespace.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.operator import names

log = logging.getLogger(__name__)

REPEAT_AFTER = 600.0
MAX_MESSAGE = 1024


class EventRecorder:
    def __init__(self, api: ApiClient, component: str = names.MANAGED_BY) -> None:
        self.api = api
        self.component = component
        self._sent: dict[tuple[str, str, str, str], float] = {}

    async def emit(self, meta: Mapping[str, Any], kind: str, reason: str, message: str) -> None:
        """Post a Normal or Warning event on the CR whose metadata is `meta`; never raises."""
        name, namespace, uid = str(meta["name"]), str(meta["namespace"]), str(meta.get("uid", ""))
        key = (uid, kind, reason, message)
        now = time.monotonic()
        if now - self._sent.get(key, -REPEAT_AFTER) < REPEAT_AFTER:
            return
        self._sent[key] = now
        log_level = logging.WARNING if kind == "Warning" else logging.INFO
        log.log(log_level, "%s/%s: %s: %s", namespace, name, reason, message)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": names.API_VERSION,
                "kind": names.KIND,
                "name": name,
                "namespace": namespace,
                "uid": uid,
            },
            "reason": reason,
            "message": message[:MAX_MESSAGE],
            "type": kind,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            await self.api.create(f"/api/v1/namespaces/{namespace}/events", event)
        except ApiError as error:
            log.warning("could not post event %s on %s/%s: %s", reason, namespace, name, error)

    def forget(self, uid: str) -> None:
        """Drop the memory of a deleted CR's events."""
        self._sent = {key: at for key, at in self._sent.items() if key[0] != uid}
