"""The secsched trace format (version 1): what every workload source becomes, read and written.

A trace is JSON Lines (UTF-8, gzipped when the name ends in ``.gz``): a header line, then
pod arrivals and usage samples in non-decreasing ``t`` (seconds from the trace's start).
docs/replay-inputs.md describes every field. The reader streams (a week of 10,000 VMs is
~20 million lines: never in memory at once) and is strict: an unknown field, a wrong type or
an out-of-order line stops it with the file, the line, the field, the value and the fix,
because a replay of a silently misread trace answers a question nobody asked.
"""

from __future__ import annotations

import gzip
import math
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol, cast

import numpy as np
import orjson

from secondary_scheduler.apivalidation import (
    Problem,
    check_annotations,
    check_labels,
    check_resources,
    dns_label_problem,
    dns_subdomain_problem,
    label_value_problem,
)
from secondary_scheduler.framework.aliases import FloatArray

TRACE_KIND = "SecschedTrace"
TRACE_VERSION = 1
TRACE_SOURCES = ("generated", "azure", "cluster")

OWNER_ANNOTATION = "replay.secsched.io/owner"
"""Where a pod's manifest carries the record's ``owner`` (an annotation: ``deployment/web`` holds a
'/', which no label value may)."""
INSTANCE_TYPE_ANNOTATION = "kubevirt.io/cluster-instancetype-name"
"""Where a pod's manifest carries the record's ``instanceType``: the annotation KubeVirt sets on a
VM (and its VMI) created from a cluster-wide instance type."""
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""The label Coscheduling reads a pod's group from (the record's ``group``)."""
LAUNCHER_LABELS = {"kubevirt.io": "virt-launcher"}
"""The label every virt-launcher pod carries; ``vm.kubevirt.io/name`` (the VM's name) is added too."""
LAUNCHER_CONTAINER = "compute"
LAUNCHER_IMAGE = "quay.io/kubevirt/virt-launcher"
_UID_NAMESPACE = uuid.UUID("6f1d3c52-3b8e-4f0e-9a49-5ad1c0a7e7b1")
"""uuid5 namespace of the pods' uids: one key, one uid, in every replay of a trace."""


class TraceError(ValueError):
    """A trace that cannot be read as written: where, which field, which value, and the fix."""

    def __init__(self, path: Path | str, line: int, field: str, value: Any, problem: str, fix: str) -> None:
        self.path, self.line, self.field, self.value = str(path), line, field, value
        self.problem, self.fix = problem, fix
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{path}:{line}: {field}={shown}: {problem}; {fix}")


@dataclass(frozen=True, slots=True)
class TraceHeader:
    """Line 1 of a trace: what it is, where it came from, the Unix time of its t=0."""

    kind: str = TRACE_KIND
    version: int = TRACE_VERSION
    start: float = 0.0
    """Unix seconds of t=0 (0 when the trace has no wall-clock anchor, as a generated one)."""
    source: str = "generated"
    """generated, azure or cluster."""
    description: str = ""
    seed: int | None = None
    """The seed that reproduces a generated trace (None when there is none)."""


@dataclass(frozen=True, slots=True)
class PodArrival:
    """A pod (a VM's virt-launcher pod) created at ``t``, deleted at ``end`` (None: not in the trace)."""

    t: float
    namespace: str
    name: str
    end: float | None
    requests: Mapping[str, str]
    limits: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner: str | None = None
    """The workload the pod belongs to (``deployment/web``, a VM pool): VMs of one owner arrive together."""
    instance_type: str | None = None
    """The KubeVirt instance type (or VM flavor) it was sized from, e.g. ``u1.medium``."""
    priority: int = 0
    group: str | None = None
    """The pod group (Coscheduling) it belongs to."""
    min_member: int | None = None
    """The group's minMember (only with ``group``)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        return str(uuid.uuid5(_UID_NAMESPACE, self.key))

    def manifest(self, scheduler_name: str) -> dict[str, Any]:
        """The v1 Pod KubeVirt's virt-launcher would create for this VM: one ``compute`` container with
        the record's requests and limits as they are (no overhead added: the record's requests are the
        pod's), the record's labels plus ``kubevirt.io: virt-launcher`` and ``vm.kubevirt.io/name``
        (unless the record sets them), ``group`` as Coscheduling's pod-group label, and ``owner`` and
        ``instanceType`` as annotations (OWNER_ANNOTATION, INSTANCE_TYPE_ANNOTATION)."""
        labels = {**LAUNCHER_LABELS, "vm.kubevirt.io/name": self.name, **self.labels}
        if self.group is not None:
            labels[POD_GROUP_LABEL] = self.group
        annotations = dict(self.annotations)
        if self.owner is not None:
            annotations[OWNER_ANNOTATION] = self.owner
        if self.instance_type is not None:
            annotations[INSTANCE_TYPE_ANNOTATION] = self.instance_type
        resources: dict[str, Any] = {"requests": dict(self.requests)}
        if self.limits:
            resources["limits"] = dict(self.limits)
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "labels": labels,
        }
        if annotations:
            metadata["annotations"] = annotations
        spec: dict[str, Any] = {
            "schedulerName": scheduler_name,
            "containers": [{"name": LAUNCHER_CONTAINER, "image": LAUNCHER_IMAGE, "resources": resources}],
        }
        if self.priority:
            spec["priority"] = self.priority
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@dataclass(frozen=True, slots=True)
class UsageSample:
    """What a pod uses from ``t`` until its next sample: cores (may exceed its requests) and bytes."""

    t: float
    namespace: str
    name: str
    cpu: float
    memory: float

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


TraceRecord = PodArrival | UsageSample


@dataclass(frozen=True, slots=True, eq=False)
class UsageBatch:
    """Usage samples of many pods at one instant, as arrays: what a trace hands a replay in one go
    (a generated week is 5.5 million samples: one Python object each costs more than replaying them).

    The same samples as ``samples()`` yields, in that order (a pod given twice: its last one holds)."""

    t: float
    keys: Sequence[str]
    """The pods' keys, ``namespace/name``."""
    cpu: FloatArray
    """Cores, per key."""
    memory: FloatArray
    """Bytes, per key."""

    def samples(self) -> Iterator[UsageSample]:
        t = self.t
        for key, cores, used in zip(self.keys, self.cpu.tolist(), self.memory.tolist(), strict=True):
            namespace, _, name = key.partition("/")
            yield UsageSample(t, namespace, name, cores, used)


ReplayRecord = PodArrival | UsageSample | UsageBatch
"""What a replay reads: a trace's records, with an instant's usage samples batched where the trace
makes them so (``Trace.stream``)."""


class Trace(Protocol):
    """A trace to replay: its header, and its records streamed in ``t`` order (again on every call)."""

    header: TraceHeader

    def records(self) -> Iterator[TraceRecord]:
        """One record per line of the trace file it is (or would be written as)."""
        ...

    def stream(self) -> Iterator[ReplayRecord]:
        """The same records for a replay: consecutive usage samples of one instant as UsageBatch."""
        ...


def batched(records: Iterable[TraceRecord]) -> Iterator[ReplayRecord]:
    """``records`` with each run of consecutive usage samples of one instant made one UsageBatch
    (for a trace that reads its samples one by one: the replay applies them per batch anyway)."""
    keys: list[str] = []
    cpu: list[float] = []
    memory: list[float] = []
    at = -1.0
    for record in records:
        if type(record) is UsageSample:
            if record.t != at and keys:
                yield UsageBatch(at, keys, np.array(cpu), np.array(memory))
                keys, cpu, memory = [], [], []
            at = record.t
            keys.append(f"{record.namespace}/{record.name}")
            cpu.append(record.cpu)
            memory.append(record.memory)
            continue
        if keys:
            yield UsageBatch(at, keys, np.array(cpu), np.array(memory))
            keys, cpu, memory = [], [], []
        yield record
    if keys:
        yield UsageBatch(at, keys, np.array(cpu), np.array(memory))


# -- reading --------------------------------------------------------------------------------------

_HEADER_FIELDS = frozenset({"kind", "version", "start", "source", "description", "seed"})
_USAGE_FIELDS = frozenset({"type", "t", "namespace", "name", "cpu", "memory"})
_POD_REQUIRED = frozenset({"type", "t", "namespace", "name", "requests"})
_POD_FIELDS = _POD_REQUIRED | {
    "end",
    "limits",
    "labels",
    "annotations",
    "owner",
    "instanceType",
    "priority",
    "group",
    "minMember",
}
_INT32 = 2**31 - 1
_NUMBERS = (float, int)


def _open_binary(path: Path, mode: Literal["rb", "wb"]) -> IO[bytes]:
    """A .gz is written with no timestamp in its header: one trace, one file, byte for byte."""
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.GzipFile(path, mode, compresslevel=6, mtime=0))
    return open(path, mode)


