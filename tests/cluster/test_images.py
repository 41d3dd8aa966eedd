"""The images of `make images`, run with runc exactly as their Deployments run them.

The scheduler image runs the Deployment that `secsched operator render` makes for a CR: its
command and args, read-only root, the image's UID 65532, no capabilities, no privilege
escalation, the ConfigMap's config.yaml, the serving certificate, /tmp as tmpfs and a token
of the `secondary-scheduler` ServiceAccount, after the RBAC the operator renders is applied;
it must answer its HTTPS /healthz probe and schedule a pod. The operator image runs deploy/'s
Deployment with its own ServiceAccount and must reconcile the `cluster` CR. The only change
to either pod template: the container shares the host's network (so the local apiserver on
127.0.0.1 is reachable), hence a free port instead of the fixed one.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from secondary_scheduler.kube.client import ApiClient, ApiError, plural_of, resource_path
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.operator import names
from secsched_devtools.cluster import images, runc
from secsched_devtools.cluster.localcluster import LocalCluster, free_port
from secsched_devtools.demo.operatorflow import cr_conditions, install, service_account_token
from tests.cluster.schedulerproc import pod_manifest, wait_all_bound

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
NS = names.DEFAULT_NAMESPACE
MANAGER = "test-images"
CR_PATH = resource_path(names.API_VERSION, names.PLURAL, NS, names.INSTANCE_NAME)
LEASE_PATH = resource_path("coordination.k8s.io/v1", "leases", NS, names.OPERAND)


def scheduler_config(prometheus_url: str) -> str:
    """A load-aware profile (TargetLoadPacking on the local Prometheus), as the README's example."""
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "secondary-scheduler",
                    "plugins": {"score": {"enabled": [{"name": "TargetLoadPacking"}]}},
                    "pluginConfig": [
                        {
                            "name": "TargetLoadPacking",
                            "args": {
                                "targetUtilization": 70,
                                "metricProvider": {"type": "Prometheus", "address": prometheus_url},
                            },
                        }
                    ],
                }
            ],
        },
        sort_keys=False,
    )


@pytest.fixture(scope="module")
def built() -> dict[str, images.BuiltImage]:
    """Both images, from the cache when `make images` ran first (then no step is repeated)."""
    found = images.build(["scheduler", "operator"], images.BuildOptions())
    return {image.spec.name: image for image in found}


