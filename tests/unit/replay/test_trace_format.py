"""The secsched trace format: written and read back equal, gz or not; every mistake named by line."""

from __future__ import annotations

import gzip
import re
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from secondary_scheduler.replay.trace import (
    INSTANCE_TYPE_ANNOTATION,
    OWNER_ANNOTATION,
    POD_GROUP_LABEL,
    PodArrival,
    TraceError,
    TraceHeader,
    UsageSample,
    open_trace,
    write_trace,
)

HEADER = TraceHeader(start=1.7e9, source="cluster", description="test", seed=None)
RECORDS = [
    PodArrival(
        t=0.0,
        namespace="vms",
        name="vm-1",
        end=600.0,
        requests={"cpu": "100m", "memory": "2Gi"},
        limits={"memory": "4Gi"},
        labels={"app": "web"},
        annotations={"note": "x"},
        owner="deployment/web",
        instance_type="u1.small",
        priority=10,
        group="gang",
        min_member=2,
    ),
    UsageSample(0.0, "vms", "vm-1", 0.25, 1.5e9),
    PodArrival(t=12.5, namespace="vms", name="vm-2", end=None, requests={"cpu": "1"}),
    UsageSample(300.0, "vms", "vm-1", 1.75, 2e9),
    UsageSample(300.0, "vms", "vm-2", 0.0, 123.5),
]


def header_line(**changes: Any) -> dict[str, Any]:
    return {
        "kind": "SecschedTrace",
        "version": 1,
        "start": 0,
        "source": "generated",
        "description": "",
        "seed": 1,
        **changes,
    }


def pod_line(**changes: Any) -> dict[str, Any]:
    return {
        "type": "pod",
        "t": 0,
        "namespace": "default",
        "name": "vm-0",
        "end": None,
        "requests": {"cpu": "1"},
        **changes,
    }


def usage_line(**changes: Any) -> dict[str, Any]:
    return {"type": "usage", "t": 0, "namespace": "default", "name": "vm-0", "cpu": 1, "memory": 1, **changes}


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


@pytest.mark.parametrize("name", ["trace.jsonl", "trace.jsonl.gz"])
def test_a_trace_reads_back_as_written(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    assert write_trace(path, HEADER, RECORDS) == len(RECORDS)
    trace = open_trace(path)
    assert trace.header == HEADER
    assert list(trace.records()) == RECORDS
    assert list(trace.records()) == RECORDS, "records() reads the file again"
    if name.endswith(".gz"):
        assert gzip.decompress(path.read_bytes()).startswith(b'{"kind":"SecschedTrace"')


def test_optional_fields_at_their_defaults_are_left_out(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.jsonl", HEADER, RECORDS[2:3]) and tmp_path / "t.jsonl"
    line = orjson.loads(path.read_bytes().splitlines()[1])
    assert line == {
        "type": "pod",
        "t": 12.5,
        "namespace": "vms",
        "name": "vm-2",
        "end": None,
        "requests": {"cpu": "1"},
    }


def test_the_writer_refuses_records_out_of_order(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="before t=300"):
        write_trace(tmp_path / "t.jsonl", HEADER, [RECORDS[3], RECORDS[2]])


def test_the_manifest_is_a_virt_launcher_pod() -> None:
    pod = RECORDS[0]
    assert isinstance(pod, PodArrival)
    manifest = pod.manifest("secondary-scheduler")
    assert manifest["metadata"]["labels"] == {
        "kubevirt.io": "virt-launcher",
        "vm.kubevirt.io/name": "vm-1",
        "app": "web",
        POD_GROUP_LABEL: "gang",
    }
    assert manifest["metadata"]["annotations"] == {
        "note": "x",
        OWNER_ANNOTATION: "deployment/web",
        INSTANCE_TYPE_ANNOTATION: "u1.small",
    }
    assert manifest["metadata"]["uid"] == pod.uid == RECORDS[0].manifest("x")["metadata"]["uid"]
    assert manifest["spec"]["schedulerName"] == "secondary-scheduler"
    assert manifest["spec"]["priority"] == 10
    (container,) = manifest["spec"]["containers"]
    assert container["name"] == "compute"
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "2Gi"},
        "limits": {"memory": "4Gi"},
    }
    plain = RECORDS[2]
    assert isinstance(plain, PodArrival)
    assert "limits" not in plain.manifest("s")["spec"]["containers"][0]["resources"]
    assert "priority" not in plain.manifest("s")["spec"]


