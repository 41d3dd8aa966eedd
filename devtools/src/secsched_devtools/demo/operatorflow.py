"""Install the scheduler the way users do: deploy/, the seed's ConfigMap, the `cluster` CR, the operator.

Then run our scheduler exactly as the Deployment the operator made would run it: its
command-line arguments, the ConfigMap's config.yaml, the serving certificate Secret, and
a token of the `secondary-scheduler` ServiceAccount, so it has only the RBAC the operator
created. (KWOK "runs" the Deployment's pod without a process; we supply the process.)
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path
from secondary_scheduler.kube.manifests import apply_manifests, read_manifests
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.operator import names
from secsched_devtools.cluster.kubeconfigs import write_token_kubeconfig
from secsched_devtools.cluster.localcluster import LocalCluster, free_port
from secsched_devtools.cluster.schedulers import OURS, SchedulerRun, launch, ours_command

OPERATOR_ACCOUNT = "secondary-scheduler-operator"
CONTAINER_PATHS = {
    "/etc/kubernetes/config.yaml": "config.yaml",
    "/certs-dir/tls.crt": "tls.crt",
    "/certs-dir/tls.key": "tls.key",
}


async def service_account_token(api: ApiClient, namespace: str, account: str, seconds: int = 7200) -> str:
    """A token from the TokenRequest API, as the kubelet would mount it into the pod."""

    async def exists() -> bool:
        try:
            await api.get(resource_path("v1", "serviceaccounts", namespace, account))
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return True

    await wait_for(exists, f"ServiceAccount {namespace}/{account}", timeout=60)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    answer = await api.create(resource_path("v1", "serviceaccounts", namespace, account, "token"), request)
    return str(answer["status"]["token"])


def configmap(config_text: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "secondary-scheduler-config", "namespace": namespace},
        "data": {names.CONFIG_KEY: config_text},
    }


async def install(api: ApiClient, deploy_dir: Path, config_text: str) -> list[str]:
    """`kubectl apply -f deploy/`, with the ConfigMap replaced by `config_text` and the CR created last."""
    documents = read_manifests([deploy_dir])
    namespace = names.DEFAULT_NAMESPACE
    first = [doc for doc in documents if doc["kind"] not in ("ConfigMap", names.KIND)]
    crs = [doc for doc in documents if doc["kind"] == names.KIND]
    applied = await apply_manifests(api, first)
    applied += await apply_manifests(api, [configmap(config_text, namespace)])
    applied += await apply_manifests(api, crs)
    return applied


def start_operator(cluster: LocalCluster, token: str, directory: Path) -> subprocess.Popen[bytes]:
    """The operator as its Deployment's pod would run it: with its own ServiceAccount's token."""
    kubeconfig = write_token_kubeconfig(
        directory / "operator.kubeconfig", cluster.api_url, cluster.pki.ca_cert, token
    )
    log = open(directory / "operator.log", "wb")  # noqa: SIM115 - the child keeps it open
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secondary_scheduler.cli",
            "operator",
            "run",
            f"--kubeconfig={kubeconfig}",
            f"--namespace={names.DEFAULT_NAMESPACE}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )


async def operand(api: ApiClient) -> dict[str, Any]:
    """The scheduler Deployment the operator created, once it reports an available replica."""
    path = resource_path("apps/v1", "deployments", names.DEFAULT_NAMESPACE, names.OPERAND)

    async def available() -> dict[str, Any] | None:
        try:
            deployment = await api.get(path)
        except ApiError as error:
            if error.not_found:
                return None
            raise
        return deployment if (deployment.get("status") or {}).get("availableReplicas") else None

    return await wait_for(available, f"Deployment {names.OPERAND} to be available", timeout=120)


async def cr_conditions(api: ApiClient, timeout: float = 60) -> list[dict[str, Any]]:
    """The CR's conditions once the operator reports it Available (or whatever it says after `timeout`)."""
    path = resource_path(names.API_VERSION, names.PLURAL, names.DEFAULT_NAMESPACE, names.INSTANCE_NAME)

    async def conditions() -> list[dict[str, Any]]:
        return list(((await api.get(path)).get("status") or {}).get("conditions") or [])

    async def available() -> list[dict[str, Any]] | None:
        current = await conditions()
        ready = any(c.get("type") == "Available" and c.get("status") == "True" for c in current)
        return current if ready else None

    try:
        return await wait_for(available, "SecondaryScheduler cluster to be Available", timeout=timeout)
    except TimeoutError:
        return await conditions()


async def run_operand(
    cluster: LocalCluster, api: ApiClient, deployment: dict[str, Any], directory: Path
) -> SchedulerRun:
    """Start `secsched scheduler` with the Deployment's args, files and ServiceAccount."""
    pod_spec = deployment["spec"]["template"]["spec"]
    container = pod_spec["containers"][0]
    namespace = names.DEFAULT_NAMESPACE
    configmap_name = next(v["configMap"]["name"] for v in pod_spec["volumes"] if "configMap" in v)
    secret_name = next(v["secret"]["secretName"] for v in pod_spec["volumes"] if "secret" in v)
    config = await api.get(resource_path("v1", "configmaps", namespace, configmap_name))
    secret = await wait_for(lambda: _secret(api, namespace, secret_name), f"Secret {secret_name}", timeout=60)
    (directory / "config.yaml").write_text(config["data"][names.CONFIG_KEY])
    for key in ("tls.crt", "tls.key"):
        (directory / key).write_bytes(base64.b64decode(secret["data"][key]))
    token = await service_account_token(api, namespace, pod_spec.get("serviceAccountName", names.OPERAND))
    kubeconfig = write_token_kubeconfig(
        directory / "scheduler.kubeconfig", cluster.api_url, cluster.pki.ca_cert, token
    )
    args = [_local_paths(arg, directory) for arg in container.get("args", [])]
    port = free_port()
    # Outside a pod there is no in-cluster config, and port 10259 may be taken: the only two changes.
    argv = [*ours_command(), *args, f"--kubeconfig={kubeconfig}", f"--secure-port={port}"]
    (directory / "scheduler.command").write_text(
        "# The Deployment's command and args, as run here:\n"
        + yaml.safe_dump({"command": container.get("command"), "args": container.get("args"), "run": argv})
    )
    return await asyncio.to_thread(launch, OURS, argv, directory / "scheduler.log", port)


async def _secret(api: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return await api.get(resource_path("v1", "secrets", namespace, name))
    except ApiError as error:
        if error.not_found:
            return None
        raise


def _local_paths(arg: str, directory: Path) -> str:
    for container_path, file_name in CONTAINER_PATHS.items():
        if arg.endswith("=" + container_path):
            return arg.replace(container_path, str(directory / file_name))
    return arg
