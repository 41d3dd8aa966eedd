"""The operator during a chaos run: installed from deploy/ (all but its own Deployment), run as a
process (`secsched operator run`), nudged into reconciling, killed mid-reconcile, started again.

Nothing runs in the Deployment it renders (KWOK): what a kill must not break is the operator's
own promise, that it converges on the CR's latest generation; `converged` reads exactly that
(the CR's status.observedGeneration and the generation the Deployment's pod template records).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.manifests import read_manifests
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.operator import names
from secsched_devtools.repo import deploy_dir

NS = names.DEFAULT_NAMESPACE
CR_PATH = f"/apis/operator.openshift.io/v1/namespaces/{NS}/secondaryschedulers/cluster"
DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NS}/deployments/secondary-scheduler"
GENERATION_ANNOTATION = "secondaryschedulers.operator.openshift.io/cluster"
LOG_LEVELS = ("Normal", "Debug")
FIELD_MANAGER = "secsched-chaos"


async def install(api: ApiClient, prometheus_url: str) -> None:
    """deploy/ as `kubectl apply -f deploy/` would, without the operator's Deployment (it runs
    here as a process) and with ${PROM_URL} filled in, the CRD established before the CR."""
    documents = read_manifests([deploy_dir()])
    for document in documents:
        if document["kind"] == "CustomResourceDefinition":
            await api.apply(document, FIELD_MANAGER)
            crd_path = (
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{document['metadata']['name']}"
            )

            async def established(path: str = crd_path) -> bool:
                conditions = ((await api.get(path)).get("status") or {}).get("conditions") or []
                return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

            await wait_for(established, "the SecondaryScheduler CRD to be established", 30)
    for document in documents:
        if document["kind"] in ("CustomResourceDefinition", "Deployment"):
            continue
        if document["kind"] == "ConfigMap":
            text = document["data"][names.CONFIG_KEY].replace("${PROM_URL}", prometheus_url)
            document = {**document, "data": {names.CONFIG_KEY: text}}
        await api.apply(document, FIELD_MANAGER)


class OperatorProcess:
    """`secsched operator run` with the admin's kubeconfig; started again after each kill."""

    def __init__(self, kubeconfig: Path, directory: Path, resync_seconds: float = 5.0) -> None:
        self.argv = [
            sys.executable,
            "-m",
            "secondary_scheduler.cli",
            "operator",
            "run",
            f"--namespace={NS}",
            f"--kubeconfig={kubeconfig}",
            f"--resync={resync_seconds:g}",
        ]
        self.directory = directory
        self.starts = 0
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.starts += 1
        with open(self.directory / f"operator.{self.starts}.log", "wb") as log:
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def kill(self) -> None:
        """kill -9, mid-reconcile if one is under way."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


async def nudge(api: ApiClient) -> int:
    """Change the CR (its logLevel, back and forth) so the operator reconciles; its new generation."""
    cr = await api.get(CR_PATH)
    current = (cr.get("spec") or {}).get("logLevel", LOG_LEVELS[0])
    other = LOG_LEVELS[1] if current == LOG_LEVELS[0] else LOG_LEVELS[0]
    patched = await api.patch(CR_PATH, {"spec": {"logLevel": other}})
    return int(patched["metadata"]["generation"])


async def converged(api: ApiClient) -> bool:
    """The operator has acted on the CR's latest generation (status and the pod template agree)."""
    try:
        cr = await api.get(CR_PATH)
        deployment = await api.get(DEPLOYMENT_PATH)
    except ApiError as error:
        if error.not_found:
            return False
        raise
    generation = cr["metadata"]["generation"]
    annotations: dict[str, Any] = (
        ((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}
    ).get("annotations") or {}
    return (cr.get("status") or {}).get("observedGeneration") == generation and annotations.get(
        GENERATION_ANNOTATION
    ) == str(generation)
