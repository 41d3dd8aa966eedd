"""Reconciler against an in-memory API: what it applies, skips and deletes."""

from __future__ import annotations

from typing import Any, cast

import pytest
from tests.unit.operator.opbuilders import NAMESPACE, render

from secondary_scheduler.kube.client import ApiClient, ApiError, plural_of, resource_path
from secondary_scheduler.kube.events.core import CoreEventRecorder
from secondary_scheduler.operator import names
from secondary_scheduler.operator.reconcile import Reconciler

AUTH_READER_PATH = (
    f"/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/{names.AUTH_READER_BINDING}"
)


class MemoryApi:
    """apply/get/delete by path; `forbidden` paths answer 403 to every verb."""

    def __init__(self, forbidden: set[str] | None = None) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.forbidden = forbidden or set()

    @staticmethod
    def path_of(obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return resource_path(obj["apiVersion"], plural_of(obj["kind"]), meta.get("namespace"), meta["name"])

    def _check(self, path: str) -> None:
        if path in self.forbidden:
            raise ApiError(403, "Forbidden", f"{path} is forbidden")

    async def apply(self, obj: dict[str, Any], manager: str) -> dict[str, Any]:
        path = self.path_of(obj)
        self._check(path)
        applied = {**obj, "metadata": {**obj["metadata"], "generation": 1}}
        self.objects[path] = applied
        return applied

    async def get(self, path: str) -> dict[str, Any]:
        self._check(path)
        if path not in self.objects:
            raise ApiError(404, "NotFound", f"{path} not found")
        return self.objects[path]

    async def delete(self, path: str, params: dict[str, Any] | None = None) -> None:
        self._check(path)
        if self.objects.pop(path, None) is None:
            raise ApiError(404, "NotFound", f"{path} not found")


def reconciler(api: MemoryApi) -> Reconciler:
    client = cast(ApiClient, api)
    return Reconciler(client, NAMESPACE, events=CoreEventRecorder(client))


async def test_the_auth_reader_binding_is_applied_before_the_deployment() -> None:
    api = MemoryApi()
    deployment, failure, skipped = await reconciler(api)._apply(render(), None)
    assert failure is None and skipped == [] and deployment is not None
    paths = list(api.objects)
    assert paths.index(AUTH_READER_PATH) < paths.index(
        f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{names.OPERAND}"
    )


async def test_a_forbidden_auth_reader_binding_does_not_hold_the_scheduler_back() -> None:
    """An operator whose RBAC predates the binding (or the Helm chart's operator) still deploys."""
    api = MemoryApi(forbidden={AUTH_READER_PATH})
    deployment, failure, skipped = await reconciler(api)._apply(render(), None)
    assert failure is None and deployment is not None
    assert skipped == [f"RoleBinding kube-system/{names.AUTH_READER_BINDING}"]


async def test_other_forbidden_objects_still_stop_the_rollout() -> None:
    crb = f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{names.CRB_KUBE_SCHEDULER}"
    api = MemoryApi(forbidden={crb})
    deployment, failure, _ = await reconciler(api)._apply(render(), None)
    assert deployment is None
    assert failure is not None and names.CRB_KUBE_SCHEDULER in failure


@pytest.mark.parametrize(("subject_namespace", "deleted"), [(NAMESPACE, True), ("someone-else", False)])
async def test_removal_deletes_the_auth_reader_binding_only_if_it_binds_our_account(
    subject_namespace: str, deleted: bool
) -> None:
    api = MemoryApi()
    await reconciler(api)._apply(render(), None)
    binding = api.objects[AUTH_READER_PATH]
    binding["subjects"] = [{**binding["subjects"][0], "namespace": subject_namespace}]
    removed = await reconciler(api).remove()
    assert (f"RoleBinding {names.AUTH_READER_BINDING}" in removed) is deleted
    assert (AUTH_READER_PATH in api.objects) is not deleted
    # Everything else of ours is gone either way.
    assert set(api.objects) <= {AUTH_READER_PATH}


async def test_removal_goes_on_when_the_operator_may_not_touch_kube_system() -> None:
    """The finalizer must not hang on the binding an operator without deploy/03a never made."""
    api = MemoryApi(forbidden={AUTH_READER_PATH})
    await reconciler(api)._apply(render(), None)
    removed = await reconciler(api).remove()
    assert f"Deployment {names.OPERAND}" in removed
    assert api.objects == {}


async def test_skipped_objects_become_a_warning_event_with_the_command() -> None:
    api = MemoryApi(forbidden={AUTH_READER_PATH})
    subject = reconciler(api)
    posted: list[tuple[str, str, str]] = []

    async def post_event(meta: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        posted.append((event_type, reason, message))

    subject.post_event = post_event  # type: ignore[method-assign]
    desired = render()
    deployment, _, skipped = await subject._apply(desired, None)
    await subject._announce({"name": "cluster", "namespace": NAMESPACE}, desired, None, deployment, skipped)
    warnings = [(kind, message) for kind, reason, message in posted if reason == "ManualRBACNeeded"]
    assert [kind for kind, _ in warnings] == ["Warning"]
    assert (
        f"kubectl create rolebinding {names.AUTH_READER_BINDING} -n kube-system "
        f"--role=extension-apiserver-authentication-reader --serviceaccount={NAMESPACE}:secondary-scheduler"
    ) in warnings[0][1]
