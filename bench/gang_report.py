"""How the gang section's runs read in docs/benchmarks.md: what each run recorded, and the prose.

The measuring is in ``bench.gang``; this module only reads its records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.context import BenchOptions
from bench.measuring import LABELS, SCHEDULER_NAME, best_run
from bench.report import compared_runs_method, every_run, load_note, milliseconds, number, table
from bench.runinfo import RunInfo
from bench.stats import ratio
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM

WARMUP_MEMBERS = 8


@dataclass
class GangRunRecord:
    """One scheduler's one run at one size."""

    kind: str
    nodes: int
    repeat: int
    order: int
    groups: int
    pods: int
    bound: int
    complete_gangs: int
    throughput: float
    """Pods bound per second, from the first pod created to the last bound."""
    all_bound: float
    """Seconds from the first pod created until every gang was fully bound (NaN if one never was)."""
    create_rate: float
    p50: float
    """Per gang, first pod created -> last pod bound (seconds), nearest-rank over the complete gangs."""
    p99: float
    max_gang: float
    spread_p50: float = math.nan
    """Per gang, first pod bound -> last pod bound."""
    spread_p99: float = math.nan
    partial: list[str] = field(default_factory=list)
    """Gangs partly bound when the run ended (the placement check's violations)."""
    scheduled_attempts: float = math.nan
    failed_attempts: float = math.nan
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    busy_before: float = math.nan
    idle_cpus: float = math.nan
    load_before: float = math.nan
    load_after: float = math.nan

    def cpu_ms_per_pod(self, process: str) -> float:
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.bound else 1000 * seconds / self.bound


