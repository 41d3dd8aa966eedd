"""The pods a soak churns: a seeded mix that walks most of the scheduler's code, not one path.

Plain pods (with a load annotation, so the load-aware plugins see them), pods spread over zones,
pods with preferred and with required anti-affinity (small apps of a few replicas), and a few
that no node fits (they sit in the unschedulable queue until deleted: the queue must let them go).
"""

from __future__ import annotations

import random
from typing import Any

from secsched_devtools.cluster.loadmodel import CPU_ANNOTATION

SCHEDULER_NAME = "secondary-scheduler"
UNSCHEDULABLE_LABEL = "secsched.io/soak-never"
"""A node label no node carries: pods selecting it stay unschedulable."""
KINDS = (
    ("plain", 0.55),
    ("spread", 0.2),
    ("preferred-anti-affinity", 0.1),
    ("required-anti-affinity", 0.13),
    ("unschedulable", 0.02),
)
"""(kind, share of the pods)."""
APPS = 40
"""Apps per kind: pods of one app spread, or keep apart, from each other."""


def _app_selector(app: str) -> dict[str, Any]:
    return {"matchLabels": {"app": app}}


def pod_manifest(name: str, index: int, chooser: random.Random) -> tuple[str, dict[str, Any]]:
    """(kind, manifest) of the soak's ``index``-th pod; ``chooser`` is the run's seeded random."""
    kind = chooser.choices([kind for kind, _ in KINDS], weights=[share for _, share in KINDS])[0]
    app = f"{kind}-{chooser.randrange(APPS)}"
    cpu = chooser.choice(("100m", "250m", "500m"))
    memory = chooser.choice(("128Mi", "256Mi", "512Mi"))
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if kind == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule" if index % 2 else "ScheduleAnyway",
                "labelSelector": _app_selector(app),
            }
        ]
    elif kind == "preferred-anti-affinity":
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": _app_selector(app),
                        },
                    }
                ]
            }
        }
    elif kind == "required-anti-affinity":
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": _app_selector(app)}
                ]
            }
        }
    elif kind == "unschedulable":
        spec["nodeSelector"] = {UNSCHEDULABLE_LABEL: "true"}
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": app, "secsched.io/soak": kind},
            "annotations": {CPU_ANNOTATION: f"{chooser.choice((50, 150, 400))}m"},
        },
        "spec": spec,
    }
    return kind, manifest
