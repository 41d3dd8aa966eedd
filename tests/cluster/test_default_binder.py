"""DefaultBinder against the real kube-apiserver: it posts the pod's Binding through the framework
handle's client; a conflict on a pod already bound to that very node (our own retried request
whose first attempt got through) counts as bound; a pod bound elsewhere is a bind error."""

from __future__ import annotations

from secondary_scheduler.framework import CycleState, Handle, PodInfo
from secondary_scheduler.kube.client import ApiClient, resource_path
from secondary_scheduler.plugins.defaultbinder import DefaultBinder


async def test_default_binder_posts_the_binding_and_takes_a_retry_as_done(
    api: ApiClient, namespace: str
) -> None:
    nodes = [node["metadata"]["name"] for node in (await api.list_all("/api/v1/nodes"))["items"]]
    first, second = nodes[:2]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bound-once", "namespace": namespace},
        "spec": {
            "schedulerName": "nobody",  # no scheduler of the test cluster takes it first
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    created = PodInfo.from_pod(await api.create(resource_path("v1", "pods", namespace), pod))
    binder = DefaultBinder.build(None, Handle(client=api))
    assert (await binder.bind(CycleState(), created, first)).is_success
    bound = await api.get(resource_path("v1", "pods", namespace, "bound-once"))
    assert bound["spec"]["nodeName"] == first
    assert (await binder.bind(CycleState(), created, first)).is_success  # the retry: already ours
    elsewhere = await binder.bind(CycleState(), created, second)
    assert not elsewhere.is_success and "already assigned to node" in elsewhere.message, elsewhere