class GangReport:
    """The gang section's Markdown, from its records."""

    name = "gang"
    title = "Gangs (Coscheduling)"
    options: BenchOptions
    records: list[GangRunRecord]
    versions: dict[str, str]

    def best(self, nodes: int, kind: str) -> GangRunRecord | None:
        """The run with the highest throughput (runs with every gang bound first)."""
        return best_run(
            (r for r in self.records if r.nodes == nodes and r.kind == kind),
            lambda r: r.complete_gangs == r.groups,
        )

    def render(self, run: RunInfo) -> str:
        options = self.options
        ours_version = self.versions.get("secondary-scheduler", "?")
        upstream_version = self.versions.get("upstream kube-scheduler (scheduler-plugins build)", "?")
        low, high = options.gang_members
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            f"Both schedulers run the same one-profile configuration (schedulerName `{SCHEDULER_NAME}`, "
            "the default plugins plus Coscheduling as scheduler-plugins documents it: queueSort "
            "Coscheduling in place of PrioritySort, and Coscheduling at preFilter, postFilter, permit and "
            "reserve, with its default args: permitWaitingTimeSeconds 60, podGroupBackoffSeconds 0, "
            f"podGroupRejectPercentage 10) with the same client limits, qps {options.qps:g} and burst "
            f"{options.burst}; ours is `{ours_version}`, upstream's kube-scheduler `{upstream_version}`. "
            f"Each gang is a PodGroup of {low}-{high} pods with minMember its size (no "
            "scheduleTimeoutSeconds, so the 60 s default) and pods like the throughput section's "
            "(100m-500m CPU, 128-512Mi), so every gang fits. The best of "
            f"{options.repeats} runs per scheduler and size (by throughput) is shown; every run is listed "
            "further down.",
            "",
            *self._load_note(run),
        ]
        for nodes in options.gang_sizes:
            lines += self._size_table(nodes)
        lines += self._all_runs()
        lines.append(self._method())
        return "\n".join(lines)

    def _load_note(self, run: RunInfo) -> list[str]:
        return load_note(run.machine.cpus, run.load_before, self.records, self.options.quiet_margin)

    def _size_table(self, nodes: int) -> list[str]:
        ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
        if ours is None or theirs is None:
            return []

        def seconds(value: float) -> str:
            return number(value, 2)

        rows = [
            [
                label,
                number(record.throughput, 1),
                seconds(record.all_bound),
                milliseconds(record.p50),
                milliseconds(record.p99),
                number(record.cpu_ms_per_pod("scheduler"), 2),
                f"{record.complete_gangs:,}/{record.groups:,}",
                f"{len(record.partial)}",
            ]
            for label, record in (("ours", ours), ("upstream", theirs))
        ]
        ratios = [
            ratio(ours.throughput, theirs.throughput),
            ratio(ours.all_bound, theirs.all_bound),
            ratio(ours.p50, theirs.p50),
            ratio(ours.p99, theirs.p99),
            ratio(ours.cpu_ms_per_pod("scheduler"), theirs.cpu_ms_per_pod("scheduler")),
        ]
        rows.append(["ours / upstream", *(f"{number(value, 2)}×" for value in ratios), "", ""])
        header = [
            "scheduler",
            "pods/s",
            "every gang bound (s)",
            "gang p50 (ms)",
            "gang p99 (ms)",
            "scheduler CPU/pod (ms)",
            "gangs fully bound",
            "gangs partly bound",
        ]
        lines = [
            f"### {nodes:,} nodes, {ours.groups:,} gangs, {ours.pods:,} pods",
            "",
            "*gang p50/p99*: per gang, from its first pod created to its last pod bound. *gangs partly "
            "bound*: the placement check, gangs some but not all of whose pods were bound when the run "
            "ended (should be 0).",
            "",
            table(header, rows),
        ]
        partial = [f"{LABELS[r.kind]}: {text}" for r in (ours, theirs) for text in r.partial]
        if partial:
            lines += ["Partly bound gangs (first 10):", "", *(f"- {text}" for text in partial[:10]), ""]
        return lines

    def _all_runs(self) -> list[str]:
        rows = [
            [
                f"{r.nodes:,}",
                f"{r.order}",
                LABELS[r.kind],
                f"{r.complete_gangs:,}/{r.groups:,} gangs, {r.bound:,}/{r.pods:,} pods",
                number(r.throughput, 1),
                number(r.create_rate),
                number(r.all_bound, 2),
                milliseconds(r.p50),
                milliseconds(r.p99),
                f"{milliseconds(r.spread_p50)} / {milliseconds(r.spread_p99)}",
                number(r.failed_attempts),
                number(r.cpu_ms_per_pod("scheduler"), 2),
                f"{len(r.partial)}",
                f"{number(r.busy_before, 2)} ({number(r.idle_cpus, 2)})",
                f"{r.load_before:.2f} → {r.load_after:.2f}",
            ]
            for r in self.records
        ]
        header = [
            "nodes",
            "#",
            "scheduler",
            "bound",
            "pods/s",
            "created/s",
            "every gang bound (s)",
            "gang p50 (ms)",
            "gang p99 (ms)",
            "bind spread p50 / p99 (ms)",
            "unschedulable attempts",
            "sched CPU/pod (ms)",
            "partly bound",
            "busy before (idle)",
            "load",
        ]
        return every_run(
            "*created/s*: how fast the client created the pods. *bind spread*: per "
            "gang, from its first pod bound to its last (how together the gang went). *unschedulable "
            "attempts*: the scheduler's own count of attempts that did not place the pod (a gang's pods "
            "that come before their siblings are in the queue count here). *busy before*: CPUs the "
            "machine kept busy just before the run (in brackets: the idle cluster alone). *load*: the "
            "1-minute load average at the start and end of the run.",
            header,
            rows,
            "rrllrrrrrrrrrrr",
        )

    def _method(self) -> str:
        options = self.options
        return f"""\
### Method

{compared_runs_method(options.gang_sizes, options.repeats)}
- A run schedules one warm-up gang of {WARMUP_MEMBERS} pods (not measured), creates every measured
  PodGroup and waits until the machine has settled, then creates all the gangs' pods, gang after
  gang, with {options.concurrency} requests in flight. Gang sizes are drawn with a fixed seed per
  cluster size, so both schedulers get the same gangs.
- *pods/s*: pods bound over the time from the first pod created to the last pod bound; *every gang
  bound*: that time, when every gang was fully bound. A pod is created when the create call returns
  or the watch shows it, whichever is first, and bound at the first watch event with
  `spec.nodeName`. Percentiles are nearest-rank over the gangs. *scheduler CPU/pod* is the
  scheduler process's user and system CPU time over the run, per pod bound.
- Placement check: when every pod is bound (or nothing more got bound for {options.stall_timeout:g} s),
  the pods are listed and every gang with some but not all of its pods bound is reported.
- Raw numbers of every run: `gang.json` in the run's working directory.
"""
