"""What a KubeVirt VM of a given size asks Kubernetes for: its virt-launcher pod's requests.

The generator and the Azure reader size their VMs the same way, from this one place:

* Instance types are KubeVirt's common-instancetypes (github.com/kubevirt/common-instancetypes,
  ``instancetypes/{u,cx,m}/1/sizes.yaml``): u1 (universal, 1:4 vCPU:GiB), cx1 (compute exclusive:
  dedicated CPUs and an isolated emulator thread, 1:2) and m1 (memory, 1:8).
* CPU: a VM without dedicated CPUs requests ``vCPUs / cpuAllocationRatio`` cores and sets no CPU
  limit (KubeVirt's ``developerConfiguration.cpuAllocationRatio``, default 10: 100m per vCPU); a
  VM with dedicated CPUs (cx1) is Guaranteed: requests = limits = its vCPUs, plus one core for
  the isolated emulator thread.
* Memory: the guest's memory plus virt-launcher's overhead, as KubeVirt's GetMemoryOverhead
  (pkg/virt-controller/services/renderresources.go) computes it for a plain VM: 220Mi for its
  processes (virt-launcher-monitor 25Mi, virt-launcher 100Mi, virtlogd 25Mi, virtqemud 40Mi,
  qemu 30Mi), page tables (guest memory / 512), 8Mi per vCPU, 8Mi for the IO thread and 32Mi of
  video RAM (a graphics device is attached by default). Hugepages-backed types (cx1, m1) are
  counted as ordinary memory: the simulated nodes have no hugepages pools.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from secondary_scheduler.kube.quantity import format_bytes, format_cpu

MI = 2**20
GI = 2**30
KUBEVIRT_CPU_ALLOCATION_RATIO = 10.0
"""KubeVirt's default cpuAllocationRatio: a vCPU requests 1/10 of a core."""
LAUNCHER_PROCESSES_OVERHEAD = 220 * MI
PER_VCPU_OVERHEAD = 8 * MI
IO_THREAD_OVERHEAD = 8 * MI
VIDEO_RAM_OVERHEAD = 32 * MI
PAGE_TABLE_DIVISOR = 512


@dataclass(frozen=True)
class InstanceType:
    name: str
    vcpus: int
    memory: int
    """Guest memory, bytes."""
    dedicated: bool = False
    """Dedicated CPUs (and an isolated emulator thread): a Guaranteed pod."""


def _series(prefix: str, dedicated: bool, sizes: tuple[tuple[str, int, int], ...]) -> dict[str, InstanceType]:
    return {
        f"{prefix}.{size}": InstanceType(f"{prefix}.{size}", vcpus, gib * GI, dedicated)
        for size, vcpus, gib in sizes
    }


INSTANCE_TYPES: dict[str, InstanceType] = {
    **_series(
        "u1",
        False,
        (
            ("small", 1, 2),
            ("medium", 1, 4),
            ("2xmedium", 2, 4),
            ("large", 2, 8),
            ("xlarge", 4, 16),
            ("2xlarge", 8, 32),
            ("4xlarge", 16, 64),
            ("8xlarge", 32, 128),
        ),
    ),
    **_series(
        "cx1",
        True,
        (
            ("medium", 1, 2),
            ("large", 2, 4),
            ("xlarge", 4, 8),
            ("2xlarge", 8, 16),
            ("4xlarge", 16, 32),
            ("8xlarge", 32, 64),
        ),
    ),
    **_series(
        "m1",
        False,
        (("large", 2, 16), ("xlarge", 4, 32), ("2xlarge", 8, 64), ("4xlarge", 16, 128), ("8xlarge", 32, 256)),
    ),
}
"""common-instancetypes' u1, cx1 and m1 series (u1.nano and u1.micro left out: too small for VMs
anyone replays). The full u1.medium is 1 vCPU, 4Gi."""


def memory_overhead(vcpus: int, guest_memory: int) -> int:
    """virt-launcher's memory beyond the guest's, bytes (see the module's docstring)."""
    page_tables = math.ceil(guest_memory / PAGE_TABLE_DIVISOR)
    return (
        LAUNCHER_PROCESSES_OVERHEAD
        + page_tables
        + PER_VCPU_OVERHEAD * vcpus
        + IO_THREAD_OVERHEAD
        + VIDEO_RAM_OVERHEAD
    )


def launcher_resources(
    vcpus: int, guest_memory: int, *, dedicated: bool, cpu_allocation_ratio: float
) -> tuple[dict[str, str], dict[str, str]]:
    """(requests, limits) of the virt-launcher pod of a VM of ``vcpus`` and ``guest_memory`` bytes."""
    if vcpus < 1 or guest_memory <= 0:
        raise ValueError(
            f"a VM has at least 1 vCPU and some memory (got {vcpus} vCPUs, {guest_memory} bytes)"
        )
    if cpu_allocation_ratio <= 0:
        raise ValueError(
            f"cpu_allocation_ratio={cpu_allocation_ratio} must be > 0 (KubeVirt's default is 10)"
        )
    memory = guest_memory + memory_overhead(vcpus, guest_memory)
    memory_text = format_bytes(math.ceil(memory / MI) * MI)
    if dedicated:
        requests = {"cpu": str(vcpus + 1), "memory": memory_text}
        return requests, dict(requests)
    milli = math.ceil(vcpus * 1000 / cpu_allocation_ratio)
    return {"cpu": format_cpu(milli), "memory": memory_text}, {}
