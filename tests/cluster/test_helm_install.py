"""The chart installed on the real local cluster, and our scheduler run as its Deployment would.

The local cluster runs no containers (KWOK fakes the pods), so the test renders the chart with
the real helm, applies every object it renders (CRDs included) with server-side apply, then
starts `secsched scheduler` itself with the Deployment's args (file paths rewritten to where
the test wrote the ConfigMap's config and the serving-cert Secret), authenticated by a
TokenRequest token of the chart's ServiceAccount alone. A pod bound by it proves that the
chart's RBAC (system:kube-scheduler, system:volume-scheduler, the auth reader in kube-system)
and its config are enough.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError, plural_of, resource_path
from secondary_scheduler.kube.manifests import apply_manifests
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.kubeconfigs import write_token_kubeconfig
from secsched_devtools.cluster.localcluster import LocalCluster, free_port
from secsched_devtools.cluster.schedulers import OURS, launch, ours_command
from tests.cluster.helmchart import helm_binary, one, render

pytestmark = pytest.mark.cluster


def _path(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return resource_path(obj["apiVersion"], plural_of(obj["kind"]), meta.get("namespace"), meta["name"])


@pytest.mark.parametrize("replicas", [1, 2], ids=["one-replica", "leader-elected"])
async def test_the_charts_scheduler_schedules_a_pod_with_only_the_charts_rbac(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path, replicas: int
) -> None:
    """With 2 replicas the args turn leader election on: the chart's lease Role must suffice."""
    name = f"helm-{uuid.uuid4().hex[:8]}"
    values = {
        "fullnameOverride": name,
        "scheduler": {"replicas": replicas, "profiles": [{"schedulerName": name}]},
    }
    objects = render(helm_binary(), tmp_path / "helm", values, release=name, namespace=namespace)
    applied = await apply_manifests(api, objects, field_manager="helm")
    assert f"Deployment/{name}" in applied
    # Cluster-scoped and kube-system objects outlive the namespace: delete them ourselves.
    outside = [obj for obj in objects if obj["metadata"].get("namespace") in (None, "kube-system")]
    outside = [obj for obj in outside if obj["kind"] != "CustomResourceDefinition"]
    try:
        await _schedule_with_the_chart(cluster, api, namespace, name, objects, tmp_path)
    finally:
        for obj in outside:
            try:
                await api.delete(_path(obj))
            except ApiError as error:
                if not error.not_found:
                    raise


async def _schedule_with_the_chart(
    cluster: LocalCluster,
    api: ApiClient,
    namespace: str,
    name: str,
    objects: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    deployment = one(objects, "Deployment", name)
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    # What the pod would see in its volumes, read back from the cluster (not from the render).
    configmap = await api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}-config")
    (tmp_path / "config.yaml").write_text(configmap["data"]["config.yaml"])
    secret = await api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}-serving-cert")
    for key in ("tls.crt", "tls.key"):
        (tmp_path / key).write_bytes(base64.b64decode(secret["data"][key]))
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    token = await api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request)
    kubeconfig = write_token_kubeconfig(
        tmp_path / "kubeconfig", cluster.api_url, cluster.pki.ca_cert, token["status"]["token"]
    )
    mounts = {"/etc/kubernetes/": f"{tmp_path}/", "/certs-dir/": f"{tmp_path}/"}
    args = []
    for arg in main["args"]:
        for mounted, local in mounts.items():
            arg = arg.replace(mounted, local)
        args.append(arg)
    assert main["command"] == ["/bin/kube-scheduler"]  # which our image wraps as `secsched scheduler`
    port = free_port()
    argv = [
        *ours_command(),
        *args,
        f"--kubeconfig={kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
    ]
    with launch(OURS, argv, tmp_path / "scheduler.log", port) as run:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "placed-by-the-chart"},
            "spec": {
                "schedulerName": name,
                "containers": [
                    {
                        "name": "app",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
            },
        }
        await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)

        async def bound() -> str | None:
            assert run.process.poll() is None, f"the scheduler exited:\n{run.tail(60)}"
            current = await api.get(f"/api/v1/namespaces/{namespace}/pods/placed-by-the-chart")
            return current["spec"].get("nodeName")

        try:
            node = await wait_for(bound, "the chart's scheduler to bind the pod", timeout=120, interval=0.5)
        except TimeoutError as error:
            raise AssertionError(f"{error}\nscheduler log:\n{run.tail(60)}") from error
        assert node.startswith("kwok-node-")
        assert run.get("/healthz").status_code == 200
        if "--leader-elect=true" in args:
            lease = await api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
            assert lease["spec"].get("holderIdentity"), "the scheduler holds the chart's lease"
        log = run.log.read_text(errors="replace")
        assert "forbidden" not in log.lower(), f"the chart's RBAC fell short:\n{run.tail(60)}"
