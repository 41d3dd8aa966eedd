"""The clone this tooling runs from, and the files of it that the demo, the benchmark and the
tests share: the deploy/ manifests and the scheduler configuration they ship.

The dev tooling is installed editable from its clone (`make setup`), so the repository is
found from this file; the runtime package never looks for its clone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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


def replay_example(name: str, prometheus: str, **set_args: Any) -> str:
    """examples/replay/``name`` with the metricProvider of every plugin that reads metrics pointed at
    ``prometheus`` and ``set_args`` set in that plugin's args: an example profile on a live cluster."""
    document = yaml.safe_load((REPO / "examples" / "replay" / name).read_text())
    for profile in document["profiles"]:
        for entry in profile.get("pluginConfig", []):
            provider = entry.get("args", {}).get("metricProvider")
            if provider is not None:
                provider["address"] = prometheus
                entry["args"].update(set_args)
    return str(yaml.safe_dump(document, sort_keys=False))
