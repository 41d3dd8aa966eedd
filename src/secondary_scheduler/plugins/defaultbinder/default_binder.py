"""Creates the pod's Binding with the ``binder`` coroutine the runtime put in the framework handle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import BindPlugin, CycleState
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SUCCESS, Status


class DefaultBinder(BindPlugin):
    name: ClassVar[str] = "DefaultBinder"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        binder = self.handle.binder
        if binder is None:
            return Status.error("DefaultBinder needs a binder in the framework handle")
        try:
            await binder(pod, node_name)
        except Exception as error:  # any API failure is the pod's bind error; the runtime retries it
            return Status.error(f"binding rejected: {error}")
        return SUCCESS
