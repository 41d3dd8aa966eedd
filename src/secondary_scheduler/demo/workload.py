"""The demo's workload: KubeVirt-style VM launcher pods for our scheduler, web pods for the default one.

A virt-launcher pod requests little CPU (KubeVirt divides vCPUs by its CPU allocation ratio
of 10) but memory for the guest plus overhead; the VM's real CPU use is far above its
request. That gap is why users want placement by measured load: the exporter's
`load.secsched.io/cpu` annotation gives each VM its real use.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.cluster.loadmodel import CPU_ANNOTATION, MEMORY_ANNOTATION

SECONDARY_SCHEDULER = "secondary-scheduler"
CPU_ALLOCATION_RATIO = 10  # KubeVirt's default: a vCPU requests 1/10 of a core
MEMORY_OVERHEAD_MI = 250  # virt-launcher, QEMU and page tables, roughly


@dataclass(frozen=True)
class VmSize:
    name: str
    vcpus: int
    memory_gi: int
    busy: float  # fraction of its vCPUs the guest keeps busy on average


SIZES = (VmSize("small", 1, 2, 0.7), VmSize("medium", 2, 4, 0.6), VmSize("large", 4, 8, 0.6))


def virt_launcher(name: str, size: VmSize) -> dict[str, Any]:
    """A pod shaped like the one KubeVirt makes for a VM with `schedulerName: secondary-scheduler`."""
    cpu_request = f"{size.vcpus * 1000 // CPU_ALLOCATION_RATIO}m"
    memory_request = f"{size.memory_gi * 1024 + MEMORY_OVERHEAD_MI}Mi"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"virt-launcher-{name}",
            "labels": {
                "kubevirt.io": "virt-launcher",
                "kubevirt.io/domain": name,
                "kubevirt.io/size": size.name,
                "vm.kubevirt.io/name": name,
            },
            "annotations": {
                "vm.kubevirt.io/flavor": size.name,
                "vm.kubevirt.io/os": "centos-stream9",
                "vm.kubevirt.io/workload": "server",
                CPU_ANNOTATION: f"{int(size.vcpus * 1000 * size.busy)}m",
                MEMORY_ANNOTATION: f"{int(size.memory_gi * 1024 * 0.8) + MEMORY_OVERHEAD_MI}Mi",
            },
        },
        "spec": {
            "schedulerName": SECONDARY_SCHEDULER,
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "compute",
                    "image": "quay.io/kubevirt/virt-launcher:v1.3.0",
                    # A VM with CPU limits (as production VMs usually have: `domain.resources.limits`)
                    # gets them on its launcher: TargetLoadPacking predicts a pod's CPU from its limits.
                    "resources": {
                        "requests": {"cpu": cpu_request, "memory": memory_request},
                        "limits": {"cpu": str(size.vcpus), "memory": memory_request},
                    },
                }
            ],
        },
    }


def web_pod(index: int) -> dict[str, Any]:
    """An ordinary pod, left to the cluster's default scheduler."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-{index}",
            "labels": {"app": "web"},
            "annotations": {CPU_ANNOTATION: "150m"},
        },
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}},
                }
            ]
        },
    }


def vm_fleet(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` VM launcher pods of mixed sizes, the same for every run with the same seed."""
    rng = random.Random(seed)
    names = ("centos-stream9", "fedora", "rhel9", "windows2022")
    return [
        virt_launcher(f"{rng.choice(names)}-{index:02d}", rng.choices(SIZES, weights=(5, 3, 2))[0])
        for index in range(count)
    ]
