"""The Azure Public Dataset V2 VM trace, read as published, as secsched trace records.

The directory holds ``vmtable.csv`` and ``vm_cpu_readings-file-N-of-M.csv`` (each optionally
``.gz``), without headers, as github.com/Azure/AzurePublicDataset (AzurePublicDatasetV2.md)
publishes them:

* vmtable: vmid, subscriptionid, deploymentid, vmcreated, vmdeleted, maxcpu, avgcpu, p95maxcpu,
  vmcategory, vmcorecountbucket, vmmemorybucket. Times are seconds from the trace's start; CPU
  is a percentage of the VM's cores; the buckets are upper bounds: cores ``2``, ``4``, ``8``,
  ``24``, ``>24``; memory (GB) ``2``, ``4``, ``8``, ``32``, ``64``, ``>64``.
* readings: timestamp, vmid, mincpu, maxcpu, avgcpu, every 5 minutes. The files are consecutive
  slices of time (file 1 holds the first hours, file 2 the next...): they are read in the order
  of their number, and a timestamp that goes back (within a file or from one file to the next) or
  a missing file number is refused.

A VM becomes a pod as KubeVirt would run it (replay/kubevirt.py): its bucket's cores as vCPUs
(``>24`` as ``largest_cores``), its bucket's GB as GiB of guest memory (``>64`` as
``largest_memory_gb``), requests from those as virt-launcher's; its CPU use is each reading's
avgcpu % x its cores; memory has no readings in the trace, so its use is taken as constant:
``memory_utilization`` x guest memory + virt-launcher's processes.

The vmtable (~2.7 million rows) is read once, keeping only the VMs asked for, in arrays; the
readings (tens of GB) are streamed line by line on each ``records()``, and files that end before
the time window are skipped after reading their first line.
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, cast

from secondary_scheduler.replay.kubevirt import GI, LAUNCHER_PROCESSES_OVERHEAD, launcher_resources
from secondary_scheduler.replay.trace import (
    PodArrival,
    ReplayRecord,
    TraceError,
    TraceHeader,
    TraceRecord,
    UsageSample,
    batched,
)

VMTABLE = "vmtable.csv"
READINGS = re.compile(r"^vm_cpu_readings-file-(\d+)-of-(\d+)\.csv(\.gz)?$")
VMTABLE_COLUMNS = 11
READINGS_COLUMNS = 5
VMID_ANNOTATION = "replay.secsched.io/azure-vmid"
CATEGORY_LABEL = "replay.secsched.io/azure-vm-category"


@dataclass(frozen=True)
class AzureOptions:
    """Which VMs and which time of the Azure trace to read, and how a VM is sized."""

    start: float = 0.0
    """Window start, seconds from the Azure trace's start: it becomes the replay's t=0; VMs alive
    then arrive at t=0."""
    end: float | None = None
    """Window end (exclusive), seconds from the Azure trace's start; None: the last reading."""
    sample_fraction: float | None = None
    """Keep each VM with this probability (decided by a hash of the seed and its vmid, so the same
    VMs whatever the window); None: all."""
    max_vms: int | None = None
    """Keep at most this many VMs (the first created in the window, after sampling); None: all."""
    seed: int = 0
    namespace: str = "azure"
    cpu_allocation_ratio: float = 10.0
    """KubeVirt's cpuAllocationRatio (its default, 10: a vCPU requests 100m)."""
    largest_cores: int = 32
    """The vCPUs of a VM in the ``>24`` core bucket."""
    largest_memory_gb: int = 128
    """The GiB of a VM in the ``>64`` memory bucket."""
    memory_utilization: float = 0.7
    """The share of its guest memory a VM is taken to use (the trace has no memory readings)."""

    def __post_init__(self) -> None:
        def refuse(name: str, value: object, fix: str) -> None:
            raise ValueError(f"azure option {name}={value!r}: {fix}")

        if not 0 <= self.start < math.inf:
            refuse("start", self.start, "give seconds >= 0 from the trace's start")
        if self.end is not None and not self.start < self.end:
            refuse("end", self.end, f"give seconds after start ({self.start:g}), or none for the whole trace")
        if self.sample_fraction is not None and not 0 < self.sample_fraction <= 1:
            refuse("sample_fraction", self.sample_fraction, "give a fraction in (0, 1]")
        if self.max_vms is not None and self.max_vms < 1:
            refuse("max_vms", self.max_vms, "give at least 1")
        if not self.cpu_allocation_ratio > 0:
            refuse("cpu_allocation_ratio", self.cpu_allocation_ratio, "give a ratio > 0 (KubeVirt's is 10)")
        if self.largest_cores <= 24:
            refuse("largest_cores", self.largest_cores, "the bucket is '>24': give more than 24")
        if self.largest_memory_gb <= 64:
            refuse("largest_memory_gb", self.largest_memory_gb, "the bucket is '>64': give more than 64")
        if not 0 < self.memory_utilization <= 1:
            refuse("memory_utilization", self.memory_utilization, "give a share in (0, 1]")


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


