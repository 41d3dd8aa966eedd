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
from secondary_scheduler.kube.manifests import apply_manifests, read_manifests, substitute
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
    documents = []
    for document in read_manifests([deploy_dir()]):
        if document["kind"] == "Deployment":
            continue
        if document["kind"] == "ConfigMap":
            text = substitute(document["data"][names.CONFIG_KEY], {"PROM_URL": prometheus_url})
            document = {**document, "data": {names.CONFIG_KEY: text}}
        documents.append(document)
    await apply_manifests(api, documents, FIELD_MANAGER)


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