class SecschedTrace:
    """A secsched trace file: the header read on opening, the records streamed on each ``records()``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            with _open_binary(self.path, "rb") as stream:
                first = stream.readline()
        except (OSError, EOFError) as error:
            raise TraceError(
                self.path,
                1,
                "file",
                str(self.path),
                f"cannot be read ({error})",
                "give the path of a secsched trace (.jsonl, or .jsonl.gz gzipped whole)",
            ) from error
        self.header = _parse_header(_load(self.path, 1, first), self.path)

    def records(self) -> Iterator[TraceRecord]:
        """Every record after the header, checked, in ``t`` order (a decrease is refused)."""
        return cast(Iterator[TraceRecord], self._read(batching=False))  # batches only when batching

    def stream(self) -> Iterator[ReplayRecord]:
        """``records()`` with each run of usage lines of one instant as one UsageBatch, read without
        a UsageSample per line (the same checks: a line a quick check doubts is parsed in full)."""
        return self._read(batching=True)

    def _read(self, *, batching: bool) -> Iterator[ReplayRecord]:
        path = self.path
        previous_t = 0.0
        alive: dict[str, float] = {}  # pod key -> end (inf: no end) of its latest arrival
        keys: list[str] = []
        cpus: list[float] = []
        memories: list[float] = []
        at = 0.0
        with _open_binary(path, "rb") as stream:
            stream.readline()
            for number, line in _numbered_lines(stream, path):
                if not line.strip():
                    raise TraceError(path, number, "line", "", "is empty", "remove blank lines")
                obj = _load(path, number, line)
                usage = _plain_usage(obj) if batching else None
                record: TraceRecord | None = None
                if usage is None:
                    record = _parse_record(obj, path, number)
                    t = record.t
                    if batching and type(record) is UsageSample:  # a doubted line, valid after all
                        usage = (t, record.key, record.cpu, record.memory)
                else:
                    t = usage[0]
                if t < previous_t:
                    raise TraceError(
                        path,
                        number,
                        "t",
                        t,
                        f"is before the previous line's t={previous_t:g}",
                        "sort the records by t (the format is in time order)",
                    )
                previous_t = t
                if usage is not None:  # batching: the sample joins its instant's batch
                    if keys and t != at:
                        yield UsageBatch(at, keys, np.array(cpus), np.array(memories))
                        keys, cpus, memories = [], [], []
                    at = t
                    keys.append(usage[1])
                    cpus.append(usage[2])
                    memories.append(usage[3])
                    continue
                if keys:
                    yield UsageBatch(at, keys, np.array(cpus), np.array(memories))
                    keys, cpus, memories = [], [], []
                assert record is not None
                if type(record) is PodArrival:
                    still = alive.get(record.key)
                    if still is not None and still > record.t:
                        raise TraceError(
                            path,
                            number,
                            "name",
                            record.name,
                            f"{record.key} arrives again while its earlier arrival still lives "
                            f"(until {'the end' if still == math.inf else f't={still:g}'})",
                            "give the pod another name, or end the earlier one first",
                        )
                    alive[record.key] = math.inf if record.end is None else record.end
                yield record
        if keys:
            yield UsageBatch(at, keys, np.array(cpus), np.array(memories))


def _plain_usage(obj: dict[str, Any]) -> tuple[float, str, float, float] | None:
    """(t, pod key, cpu, memory) of a usage line that is plainly valid (every field present and of
    its type, numbers finite and >= 0: what ``_parse_record`` accepts); None for any other line,
    which ``_parse_record`` then reads (and refuses with its words, if it is wrong)."""
    if obj.get("type") != "usage" or obj.keys() != _USAGE_FIELDS:
        return None
    t, namespace, name, cpu, memory = obj["t"], obj["namespace"], obj["name"], obj["cpu"], obj["memory"]
    if (
        type(namespace) is str
        and type(name) is str
        and namespace
        and name
        and type(t) in _NUMBERS
        and type(cpu) in _NUMBERS
        and type(memory) in _NUMBERS
        and 0.0 <= t < math.inf
        and 0.0 <= cpu < math.inf
        and 0.0 <= memory < math.inf
    ):
        return float(t), f"{namespace}/{name}", float(cpu), float(memory)
    return None


def _numbered_lines(stream: IO[bytes], path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) from line 2 on; a file cut short (a truncated .gz) is named, not a traceback."""
    number = 1
    try:
        for number, line in enumerate(stream, start=2):
            yield number, line
    except (OSError, EOFError) as error:
        raise TraceError(
            path,
            number + 1,
            "file",
            str(path),
            f"cannot be read past line {number} ({error})",
            "the file is cut short or corrupt: write it again",
        ) from error


