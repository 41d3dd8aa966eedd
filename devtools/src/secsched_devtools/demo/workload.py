"""The demo's workload: KubeVirt-style VMs (launcher pod + root disk) for our scheduler, web pods
for the default one, and the PriorityClasses the VMs run under.

A virt-launcher pod requests little CPU (KubeVirt divides vCPUs by its CPU allocation ratio
of 10) but memory for the guest plus overhead; the VM's real CPU use is far above its
request. That gap is why users want placement by measured load: the exporter's
`load.secsched.io/cpu` annotation gives each VM its real use.

A VM almost always has a disk: its `dataVolumeTemplates` make CDI create a DataVolume and,
for it, a PersistentVolumeClaim of the same name, which the launcher pod mounts. On a
WaitForFirstConsumer class that claim is provisioned only once the scheduler has chosen the
pod's node, so the disk lands where the VM runs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from secsched_devtools.cluster.loadmodel import CPU_ANNOTATION, MEMORY_ANNOTATION
from secsched_devtools.cluster.provisioner import LOCAL_CLASS

SECONDARY_SCHEDULER = "secondary-scheduler"
CPU_ALLOCATION_RATIO = 10  # KubeVirt's default: a vCPU requests 1/10 of a core
MEMORY_OVERHEAD_MI = 250  # virt-launcher, QEMU and page tables, roughly
MI = 1024**2
GI = 1024**3

ROOTDISK = "rootdisk"
DISK_MOUNT_PATH = "/var/run/kubevirt-private/vmi-disks/rootdisk"
"""Where virt-launcher's compute container sees a filesystem-mode PVC disk."""

STANDARD_PRIORITY = "vm-standard"
STANDARD_PRIORITY_VALUE = 1000
CRITICAL_PRIORITY = "vm-critical"
CRITICAL_PRIORITY_VALUE = 1_000_000


@dataclass(frozen=True)
class VmSize:
    name: str
    vcpus: int
    memory_gi: int
    busy: float  # fraction of its vCPUs the guest keeps busy on average
    disk_gi: int = 30  # the root disk (seed 000's DataVolume asks for 30Gi)

    @property
    def memory_request(self) -> int:
        """Bytes the launcher pod requests: the guest's memory plus virt-launcher's overhead."""
        return self.memory_gi * GI + MEMORY_OVERHEAD_MI * MI


SIZES = (
    VmSize("small", 1, 2, 0.7, 30),
    VmSize("medium", 2, 4, 0.6, 40),
    VmSize("large", 4, 8, 0.6, 60),
)

# KubeVirt's memory-intensive instance types (1 vCPU : 8Gi), by guest memory.
_M1_NAMES = {16: "m1.large", 32: "m1.xlarge", 64: "m1.2xlarge", 128: "m1.4xlarge", 256: "m1.8xlarge"}


