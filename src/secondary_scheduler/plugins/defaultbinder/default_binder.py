"""Creates the pod's Binding with the ``binder`` coroutine the runtime put in the framework handle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import BindPlugin, CycleState
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.kube.client import ApiError


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
        except ApiError as error:  # the API server's own words, as client-go's error string
            return Status.error(error.message or str(error))
        except Exception as error:  # any other failure is the pod's bind error; the runtime retries it
            return Status.error(str(error) or type(error).__name__)
        return SUCCESS
