"""The Azure Public Dataset V2 reader, on small files written here in the dataset's layout."""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import pytest

from secondary_scheduler.kube.quantity import int_value
from secondary_scheduler.replay.azure import VMID_ANNOTATION, AzureTrace
from secondary_scheduler.replay.kubevirt import GI, LAUNCHER_PROCESSES_OVERHEAD, memory_overhead
from secondary_scheduler.replay.trace import PodArrival, TraceError, UsageSample, open_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "replay" / "traces" / "azure-sample"

VmRow = tuple[str, int, int, str, str]
"""(vmid, created, deleted, core bucket, memory bucket)"""


def write_vmtable(directory: Path, rows: Sequence[VmRow], gz: bool = False) -> None:
    lines = "".join(
        f"{vmid},sub,dep-{vmid[-1]},{created},{deleted},90.5,20.1,80.2,Interactive,{cores},{memory}\n"
        for vmid, created, deleted, cores, memory in rows
    )
    _write(directory / "vmtable.csv", lines, gz)


def write_readings(
    directory: Path, number: int, of: int, rows: Sequence[tuple[int, str, float]], gz=False
) -> None:
    lines = "".join(f"{t},{vmid},{avg / 2},{min(100, avg * 2)},{avg}\n" for t, vmid, avg in rows)
    _write(directory / f"vm_cpu_readings-file-{number}-of-{of}.csv", lines, gz)


def _write(path: Path, text: str, gz: bool) -> None:
    if gz:
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)


VMS: list[VmRow] = [
    ("aaa", 0, 1800, "2", "4"),
    ("bbb", 0, 3600, ">24", ">64"),
    ("ccc", 600, 1200, "8", "32"),
    ("ddd", 2400, 3600, "4", "8"),
]


def readings_of(vms: Sequence[VmRow], until: int = 3600, avg: float = 50.0) -> list[tuple[int, str, float]]:
    return [
        (t, vmid, avg)
        for t in range(0, until, 300)
        for vmid, created, deleted, *_ in vms
        if created <= t < deleted
    ]


@pytest.fixture
def azure_dir(tmp_path: Path) -> Path:
    write_vmtable(tmp_path, VMS)
    readings = readings_of(VMS)
    write_readings(tmp_path, 1, 2, [row for row in readings if row[0] < 1800])
    write_readings(tmp_path, 2, 2, [row for row in readings if row[0] >= 1800])
    return tmp_path


def arrivals(trace: AzureTrace) -> dict[str, PodArrival]:
    return {
        record.annotations[VMID_ANNOTATION]: record
        for record in trace.records()
        if isinstance(record, PodArrival)
    }


def test_buckets_become_virt_launcher_requests(azure_dir: Path) -> None:
    pods = arrivals(open_trace(azure_dir, "azure"))
    small, large = pods["aaa"], pods["bbb"]
    assert small.requests["cpu"] == "200m", "2 vCPUs at KubeVirt's cpuAllocationRatio of 10"
    assert int_value(small.requests["memory"]) == 4 * GI + memory_overhead(2, 4 * GI)
    assert small.limits == {}
    assert small.instance_type == "azure-2c-4g"
    assert large.requests["cpu"] == "3200m", ">24 cores is largest_cores (32)"
    assert int_value(large.requests["memory"]) == 128 * GI + memory_overhead(32, 128 * GI)
    wider = arrivals(
        open_trace(azure_dir, "azure", largest_cores=48, largest_memory_gb=256, cpu_allocation_ratio=1)
    )
    assert wider["bbb"].requests["cpu"] == "48"
    assert int_value(wider["bbb"].requests["memory"]) == 256 * GI + memory_overhead(48, 256 * GI)


def test_use_is_avgcpu_times_cores_and_memory_a_stated_share(azure_dir: Path) -> None:
    trace = open_trace(azure_dir, "azure", memory_utilization=0.5)
    names = {pod.name: vmid for vmid, pod in arrivals(trace).items()}
    cores = {"aaa": 2, "bbb": 32, "ccc": 8, "ddd": 4}
    memory = {"aaa": 4, "bbb": 128, "ccc": 32, "ddd": 8}
    samples = [record for record in trace.records() if isinstance(record, UsageSample)]
    assert len(samples) == len(readings_of(VMS))
    for sample in samples:
        vmid = names[sample.name]
        assert sample.cpu == pytest.approx(0.5 * cores[vmid])
        assert sample.memory == 0.5 * memory[vmid] * GI + LAUNCHER_PROCESSES_OVERHEAD