def _bucket(text: bytes, largest: int) -> int | None:
    """The size a bucket stands for (its upper bound; ``>N`` is ``largest``), None if unreadable."""
    if text.startswith(b">"):
        return largest if text[1:].isdigit() else None
    return int(text) if text.isdigit() and int(text) > 0 else None


def _keep_by_hash(seed: int, vmid: bytes, fraction: float) -> bool:
    digest = hashlib.blake2b(vmid, digest_size=8, key=str(seed).encode()).digest()
    return int.from_bytes(digest, "big") < fraction * 2**64


@dataclass
class _Kept:
    """The VMs kept, compactly: columns indexed by pod number (in order of arrival)."""

    vmid: list[bytes]
    created: array[float]
    deleted: array[float]
    cores: array[int]
    memory_gb: array[int]
    deployment: list[str]
    category: list[str]


class AzureTrace:
    """The Azure trace of a directory as a Trace (see the module's docstring)."""

    def __init__(self, directory: Path, options: AzureOptions | None = None) -> None:
        self.directory = Path(directory)
        self.options = options or AzureOptions()
        if not self.directory.is_dir():
            raise TraceError(
                self.directory,
                0,
                "path",
                str(self.directory),
                "is not a directory",
                f"give the directory holding {VMTABLE}[.gz] and vm_cpu_readings-file-*.csv[.gz]",
            )
        self.vmtable = self._vmtable_path()
        self.readings = self._readings_paths()
        self.kept = self._read_vmtable()
        self.index = {vmid: i for i, vmid in enumerate(self.kept.vmid)}
        window = f"[{self.options.start:g}, {'end' if self.options.end is None else f'{self.options.end:g}'})"
        self.header = TraceHeader(
            start=0.0,
            source="azure",
            description=(
                f"Azure Public Dataset V2 VM trace ({self.directory.name}): {len(self.index)} VMs, "
                f"window {window} s of the trace; options: {asdict(self.options)}"
            ),
            seed=self.options.seed,
        )

    def _vmtable_path(self) -> Path:
        found = [
            self.directory / name for name in (VMTABLE, f"{VMTABLE}.gz") if (self.directory / name).exists()
        ]
        if len(found) != 1:
            raise TraceError(
                self.directory,
                0,
                VMTABLE,
                [path.name for path in found],
                "no vmtable" if not found else "both vmtable.csv and vmtable.csv.gz are there",
                f"put exactly one of {VMTABLE} or {VMTABLE}.gz in {self.directory}",
            )
        return found[0]

    def _readings_paths(self) -> list[Path]:
        numbered: dict[int, Path] = {}
        for path in self.directory.iterdir():
            match = READINGS.match(path.name)
            if match is None:
                continue
            number = int(match.group(1))
            if number in numbered:
                raise TraceError(
                    path,
                    0,
                    "file",
                    path.name,
                    f"file {number} is there twice ({numbered[number].name})",
                    "keep one of them",
                )
            numbered[number] = path
        if not numbered:
            raise TraceError(
                self.directory,
                0,
                "vm_cpu_readings",
                None,
                "no vm_cpu_readings-file-N-of-M.csv[.gz] found",
                "put the readings files you downloaded beside the vmtable",
            )
        numbers = sorted(numbered)
        missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
        if missing:
            raise TraceError(
                self.directory,
                0,
                "vm_cpu_readings",
                missing[:5],
                f"readings file(s) {', '.join(map(str, missing[:5]))} missing: the files are consecutive "
                "slices of time, a gap would hold every VM at its last reading for hours",
                "download the missing files, or keep only a run of consecutive ones",
            )
        return [numbered[number] for number in numbers]

    def _read_vmtable(self) -> _Kept:
        """One pass over the vmtable keeping the VMs in the window (sampled, at most max_vms)."""
        options = self.options
        window_end = math.inf if options.end is None else options.end
        chosen: list[tuple[float, int, tuple[bytes, ...], int, int]] = []  # (-created, -line, row, sizes)
        path = self.vmtable
        with _open(path) as stream:
            for number, line in enumerate(stream, start=1):
                row = tuple(line.rstrip(b"\r\n").split(b","))
                if len(row) != VMTABLE_COLUMNS:
                    raise TraceError(
                        path,
                        number,
                        "line",
                        line[:80].decode("utf-8", "replace"),
                        f"has {len(row)} columns, not {VMTABLE_COLUMNS}",
                        "vmid, subscriptionid, deploymentid, vmcreated, vmdeleted, maxcpu, avgcpu, "
                        "p95maxcpu, vmcategory, vmcorecountbucket, vmmemorybucket, without a header",
                    )
                created = self._time(row[3], path, number, "vmcreated")
                deleted = self._time(row[4], path, number, "vmdeleted")
                if deleted < created:
                    raise TraceError(
                        path, number, "vmdeleted", deleted, f"is before vmcreated={created:g}", "fix the row"
                    )
                if created >= window_end or deleted <= options.start:
                    continue
                if options.sample_fraction is not None and not _keep_by_hash(
                    options.seed, row[0], options.sample_fraction
                ):
                    continue
                cores = _bucket(row[9], options.largest_cores)
                memory_gb = _bucket(row[10], options.largest_memory_gb)
                for column, size in (("vmcorecountbucket", cores), ("vmmemorybucket", memory_gb)):
                    if size is None:
                        text = row[9 if column == "vmcorecountbucket" else 10]
                        raise TraceError(
                            path,
                            number,
                            column,
                            text.decode("utf-8", "replace"),
                            "is not a bucket",
                            "a number of cores or GB (2, 4, 8...) or >N",
                        )
                entry = (-created, -number, row, cast(int, cores), cast(int, memory_gb))
                if options.max_vms is None:
                    chosen.append(entry)
                elif len(chosen) < options.max_vms:
                    heapq.heappush(chosen, entry)
                elif entry[:2] > chosen[0][:2]:
                    heapq.heapreplace(chosen, entry)
        chosen.sort(reverse=True)
        kept = _Kept([], array("d"), array("d"), array("i"), array("i"), [], [])
        deployments: dict[bytes, str] = {}
        categories: dict[bytes, str] = {}
        for negative_created, _, row, cores, memory_gb in chosen:
            kept.vmid.append(row[0])
            kept.created.append(-negative_created)
            kept.deleted.append(float(row[4]))
            kept.cores.append(cores)
            kept.memory_gb.append(memory_gb)
            kept.deployment.append(deployments.setdefault(row[2], f"azure-deployment/{row[2].decode()}"))
            kept.category.append(categories.setdefault(row[8], _category_label(row[8])))
        return kept

    @staticmethod
    def _time(text: bytes, path: Path, number: int, column: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 <= value < math.inf:
            raise TraceError(
                path,
                number,
                column,
                text.decode("utf-8", "replace"),
                "is not a time",
                "seconds >= 0 from the trace's start",
            )
        return value

    def arrivals(self) -> Iterator[PodArrival]:
        """The kept VMs as pod arrivals, in time order (built one at a time)."""
        options, kept = self.options, self.kept
        window_end = math.inf if options.end is None else options.end
        for i, vmid in enumerate(kept.vmid):
            cores, memory = kept.cores[i], kept.memory_gb[i] * GI
            requests, limits = launcher_resources(
                cores, memory, dedicated=False, cpu_allocation_ratio=options.cpu_allocation_ratio
            )
            deleted = kept.deleted[i]
            yield PodArrival(
                t=max(kept.created[i], options.start) - options.start,
                namespace=options.namespace,
                name=f"vm-{i:07d}",
                end=None if deleted >= window_end else deleted - options.start,
                requests=requests,
                limits=limits,
                labels={CATEGORY_LABEL: kept.category[i]} if kept.category[i] else {},
                annotations={VMID_ANNOTATION: vmid.decode()},
                owner=kept.deployment[i],
                instance_type=f"azure-{cores}c-{kept.memory_gb[i]}g",
            )

    def readings_records(self) -> Iterator[UsageSample]:
        """The kept VMs' readings in the window, streamed file by file, checked for time order."""
        options, index, kept = self.options, self.index, self.kept
        window_end = math.inf if options.end is None else options.end
        namespace = options.namespace
        names = [f"vm-{i:07d}" for i in range(len(kept.vmid))]
        memory = [
            float(round(kept.memory_gb[i] * GI * options.memory_utilization + LAUNCHER_PROCESSES_OVERHEAD))
            for i in range(len(kept.vmid))
        ]
        previous, previous_at = -math.inf, ""
        firsts = [self._first_timestamp(path) for path in self.readings]
        for position, path in enumerate(self.readings):
            following = firsts[position + 1] if position + 1 < len(firsts) else None
            if following is not None and following < options.start and firsts[position] <= following:
                continue  # ends before the window: never decompressed past its first line
            with _open(path) as stream:
                for number, line in enumerate(stream, start=1):
                    row = line.rstrip(b"\r\n").split(b",")
                    if len(row) != READINGS_COLUMNS:
                        raise TraceError(
                            path,
                            number,
                            "line",
                            line[:80].decode("utf-8", "replace"),
                            f"has {len(row)} columns, not {READINGS_COLUMNS}",
                            "timestamp, vmid, mincpu, maxcpu, avgcpu, without a header",
                        )
                    timestamp = self._time(row[0], path, number, "timestamp")
                    if timestamp < previous:
                        raise TraceError(
                            path,
                            number,
                            "timestamp",
                            timestamp,
                            f"goes back from {previous:g} ({previous_at})",
                            "the readings must be in time order, in and across files; sort them "
                            "(sort -t, -k1,1n) or give the files as published",
                        )
                    previous, previous_at = timestamp, f"{path.name}:{number}"
                    if timestamp >= window_end:
                        return
                    i = index.get(row[1])
                    if i is None or timestamp < options.start:
                        continue
                    if not kept.created[i] <= timestamp < max(kept.deleted[i], kept.created[i] + 1):
                        continue
                    try:
                        average = float(row[4])
                    except ValueError:
                        average = math.nan
                    if not 0 <= average <= 100:
                        raise TraceError(
                            path,
                            number,
                            "avgcpu",
                            row[4].decode("utf-8", "replace"),
                            "is not a percentage",
                            "a number in [0, 100]",
                        )
                    cores = round(average / 100 * kept.cores[i], 6)
                    yield UsageSample(timestamp - options.start, namespace, names[i], cores, memory[i])

    def _first_timestamp(self, path: Path) -> float:
        with _open(path) as stream:
            line = stream.readline()
        if not line.strip():
            return math.inf
        return self._time(line.split(b",", 1)[0], path, 1, "timestamp")

    def stream(self) -> Iterator[ReplayRecord]:
        return batched(self.records())

    def records(self) -> Iterator[TraceRecord]:
        """Arrivals merged with readings in time order (an arrival first when both fall at one time)."""
        arrivals = self.arrivals()
        pending = next(arrivals, None)
        for sample in self.readings_records():
            while pending is not None and pending.t <= sample.t:
                yield pending
                pending = next(arrivals, None)
            yield sample
        while pending is not None:
            yield pending
            pending = next(arrivals, None)


def _category_label(text: bytes) -> str:
    """vmcategory as a label value (Interactive, Delay-insensitive, Unknown), '' if it cannot be one."""
    value = text.decode("utf-8", "replace").strip()
    return value if re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", value) else ""
