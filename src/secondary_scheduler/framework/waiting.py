"""Pods that a Permit plugin holds before binding, as kube-scheduler's waitingPodsMap.

A Permit plugin that answers Wait (with a timeout) parks the pod here. The pod stays
assumed on its node (its room is taken) while its binding cycle awaits ``WaitingPod.wait``.
The binding goes on only once every plugin that said Wait has allowed it; one rejection,
or one plugin's timeout, ends the wait with Unschedulable, and the runtime then unreserves
the pod and puts it back in the queue. Plugins (a gang's Permit, say) find waiting pods by
UID or iterate them to allow or reject whole groups.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from secondary_scheduler.config.base import format_go_duration
from secondary_scheduler.framework.status import SUCCESS, Status

if TYPE_CHECKING:
    from secondary_scheduler.framework.podinfo import PodInfo


class Timer(Protocol):
    def cancel(self) -> None: ...


CallLater = Callable[..., Timer]
"""``call_later(seconds, callback, *args)``: run ``callback(*args)`` that many seconds from now
(``asyncio``'s ``loop.call_later``; the replay's runs on its simulated clock)."""


class WaitingPod:
    def __init__(
        self,
        pod: PodInfo,
        node_name: str,
        timeouts: Mapping[str, float],
        call_later: CallLater | None = None,
    ) -> None:
        """``timeouts``: plugin -> seconds it may hold the pod, timed by ``call_later`` (the running
        event loop's by default). Needs a running event loop."""
        loop = asyncio.get_running_loop()
        start_timer = call_later if call_later is not None else loop.call_later
        self.pod = pod
        self.node_name = node_name
        self._result: asyncio.Future[Status] = loop.create_future()
        self._pending: dict[str, Timer] = {
            plugin: start_timer(seconds, self._timed_out, plugin, seconds)
            for plugin, seconds in timeouts.items()
        }

    @property
    def pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; it binds once no plugin is pending."""
        timer = self._pending.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._pending and not self._result.done():
            self._result.set_result(SUCCESS)

    def reject(self, plugin: str, message: str) -> bool:
        """End the wait: the pod is unreserved and requeued with ``message`` as its reason.

        Returns whether this call ended it (False: it was already allowed or rejected).
        """
        for timer in self._pending.values():
            timer.cancel()
        self._pending.clear()
        if self._result.done():
            return False
        self._result.set_result(Status.unschedulable(message).with_plugin(plugin))
        return True

    async def wait(self) -> Status:
        """Success once every plugin allowed; Unschedulable when one rejected or timed out."""
        return await asyncio.shield(self._result)

    def _timed_out(self, plugin: str, seconds: float) -> None:
        # Go prints the duration ("10s", "1m30s", "500ms") in kube-scheduler's message.
        waited = format_go_duration(seconds)
        self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")


class WaitingPods:
    """UID -> WaitingPod, for the runtime and for plugins through ``handle.waiting_pods``."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self.call_later: CallLater | None = None
        """What times the Permit timeouts (None: the running event loop); the replay sets its
        simulated clock's before the first pod waits."""

    def add(self, pod: PodInfo, node_name: str, timeouts: Mapping[str, float]) -> WaitingPod:
        waiting = WaitingPod(pod, node_name, timeouts, self.call_later)
        self._pods[pod.uid] = waiting
        return waiting

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