def test_records_are_in_time_order_with_each_arrival_before_its_samples(azure_dir: Path) -> None:
    records = list(open_trace(azure_dir, "azure").records())
    assert [record.t for record in records] == sorted(record.t for record in records)
    seen: set[str] = set()
    for record in records:
        if isinstance(record, PodArrival):
            seen.add(record.name)
        else:
            assert record.name in seen
    pods = {record.name: record for record in records if isinstance(record, PodArrival)}
    assert [(pod.t, pod.end) for pod in pods.values()] == [
        (0.0, 1800.0),
        (0.0, 3600.0),
        (600.0, 1200.0),
        (2400.0, 3600.0),
    ]


def test_a_time_window_starts_the_replay_at_its_start(azure_dir: Path) -> None:
    records = list(open_trace(azure_dir, "azure", start=900, end=2700).records())
    pods = {
        record.annotations[VMID_ANNOTATION]: record for record in records if isinstance(record, PodArrival)
    }
    assert pods["aaa"].t == 0.0 and pods["aaa"].end == 900.0, "alive at the window's start: arrives at t=0"
    assert pods["bbb"].end is None, "deleted after the window: no end"
    assert pods["ccc"].t == 0.0 and pods["ccc"].end == 300.0
    assert pods["ddd"].t == 1500.0
    samples = [record for record in records if isinstance(record, UsageSample)]
    assert min(sample.t for sample in samples) == 0.0
    assert max(sample.t for sample in samples) == 1500.0, (
        "readings at and after the window's end are left out"
    )
    assert open_trace(azure_dir, "azure", start=1800).header.description.count("2 VMs"), "aaa and ccc ended"


def test_a_subset_by_fraction_is_seeded_and_by_count_the_first_created(tmp_path: Path) -> None:
    vms = [(f"vm{i:03d}", i * 300, 30000, "2", "4") for i in range(100)]
    write_vmtable(tmp_path, vms)
    write_readings(tmp_path, 1, 1, readings_of(vms[:3], until=900))
    first = arrivals(AzureTrace(tmp_path, _options(sample_fraction=0.3, seed=1)))
    again = arrivals(AzureTrace(tmp_path, _options(sample_fraction=0.3, seed=1)))
    other = arrivals(AzureTrace(tmp_path, _options(sample_fraction=0.3, seed=2)))
    assert list(first) == list(again)
    assert set(first) != set(other)
    assert 15 <= len(first) <= 45
    counted = arrivals(AzureTrace(tmp_path, _options(max_vms=5, start=600)))
    assert list(counted) == ["vm000", "vm001", "vm002", "vm003", "vm004"]
    assert [pod.t for pod in counted.values()] == [0.0, 0.0, 0.0, 300.0, 600.0]


def _options(**values: object):  # type: ignore[no-untyped-def]
    from secondary_scheduler.replay.azure import AzureOptions

    return AzureOptions(**values)  # type: ignore[arg-type]


