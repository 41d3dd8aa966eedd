"""The clone this tooling runs from, and the files of it that the demo, the benchmark and the
tests share: the deploy/ manifests and the scheduler configuration they ship.

The dev tooling is installed editable from its clone (`make setup`), so the repository is
found from this file; the runtime package never looks for its clone.
"""

from __future__ import annotations

from pathlib import Path

from secondary_scheduler.kube.manifests import read_manifests

REPO = Path(__file__).resolve().parents[3]
"""devtools/src/secsched_devtools/repo.py -> the repository's root."""


class RepositoryFileMissing(RuntimeError):
    """A file of the clone is not where it should be; the message says which and what to do."""


def deploy_dir() -> Path:
    """deploy/, of this clone or of the working directory's."""
    for candidate in (REPO / "deploy", Path.cwd() / "deploy"):
        if (candidate / "00_secondary-scheduler-operator.crd.yaml").exists():
            return candidate
    raise RepositoryFileMissing("the deploy/ manifests were not found: run from a clone of the repository")


def example_config() -> str:
    """deploy/06's config.yaml: seed 000's profile in v1, which upstream kube-scheduler 1.34 also reads."""
    [configmap] = [doc for doc in read_manifests([deploy_dir()]) if doc["kind"] == "ConfigMap"]
    return str(configmap["data"]["config.yaml"])