def _load(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise TraceError(
            path,
            number,
            "line",
            line[:60].decode("utf-8", "replace").rstrip(),
            f"is not JSON ({error})",
            "write one JSON object per line",
        ) from None
    if type(value) is not dict:
        raise TraceError(
            path, number, "line", value, "is not a JSON object", "write one JSON object per line"
        )
    return value


def _parse_header(obj: dict[str, Any], path: Path) -> TraceHeader:
    if obj.get("kind") != TRACE_KIND:
        raise TraceError(
            path,
            1,
            "kind",
            obj.get("kind"),
            f"line 1 is not a {TRACE_KIND} header",
            f'start the file with {{"kind": "{TRACE_KIND}", "version": {TRACE_VERSION}, ...}} '
            "(for the Azure dataset use --trace-format azure)",
        )
    _fields(obj, _HEADER_FIELDS, _HEADER_FIELDS, path, 1, "the header")
    version = obj["version"]
    if version != TRACE_VERSION or type(version) is not int:
        raise TraceError(
            path,
            1,
            "version",
            version,
            f"this secsched reads version {TRACE_VERSION}",
            f"write version {TRACE_VERSION} (or use the secsched that wrote it)",
        )
    start = _number(obj["start"], path, 1, "start")
    source = obj["source"]
    if source not in TRACE_SOURCES:
        raise TraceError(
            path, 1, "source", source, "is not a known source", f"one of {', '.join(TRACE_SOURCES)}"
        )
    description = obj["description"]
    if type(description) is not str:
        raise TraceError(path, 1, "description", description, "is not a string", "quote it")
    seed = obj["seed"]
    if seed is not None and type(seed) is not int:
        raise TraceError(path, 1, "seed", seed, "is not an integer or null", "write an integer or null")
    return TraceHeader(TRACE_KIND, TRACE_VERSION, start, source, description, seed)


def _parse_record(obj: dict[str, Any], path: Path, number: int) -> TraceRecord:
    kind = obj.get("type")
    if kind == "usage":
        if obj.keys() != _USAGE_FIELDS:
            _fields(obj, _USAGE_FIELDS, _USAGE_FIELDS, path, number, "a usage record")
        namespace, name = obj["namespace"], obj["name"]
        if type(namespace) is not str or type(name) is not str or not namespace or not name:
            bad = "namespace" if type(namespace) is not str or not namespace else "name"
            raise TraceError(
                path, number, bad, obj[bad], "is not a non-empty string", "give the pod's " + bad
            )
        return UsageSample(
            _number(obj["t"], path, number, "t"),
            namespace,
            name,
            _number(obj["cpu"], path, number, "cpu"),
            _number(obj["memory"], path, number, "memory"),
        )
    if kind == "pod":
        return _parse_pod(obj, path, number)
    raise TraceError(path, number, "type", kind, "is not a record type", 'write "pod" or "usage"')


def _parse_pod(obj: dict[str, Any], path: Path, number: int) -> PodArrival:
    _fields(obj, _POD_FIELDS, _POD_REQUIRED, path, number, "a pod record")
    t = _number(obj["t"], path, number, "t")
    problems: list[Problem] = []
    problem = dns_label_problem(obj["namespace"])
    if problem:
        problems.append(("namespace", problem, "a namespace name: lower-case letters, digits and '-'"))
    problem = dns_subdomain_problem(obj["name"])
    if problem:
        problems.append(("name", problem, "a pod name: lower-case letters, digits, '-' and '.'"))
    requests = _resources(obj["requests"], "requests", problems)
    limits = _resources(obj.get("limits", {}), "limits", problems)
    for resource, limit in limits.items():
        if resource in requests and requests[resource] > limit:
            problems.append(
                (f"limits.{resource}", f"is below requests.{resource}", "a limit is at least its request")
            )
    labels = obj.get("labels", {})
    annotations = obj.get("annotations", {})
    for name, mapping in (("labels", labels), ("annotations", annotations)):
        if type(mapping) is not dict:
            problems.append((name, "is not a mapping", 'write a mapping of strings: {"key": "value"}'))
    if not problems:
        check_labels(labels, "labels", problems)
        check_annotations(annotations, "annotations", problems)
    if problems:
        at, problem, fix = problems[0]
        raise TraceError(path, number, at, _at(obj, at), problem, fix)
    end = obj.get("end")
    if end is not None:
        end = _number(end, path, number, "end")
        if end < t:
            raise TraceError(path, number, "end", end, f"is before the pod's t={t:g}", "end at or after t")
    owner = _optional_string(obj, "owner", path, number)
    instance_type = _optional_string(obj, "instanceType", path, number)
    group = _optional_string(obj, "group", path, number)
    if group is not None and label_value_problem(group):
        raise TraceError(path, number, "group", group, "is not a valid label value", "a pod group's name")
    priority = obj.get("priority", 0)
    if type(priority) is not int or abs(priority) > _INT32:
        raise TraceError(path, number, "priority", priority, "is not a 32-bit integer", "write an integer")
    min_member = obj.get("minMember")
    if min_member is not None:
        if type(min_member) is not int or not 1 <= min_member <= _INT32:
            raise TraceError(path, number, "minMember", min_member, "is not a positive integer", "write >= 1")
        if group is None:
            raise TraceError(
                path,
                number,
                "minMember",
                min_member,
                "is set without a group",
                "set group, or drop minMember",
            )
    return PodArrival(
        t=t,
        namespace=obj["namespace"],
        name=obj["name"],
        end=end,
        requests={key: str(value) for key, value in obj["requests"].items()},
        limits={key: str(value) for key, value in obj.get("limits", {}).items()},
        labels=dict(labels),
        annotations=dict(annotations),
        owner=owner,
        instance_type=instance_type,
        priority=priority,
        group=group,
        min_member=min_member,
    )


def _resources(value: Any, at: str, problems: list[Problem]) -> dict[str, Any]:
    if type(value) is not dict:
        problems.append(
            (at, "is not a mapping", 'write a mapping of resource name to quantity: {"cpu": "1"}')
        )
        return {}
    for key, quantity in value.items():
        if type(quantity) is not str:
            problems.append((f"{at}.{key}", f"{quantity!r} is not a string", f'quote it: "{quantity}"'))
            return {}
    return check_resources(value, at, problems)


def _at(obj: Mapping[str, Any], at: str) -> Any:
    """The value a problem's field names (``labels.app`` is the label ``app``), for the error."""
    top, _, key = at.partition(".")
    value = obj.get(top)
    return value.get(key) if key and isinstance(value, Mapping) else value


def _fields(
    obj: Mapping[str, Any],
    known: frozenset[str],
    required: frozenset[str],
    path: Path,
    number: int,
    what: str,
) -> None:
    unknown = sorted(set(obj) - known)
    if unknown:
        raise TraceError(
            path,
            number,
            unknown[0],
            obj[unknown[0]],
            f"is not a field of {what}",
            f"remove it (the fields are {', '.join(sorted(known))})",
        )
    missing = sorted(required - set(obj))
    if missing:
        raise TraceError(path, number, missing[0], None, f"is missing from {what}", "add it")


def _number(value: Any, path: Path, number: int, name: str) -> float:
    kind = type(value)
    if (kind is not float and kind is not int) or not (0.0 <= value < math.inf):
        raise TraceError(
            path,
            number,
            name,
            value,
            "is not a finite number >= 0" if kind in (float, int) else f"is a {kind.__name__}, not a number",
            "write a number (seconds, cores or bytes) >= 0",
        )
    return float(value)


def _optional_string(obj: Mapping[str, Any], name: str, path: Path, number: int) -> str | None:
    value = obj.get(name)
    if value is not None and (type(value) is not str or not value):
        raise TraceError(path, number, name, value, "is not a non-empty string", "quote it, or leave it out")
    return value


# -- writing --------------------------------------------------------------------------------------


def header_json(header: TraceHeader) -> dict[str, Any]:
    return {
        "kind": header.kind,
        "version": header.version,
        "start": header.start,
        "source": header.source,
        "description": header.description,
        "seed": header.seed,
    }


def record_json(record: TraceRecord) -> dict[str, Any]:
    """A record as its line's object; optional fields at their defaults are left out (smaller files)."""
    if type(record) is UsageSample:
        memory = record.memory
        return {
            "type": "usage",
            "t": record.t,
            "namespace": record.namespace,
            "name": record.name,
            "cpu": record.cpu,
            "memory": int(memory) if memory.is_integer() else memory,
        }
    assert isinstance(record, PodArrival)
    line: dict[str, Any] = {
        "type": "pod",
        "t": record.t,
        "namespace": record.namespace,
        "name": record.name,
        "end": record.end,
        "requests": dict(record.requests),
    }
    optional = (
        ("limits", dict(record.limits)),
        ("labels", dict(record.labels)),
        ("annotations", dict(record.annotations)),
        ("owner", record.owner),
        ("instanceType", record.instance_type),
        ("priority", record.priority),
        ("group", record.group),
        ("minMember", record.min_member),
    )
    line.update((key, value) for key, value in optional if value)
    return line


def write_trace(path: Path, header: TraceHeader, records: Iterable[TraceRecord]) -> int:
    """Write a trace (gzipped if the name ends in .gz), streaming; returns the number of records.

    Records out of ``t`` order are refused (ValueError): the file would not read back."""
    path = Path(path)
    written = 0
    previous = 0.0
    with _open_binary(path, "wb") as stream:
        stream.write(orjson.dumps(header_json(header)) + b"\n")
        dumps, lines = orjson.dumps, []
        for record in records:
            if record.t < previous:
                raise ValueError(
                    f"{path}: record {written + 1} ({record.key}) at t={record.t:g} is before "
                    f"t={previous:g}: "
                    "a trace is written in time order"
                )
            previous = record.t
            lines.append(dumps(record_json(record)))
            written += 1
            if len(lines) == 4096:
                stream.write(b"\n".join(lines) + b"\n")
                lines.clear()
        if lines:
            stream.write(b"\n".join(lines) + b"\n")
    return written


def open_trace(path: Path, trace_format: Literal["secsched", "azure"] = "secsched", **options: Any) -> Trace:
    """A trace to replay: a secsched file, or (``azure``) a directory of the Azure Public Dataset V2
    VM trace (options: azure.AzureOptions' fields)."""
    if trace_format == "secsched":
        if options:
            raise TypeError(
                f"open_trace: a secsched trace takes no options (got {', '.join(sorted(options))}): "
                "they are the Azure reader's"
            )
        return SecschedTrace(Path(path))
    if trace_format == "azure":
        from secondary_scheduler.replay.azure import AzureOptions, AzureTrace

        return AzureTrace(Path(path), AzureOptions(**options))
    raise ValueError(f"trace format {trace_format!r} is not known: secsched or azure")
