"""Posts the pod's Binding (pods/binding) through the framework handle's API client.

As kube-scheduler's DefaultBinder does through its clientset, with one addition: a Binding
refused with a conflict may be our own retried request whose first attempt got through, so
the pod is read back and, if it is bound to that very node, the binding counts as done.
In memory (``secsched score``, a replay) the handle's client is whatever applies Bindings
there; without one the plugin fails the binding with an error saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import BindPlugin, CycleState
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path


class DefaultBinder(BindPlugin):
    name: ClassVar[str] = "DefaultBinder"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        client = self.handle.client
        if client is None:
            return Status.error("DefaultBinder needs an API client in the framework handle")
        try:
            await _post_binding(client, pod, node_name)
        except ApiError as error:  # the API server's own words, as client-go's error string
            return Status.error(error.message or str(error))
        except Exception as error:  # any other failure is the pod's bind error; the runtime retries it
            return Status.error(str(error) or type(error).__name__)
        return SUCCESS


async def _post_binding(client: ApiClient, pod: PodInfo, node: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        await client.create(resource_path("v1", "pods", pod.namespace, pod.name, "binding"), body)
    except ApiError as error:
        if error.conflict and await _bound_to(client, pod, node):
            return
        raise


async def _bound_to(client: ApiClient, pod: PodInfo, node: str) -> bool:
    try:
        current = await client.get(resource_path("v1", "pods", pod.namespace, pod.name))
    except ApiError:
        return False
    return bool((current.get("spec") or {}).get("nodeName") == node)