@pytest.fixture
def unpacked(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "image"
    yield directory
    runc.remove_tree(directory)


def render(tmp_path: Path, configmap: dict[str, Any]) -> list[dict[str, Any]]:
    """`secsched operator render` for deploy/'s CR (no service-ca here: it renders the serving cert)."""
    cm_file = tmp_path / "configmap.yaml"
    cm_file.write_text(yaml.safe_dump(configmap))
    done = subprocess.run(
        [
            *(sys.executable, "-m", "secondary_scheduler.cli", "operator", "render", "--no-service-ca"),
            f"--cr={REPO / 'deploy/07_secondary-scheduler-operator.cr.yaml'}",
            f"--configmap={cm_file}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def object_path(obj: dict[str, Any]) -> str:
    metadata = obj["metadata"]
    kind = plural_of(obj["kind"])
    return resource_path(obj["apiVersion"], kind, metadata.get("namespace"), metadata["name"])


async def delete_quietly(api: ApiClient, path: str) -> None:
    try:
        await api.delete(path)
    except ApiError as error:
        if not error.not_found:
            raise


async def ensure_namespace(api: ApiClient, name: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await api.apply(namespace, MANAGER)


def service_account_files(directory: Path, token: str, cluster: LocalCluster, namespace: str) -> Path:
    """What the kubelet projects at /var/run/secrets/kubernetes.io/serviceaccount."""
    ca = cluster.pki.ca_cert.read_text()
    return runc.write_files(directory, {"token": token, "ca.crt": ca, "namespace": namespace})


def kubernetes_env(cluster: LocalCluster) -> dict[str, str]:
    api = urlparse(cluster.api_url)
    assert api.hostname and api.port
    return {"KUBERNETES_SERVICE_HOST": api.hostname, "KUBERNETES_SERVICE_PORT": str(api.port)}


def probe(url: str) -> int | None:
    """An HTTP(S) GET as the kubelet's probe makes it (no certificate check); the status or None."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as answer:
            return int(answer.status)
    except OSError:
        return None


async def wait_probe(container: runc.Container, url: str, timeout: float = 120) -> None:
    async def healthy() -> bool:
        if container.process.poll() is not None:
            code = container.process.returncode
            raise AssertionError(f"the container exited ({code}):\n{container.output()}")
        return await asyncio.to_thread(probe, url) == 200

    try:
        await wait_for(healthy, f"{url} to answer 200", timeout=timeout, interval=1)
    except TimeoutError as error:
        raise AssertionError(f"{error}\ncontainer output:\n{container.output()}") from error


def process_status(container: runc.Container) -> dict[str, str]:
    """/proc/PID/status of the container's first process, read from the host."""
    state = subprocess.run(
        ["runc", f"--root={runc.RUNC_ROOT}", "state", container.id],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = yaml.safe_load(state.stdout)["pid"]
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def with_port(container: dict[str, Any], flag: str, port: int) -> dict[str, Any]:
    """The container with ``flag`` given ``port`` (host network: the fixed port may be taken)."""
    args = [arg for arg in container.get("args") or [] if not arg.startswith(f"{flag}=")]
    return {**container, "args": [*args, f"{flag}={port}"]}


async def test_the_scheduler_image_runs_as_the_operators_deployment(
    cluster: LocalCluster, api: ApiClient, namespace: str, built: dict[str, images.BuiltImage],
    tmp_path: Path, unpacked: Path,
) -> None:  # fmt: skip
    config = scheduler_config(cluster.prometheus_url)
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "secondary-scheduler-config", "namespace": NS},
        "data": {names.CONFIG_KEY: config},
    }
    objects = render(tmp_path, configmap)
    deployment = next(obj for obj in objects if obj["kind"] == "Deployment")
    secret = next(obj for obj in objects if obj["kind"] == "Secret")
    applied = [configmap, *(obj for obj in objects if obj["kind"] != "Deployment")]
    await ensure_namespace(api, NS)
    await delete_quietly(api, LEASE_PATH)
    try:
        for obj in applied:  # the RBAC, ServiceAccount and Secret the operator would create
            await api.apply(obj, MANAGER)
        pod_spec = deployment["spec"]["template"]["spec"]
        container = pod_spec["containers"][0]
        assert container["command"] == ["/bin/kube-scheduler"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        volume_of = {volume["name"]: volume for volume in pod_spec["volumes"]}
        files = {
            name: runc.write_files(tmp_path / "volumes" / name, {names.CONFIG_KEY: config})
            if "configMap" in volume
            else runc.write_files(
                tmp_path / "volumes" / name,
                {key: base64.b64decode(value) for key, value in secret["data"].items()},
            )
            for name, volume in volume_of.items()
            if "configMap" in volume or "secret" in volume
        }
        token = await service_account_token(api, NS, pod_spec["serviceAccountName"])
        context = runc.PodContext(
            namespace=NS,
            volumes=files,
            service_account=service_account_files(tmp_path / "sa", token, cluster, NS),
            env=kubernetes_env(cluster),
        )
        image = runc.unpack(built["secsched-scheduler"].archive, unpacked)
        port = free_port()
        spec = runc.runtime_spec(pod_spec, with_port(container, "--secure-port", port), image, context)
        assert spec["process"]["args"][0] == "/bin/kube-scheduler"
        with runc.running(tmp_path / "bundle", spec, "secsched-scheduler") as running:
            readiness = container["readinessProbe"]["httpGet"]
            url = f"{readiness['scheme'].lower()}://127.0.0.1:{port}{readiness['path']}"
            await wait_probe(running, url)
            status = process_status(running)
            assert status["Uid"].split()[:2] == ["65532", "65532"], status["Uid"]
            assert status["CapEff"] == "0000000000000000" and status["CapPrm"] == "0000000000000000"
            assert status["NoNewPrivs"] == "1"
            await api.create(f"/api/v1/namespaces/{namespace}/pods", pod_manifest("imaged-0"))
            pods = await wait_all_bound(api, namespace, 1, timeout=90)
            assert pods[0]["spec"]["nodeName"].startswith("kwok-node-"), running.output()
            assert running.process.poll() is None, running.output()
        assert running.id not in runc.leftover_containers()
    finally:
        for obj in reversed(applied):
            await delete_quietly(api, object_path(obj))
        await delete_quietly(api, LEASE_PATH)


async def test_the_operator_image_reconciles_with_its_own_service_account(
    cluster: LocalCluster, api: ApiClient, built: dict[str, images.BuiltImage], tmp_path: Path, unpacked: Path
) -> None:
    await install(api, REPO / "deploy", scheduler_config(cluster.prometheus_url))
    deployment = yaml.safe_load((REPO / "deploy/05_deployment.yaml").read_text())
    pod_spec = deployment["spec"]["template"]["spec"]
    container = pod_spec["containers"][0]
    port = free_port()
    container = {**container, "args": [f"--liveness=http://0.0.0.0:{port}/healthz"]}
    token = await service_account_token(api, NS, pod_spec["serviceAccountName"])
    context = runc.PodContext(
        namespace=NS,
        service_account=service_account_files(tmp_path / "sa", token, cluster, NS),
        env=kubernetes_env(cluster),
    )
    image = runc.unpack(built["secsched-operator"].archive, unpacked)
    spec = runc.runtime_spec(pod_spec, container, image, context)
    assert spec["process"]["args"][:3] == ["secsched", "operator", "run"]
    try:
        with runc.running(tmp_path / "bundle", spec, "secsched-operator") as running:
            try:
                await wait_probe(running, f"http://127.0.0.1:{port}/healthz")
                status = process_status(running)
                assert status["Uid"].split()[:2] == ["65532", "65532"] and status["NoNewPrivs"] == "1"
                conditions = await cr_conditions(api, timeout=90)
                available = next((c for c in conditions if c["type"] == "Available"), {})
                assert available.get("status") == "True", f"{conditions}\n{running.output()}"
                operand = await api.get(resource_path("apps/v1", "deployments", NS, names.OPERAND))
                cr = await api.get(CR_PATH)
                scheduler = operand["spec"]["template"]["spec"]["containers"][0]
                assert scheduler["image"] == cr["spec"]["schedulerImage"]
            finally:  # delete the CR while the operator runs, so it removes its finalizer
                await delete_quietly(api, CR_PATH)
                await wait_for(lambda: _gone(api, CR_PATH), "the CR to be finalized", timeout=60)
    finally:
        if not await _gone(api, CR_PATH):  # the operator is gone: release the CR ourselves
            await api.patch(CR_PATH, {"metadata": {"finalizers": None}})
            await delete_quietly(api, CR_PATH)
        await delete_quietly(api, LEASE_PATH)


async def _gone(api: ApiClient, path: str) -> bool:
    try:
        await api.get(path)
    except ApiError as error:
        if error.not_found:
            return True
        raise
    return False