def test_gzipped_files_read_as_plain_ones(azure_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    zipped = tmp_path_factory.mktemp("gz")
    write_vmtable(zipped, VMS, gz=True)
    readings = readings_of(VMS)
    write_readings(zipped, 1, 2, [row for row in readings if row[0] < 1800], gz=True)
    write_readings(zipped, 2, 2, [row for row in readings if row[0] >= 1800], gz=True)
    plain, packed = open_trace(azure_dir, "azure"), open_trace(zipped, "azure")
    assert list(plain.records()) == list(packed.records())


def test_files_are_read_in_the_order_of_their_number(tmp_path: Path) -> None:
    vms = [("aaa", 0, 100000, "2", "4")]
    write_vmtable(tmp_path, vms)
    for number in range(1, 12):
        write_readings(tmp_path, number, 11, [(number * 300, "aaa", 10.0)])
    times = [
        record.t for record in open_trace(tmp_path, "azure").records() if isinstance(record, UsageSample)
    ]
    assert times == [number * 300.0 for number in range(1, 12)], (
        "file-10 comes after file-9, not after file-1"
    )


@pytest.mark.parametrize(
    ("files", "field", "says"),
    [
        ({1: [(300, "aaa", 1.0), (0, "aaa", 1.0)]}, "timestamp", "goes back from 300"),
        ({1: [(300, "aaa", 1.0)], 2: [(0, "aaa", 1.0)]}, "timestamp", "goes back from 300"),
        ({1: [(0, "aaa", 1.0)], 3: [(600, "aaa", 1.0)]}, "vm_cpu_readings", "file(s) 2 missing"),
        ({1: [(0, "aaa", 120.0)]}, "avgcpu", "not a percentage"),
    ],
)
def test_bad_readings_are_refused_loudly(
    tmp_path: Path, files: dict[int, list[tuple[int, str, float]]], field: str, says: str
) -> None:
    write_vmtable(tmp_path, [("aaa", 0, 3600, "2", "4")])
    for number, rows in files.items():
        write_readings(tmp_path, number, 3, rows)
    with pytest.raises(TraceError) as raised:
        list(open_trace(tmp_path, "azure").records())
    assert raised.value.field == field
    assert says in str(raised.value)


@pytest.mark.parametrize(
    ("row", "field", "says"),
    [
        ("aaa,sub,dep,0,3600,1,1,1,Interactive,2", "line", "has 10 columns, not 11"),
        ("aaa,sub,dep,0,3600,1,1,1,Interactive,two,4", "vmcorecountbucket", "not a bucket"),
        ("aaa,sub,dep,0,3600,1,1,1,Interactive,2,>x", "vmmemorybucket", "not a bucket"),
        ("aaa,sub,dep,600,300,1,1,1,Interactive,2,4", "vmdeleted", "before vmcreated=600"),
        ("aaa,sub,dep,soon,300,1,1,1,Interactive,2,4", "vmcreated", "not a time"),
    ],
)
def test_a_bad_vmtable_row_is_named_by_line(tmp_path: Path, row: str, field: str, says: str) -> None:
    (tmp_path / "vmtable.csv").write_text(f"bbb,sub,dep,0,3600,1,1,1,Interactive,2,4\n{row}\n")
    write_readings(tmp_path, 1, 1, [(0, "bbb", 1.0)])
    with pytest.raises(TraceError) as raised:
        open_trace(tmp_path, "azure")
    assert (raised.value.line, raised.value.field) == (2, field)
    assert says in str(raised.value)


def test_options_and_layout_mistakes_are_refused(azure_dir: Path) -> None:
    empty = azure_dir / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="largest_cores=16: the bucket is '>24'"):
        open_trace(azure_dir, "azure", largest_cores=16)
    with pytest.raises(ValueError, match="sample_fraction=0"):
        open_trace(azure_dir, "azure", sample_fraction=0)
    with pytest.raises(ValueError, match="end=10"):
        open_trace(azure_dir, "azure", start=20, end=10)
    with pytest.raises(TypeError, match="windw"):
        open_trace(azure_dir, "azure", windw=3)
    with pytest.raises(TraceError, match="no vmtable"):
        open_trace(empty, "azure")
    (azure_dir / "vmtable.csv.gz").write_bytes(gzip.compress(b""))
    with pytest.raises(TraceError, match=r"both vmtable\.csv and vmtable\.csv\.gz"):
        open_trace(azure_dir, "azure")


def test_files_wholly_before_the_window_are_not_read_past_their_first_line(azure_dir: Path) -> None:
    first = azure_dir / "vm_cpu_readings-file-1-of-2.csv"
    first.write_text(first.read_text().splitlines()[0] + "\nthis line would be refused\n")
    samples = [r for r in open_trace(azure_dir, "azure", start=2100).records() if isinstance(r, UsageSample)]
    assert min(sample.t for sample in samples) == 0.0
    with pytest.raises(TraceError, match="has 1 columns"):
        list(open_trace(azure_dir, "azure").records())


def test_readings_are_streamed_not_loaded(tmp_path: Path) -> None:
    vms = [(f"{i:044d}", 0, 10**7, "2", "4") for i in range(40)]  # ids as long as the dataset's
    write_vmtable(tmp_path, vms)
    rows = [(t, vmid, 30.0) for t in range(0, 300 * 1200, 300) for vmid, *_ in vms]
    write_readings(tmp_path, 1, 1, rows, gz=True)
    size = len(gzip.decompress((tmp_path / "vm_cpu_readings-file-1-of-1.csv.gz").read_bytes()))
    trace = open_trace(tmp_path, "azure", max_vms=5)
    tracemalloc.start()
    try:
        consumed = sum(1 for _ in trace.records())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert consumed == 5 + 5 * 1200
    assert size > 3 * 2**20
    assert peak < 2**20, f"{size / 2**20:.1f} MiB of readings read with a peak of {peak / 2**20:.1f} MiB"


def test_the_example_sample_reads(tmp_path: Path) -> None:
    trace = open_trace(EXAMPLE, "azure")
    records = list(trace.records())
    pods = [record for record in records if isinstance(record, PodArrival)]
    assert len(pods) == 40
    assert max(record.t for record in records) < 86400
    assert all(path.stat().st_size < 2**20 for path in EXAMPLE.iterdir())