def memory_heavy(memory_gi: int) -> VmSize:
    """A database-style VM of KubeVirt's `m1` family: 1 vCPU per 8Gi, mostly idle CPU, a big disk."""
    return VmSize(_M1_NAMES.get(memory_gi, f"m1.{memory_gi}gi"), max(1, memory_gi // 8), memory_gi, 0.25, 120)


def claim_name(vm: str) -> str:
    """The DataVolume's name in the VM's `dataVolumeTemplates`, which CDI gives its PVC too."""
    return f"{vm}-{ROOTDISK}"


def rootdisk_claim(vm: str, size: VmSize, storage_class: str = LOCAL_CLASS) -> dict[str, Any]:
    """The PVC CDI makes for a VM's root DataVolume: what CDI writes, minus what points at CDI
    objects that do not exist here (an ownerReference to the DataVolume would let the garbage
    collector delete the claim; a populator `dataSourceRef` would keep it from being provisioned)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(vm),
            "labels": {
                "app": "containerized-data-importer",
                "app.kubernetes.io/component": "storage",
                "app.kubernetes.io/managed-by": "cdi-controller",
            },
            "annotations": {
                "cdi.kubevirt.io/storage.contentType": "kubevirt",
                "cdi.kubevirt.io/storage.preallocation.requested": "false",
            },
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "volumeMode": "Filesystem",
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": f"{size.disk_gi}Gi"}},
        },
    }


def virt_launcher(
    name: str, size: VmSize, *, claim: str | None = None, priority_class: str | None = None
) -> dict[str, Any]:
    """A pod shaped like the one KubeVirt makes for a VM with `schedulerName: secondary-scheduler`;
    with `claim`, it mounts that PVC as the VM's root disk, as virt-launcher does."""
    cpu_request = f"{size.vcpus * 1000 // CPU_ALLOCATION_RATIO}m"
    memory_request = f"{size.memory_gi * 1024 + MEMORY_OVERHEAD_MI}Mi"
    container: dict[str, Any] = {
        "name": "compute",
        "image": "quay.io/kubevirt/virt-launcher:v1.3.0",
        # A VM with CPU limits (as production VMs usually have: `domain.resources.limits`)
        # gets them on its launcher: TargetLoadPacking predicts a pod's CPU from its limits.
        "resources": {
            "requests": {"cpu": cpu_request, "memory": memory_request},
            "limits": {"cpu": str(size.vcpus), "memory": memory_request},
        },
    }
    spec: dict[str, Any] = {
        "schedulerName": SECONDARY_SCHEDULER,
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
    }
    if claim is not None:
        container["volumeMounts"] = [{"name": ROOTDISK, "mountPath": DISK_MOUNT_PATH}]
        spec["volumes"] = [{"name": ROOTDISK, "persistentVolumeClaim": {"claimName": claim}}]
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
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
        "spec": spec,
    }


@dataclass(frozen=True)
class Vm:
    """One VM as the cluster sees it: its root disk's claim (created first) and its launcher pod."""

    name: str
    size: VmSize
    claim: dict[str, Any]
    pod: dict[str, Any]

    @property
    def pod_name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def claim_name(self) -> str:
        return str(self.claim["metadata"]["name"])


def vm_with_disk(name: str, size: VmSize, priority_class: str = STANDARD_PRIORITY) -> Vm:
    claim = rootdisk_claim(name, size)
    pod = virt_launcher(name, size, claim=claim_name(name), priority_class=priority_class)
    return Vm(name, size, claim, pod)


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


_OS_NAMES = ("centos-stream9", "fedora", "rhel9", "windows2022")


def vm_fleet(count: int, seed: int) -> list[dict[str, Any]]:
    """`count` disk-less VM launcher pods of mixed sizes, the same for every run with the same seed
    (the benchmarks' workload)."""
    rng = random.Random(seed)
    return [
        virt_launcher(f"{rng.choice(_OS_NAMES)}-{index:02d}", rng.choices(SIZES, weights=(5, 3, 2))[0])
        for index in range(count)
    ]


def disk_fleet(count: int, seed: int, heavy: VmSize | None = None, heavy_count: int = 0) -> list[Vm]:
    """`count` VMs with root disks, priority `vm-standard`: first `heavy_count` of size `heavy`
    (databases, there before the rest), then the mixed sizes; the same for every run with the seed."""
    rng = random.Random(seed)
    vms = []
    for index in range(count):
        if heavy is not None and index < heavy_count:
            vms.append(vm_with_disk(f"rhel9-db-{index:02d}", heavy))
        else:
            name = f"{rng.choice(_OS_NAMES)}-{index:02d}"
            vms.append(vm_with_disk(name, rng.choices(SIZES, weights=(5, 3, 2))[0]))
    return vms


def priority_classes() -> list[dict[str, Any]]:
    """The fleet's ordinary priority and the one a business-critical VM runs with."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": description,
        }
        for name, value, description in (
            (STANDARD_PRIORITY, STANDARD_PRIORITY_VALUE, "Ordinary VMs: may be preempted by critical ones."),
            (CRITICAL_PRIORITY, CRITICAL_PRIORITY_VALUE, "Business-critical VMs: preempt ordinary ones."),
        )
    ]