@pytest.mark.parametrize(
    ("lines", "line", "field", "says"),
    [
        ([header_line(kind="Pod")], 1, "kind", "not a SecschedTrace header"),
        ([header_line(version=2)], 1, "version", "reads version 1"),
        ([header_line(source="mine")], 1, "source", "not a known source"),
        ([header_line(extra=1)], 1, "extra", "not a field of the header"),
        ([header_line(seed="1")], 1, "seed", "not an integer"),
        ([header_line(), pod_line(), usage_line(cpu="1")], 3, "cpu", "is a str, not a number"),
        ([header_line(), usage_line(cpu=-1.0)], 2, "cpu", "finite number >= 0"),
        ([header_line(), usage_line(memory=True)], 2, "memory", "is a bool"),
        ([header_line(), usage_line(gpu=1)], 2, "gpu", "not a field of a usage record"),
        ([header_line(), usage_line(t=5), usage_line(t=4)], 3, "t", "before the previous line's t=5"),
        ([header_line(), pod_line(requests={"cpu": 2})], 2, "requests.cpu", "is not a string"),
        ([header_line(), pod_line(requests={"cpu": "two"})], 2, "requests.cpu", "not a Kubernetes quantity"),
        ([header_line(), pod_line(limits={"cpu": "500m"})], 2, "limits.cpu", "below requests.cpu"),
        ([header_line(), pod_line(name="VM_0")], 2, "name", "not a valid name"),
        ([header_line(), pod_line(labels={"app": "a b"})], 2, "labels.app", "not a valid label value"),
        ([header_line(), pod_line(end=-1)], 2, "end", "finite number >= 0"),
        ([header_line(), pod_line(t=10, end=5)], 2, "end", "before the pod's t=10"),
        ([header_line(), pod_line(minMember=2)], 2, "minMember", "without a group"),
        ([header_line(), pod_line(priority=1.5)], 2, "priority", "not a 32-bit integer"),
        ([header_line(), pod_line(instanceType="")], 2, "instanceType", "non-empty string"),
        ([header_line(), pod_line(), pod_line(t=1)], 3, "name", "arrives again while its earlier arrival"),
        ([header_line(), {"type": "node"}], 2, "type", "not a record type"),
        ([header_line(), pod_line(requests=None)], 2, "requests", "mapping"),
    ],
)
def test_a_mistake_is_named_by_line_field_and_value(
    tmp_path: Path, lines: list[dict[str, Any]], line: int, field: str, says: str
) -> None:
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(TraceError) as raised:
        list(open_trace(path).records())
    error = raised.value
    assert (error.line, error.field) == (line, field), str(error)
    assert says in str(error)
    assert str(error).startswith(f"{path}:{line}: {field}=")
    assert error.fix


def test_a_pod_may_come_back_once_its_earlier_self_has_ended(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", [header_line(), pod_line(end=10), pod_line(t=10, end=None)])
    assert [record.t for record in open_trace(path).records()] == [0.0, 10.0]


def test_lines_that_are_not_json_objects_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(orjson.dumps(header_line()) + b"\n[1, 2]\n")
    with pytest.raises(TraceError, match=r":2: line=\[1, 2\]: is not a JSON object"):
        list(open_trace(path).records())
    path.write_bytes(orjson.dumps(header_line()) + b"\n{not json\n")
    with pytest.raises(TraceError, match=re.escape(":2: line='{not json': is not JSON")):
        list(open_trace(path).records())
    path.write_bytes(orjson.dumps(header_line()) + b"\n\n")
    with pytest.raises(TraceError, match=":2: line='': is empty"):
        list(open_trace(path).records())


def test_a_truncated_gzip_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    write_trace(path, HEADER, [UsageSample(float(i), "a", "b", 1.0, 1.0) for i in range(20000)])
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(TraceError, match="cut short or corrupt"):
        list(open_trace(path).records())


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot be read"):
        open_trace(tmp_path / "nope.jsonl")


def test_a_secsched_trace_takes_no_azure_options(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", [header_line()])
    with pytest.raises(TypeError, match="takes no options"):
        open_trace(path, max_vms=3)


def test_records_are_streamed_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "large.jsonl.gz"
    samples = (UsageSample(float(i // 100), "default", f"vm-{i % 100:05d}", 0.5, 2e9) for i in range(100_000))
    write_trace(path, HEADER, samples)
    size = len(gzip.decompress(path.read_bytes()))
    trace = open_trace(path)
    tracemalloc.start()
    try:
        consumed = sum(1 for _ in trace.records())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert consumed == 100_000
    assert size > 8 * 2**20
    assert peak < 2**20, f"{size / 2**20:.1f} MiB read with a peak of {peak / 2**20:.1f} MiB"
