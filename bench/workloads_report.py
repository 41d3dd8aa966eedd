"""How the workloads section's runs read in docs/benchmarks.md: what each run recorded, and the prose.

The measuring is in ``bench.workloads``; this module only reads its records (and quotes the
settings the measuring used).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from bench.context import BenchOptions
from bench.measuring import (
    LABELS,
    SCHEDULER_NAME,
    best_run,
)
from bench.profiles import Profile
from bench.report import every_run, milliseconds, number, table
from bench.runinfo import RunInfo
from bench.stats import RunMeasures, percentile, ratio
from bench.workloadclasses import (
    BY_NAME,
    LOAD_AWARE,
    LOAD_CLASSES,
    LOAD_LEVELS,
    LOAD_VARIATION,
    RISK_THRESHOLD,
    TARGET_LOAD_PACKING,
)
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM

SATURATION = "saturation"
OPEN_LOOP = "open-loop"
KEPT_VIOLATIONS = 20
"""Violations kept per run (all are counted)."""
METRICS_SETTLE = 1.0
"""Seconds to wait before reading the scheduler's counters: kube-scheduler counts an attempt after
its binding returns, which the benchmark's watch can see first."""
PVC_PODS = 200
PVC_OPEN_LOOP_PODS = 60
"""The pvc class measures at most these many pods: upstream's VolumeBinding spends about half a
second of CPU per pod at 1,000 nodes (the volumes section), more with more nodes, so the class at
full size would take most of the section's hour by itself."""
DRA_PODS = 1000
DRA_OPEN_LOOP_PODS = 200
"""The dra class measures at most these many pods: allocating devices costs both schedulers tens of
ms of CPU per pod at 1,000 nodes (3.6-4.2 pods/s there), so the class at 5,000 nodes and full size
would take over half an hour by itself."""
LOAD_SCRAPE_INTERVAL = "15s"
"""Prometheus' scrape interval while a load class runs (its own default). At 5,000 nodes
a scrape is 10,000 series, about 0.12 s of the exporter's CPU: under 1 % of a core at this
interval, which still gives the schedulers' collectors (every 30 s) a fresh sample each time."""


@dataclass(kw_only=True)
class WorkloadRecord(RunMeasures):
    """One scheduler's one run of one class at one size."""

    klass: str
    mode: str
    """``saturation`` (pods created as fast as the client can) or ``open-loop`` (at ``rate``)."""
    existing: int
    rate: float = math.nan
    """The open-loop arrival rate asked for (pods/s)."""
    schedule_lag: float = math.nan
    """Open loop: the most a pod's create call started after its due time (seconds)."""
    unschedulable: int = 0
    """Pods of the stream that fit nowhere (the churn class), left pending; ``pods`` counts the others."""
    victims: int = 0
    """Pre-existing pods gone at the end of the run (the preemption class's victims)."""
    violation_count: int = 0
    violations: list[str] = field(default_factory=list)
    """The first few placement violations (``rule: what``)."""
    profile: Profile | None = None
    """Where our scheduler's time went (with ``--profile``; open loop with ``--profile-open-loop``)."""
    over_target: int | None = None
    """The load classes: bound measured pods on nodes whose CPU load ends above the class's
    threshold (TargetLoadPacking's target; for LoadVariationRiskBalancing, mean + margin x stddev
    over ``RISK_THRESHOLD``: ``workloadclasses.load_outcome``); a soft measure, not a violation."""
    hot_start: int | None = None
    """Of those, the pods on nodes above the threshold before any measured pod came."""
    latencies: list[float] = field(default_factory=list)
    """Open loop: each bound measured pod's latency (seconds), pooled over a scheduler's runs."""

    @property
    def machine_busy(self) -> float:
        """CPUs every process measured (control plane, KWOK, client, scheduler) kept busy over the
        span: near the machine's count, latency measures the machine's queue, not the scheduler."""
        if not self.cpu_seconds or not self.span or math.isnan(self.span):
            return math.nan
        return sum(self.cpu_seconds.values()) / self.span


@dataclass
class Skipped:
    nodes: int
    klass: str
    reason: str


def open_loop_rule(options: BenchOptions) -> str:
    """How the open-loop rate was chosen, in words, as both the section's intro and its method say it."""
    ceiling = f" and at most {options.open_loop_max_rate:g} pods/s" if options.open_loop_max_rate else ""
    return f"{options.open_loop_fraction:g} × the lower of the two saturation throughputs{ceiling}"


class WorkloadsReport:
    """The workloads section's Markdown, from its records."""

    name = "workloads"
    title = "Workload classes"
    options: BenchOptions
    records: list[WorkloadRecord]
    skipped: list[Skipped]
    versions: dict[str, str]

    def best(self, nodes: int, klass: str, kind: str, mode: str) -> WorkloadRecord | None:
        """The run with the highest throughput (complete runs first)."""
        return best_run(
            (r for r in self.records if (r.nodes, r.klass, r.kind, r.mode) == (nodes, klass, kind, mode)),
            lambda r: r.bound == r.pods,
        )

    def open_loop_latency(self, nodes: int, klass: str, kind: str) -> tuple[float, float]:
        """(p50, p99) of a scheduler's open-loop runs of a class, their pods' latencies pooled."""
        wanted = (nodes, klass, kind, OPEN_LOOP)
        runs = [r for r in self.records if (r.nodes, r.klass, r.kind, r.mode) == wanted]
        pooled = [latency for run in runs for latency in run.latencies]
        return percentile(pooled, 0.50), percentile(pooled, 0.99)

    def violations(self, nodes: int, klass: str, kind: str) -> int:
        return sum(
            r.violation_count for r in self.records if (r.nodes, r.klass, r.kind) == (nodes, klass, kind)
        )

    def render(self, run: RunInfo) -> str:
        options = self.options
        ours_version = self.versions.get("secondary-scheduler", "?")
        upstream_version = self.versions.get("upstream kube-scheduler (scheduler-plugins build)", "?")
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            "The classes of kube-scheduler's own benchmark suite (scheduler_perf): pods with pod "
            "(anti-)affinity, node affinity, topology spreading, a stream with unschedulable pods, "
            "preemption, PVCs and DRA ResourceClaims from a template, each measured on a cluster that "
            "already holds pods of the same class. "
            f"Both schedulers run the throughput section's one-profile configuration (schedulerName "
            f"`{SCHEDULER_NAME}`, the default plugins; the `{LOAD_AWARE}` and `{LOAD_VARIATION}` classes "
            f"seed 000's load-aware profile, below) with qps {options.qps:g} and burst {options.burst}; "
            f"ours is `{ours_version}`, upstream's kube-scheduler `{upstream_version}`. "
            "*open loop*: the same pods created at a fixed rate, the same for both schedulers, "
            f"{open_loop_rule(options)}, so both schedulers and the machine keep up and the latency "
            "is the scheduler's own rather than a queue's. *violations*: bound pods "
            "breaking a hard constraint, over all the class's runs (0 expected).",
            "",
        ]
        for nodes in options.workload_sizes:
            lines += self._summary(nodes)
        if self.skipped:
            lines += [
                "Not measured: "
                + "; ".join(f"{s.klass} at {s.nodes:,} nodes ({s.reason})" for s in self.skipped)
                + ".",
                "",
            ]
        if "pvc" not in options.workload_classes:
            lines += ["The `pvc` class was not part of this run.", ""]
        else:
            lines += [
                f"The `pvc` class measures at most {PVC_PODS} pods ({PVC_OPEN_LOOP_PODS} in open loop): "
                "upstream's VolumeBinding spends about half a second of CPU per pod at 1,000 nodes (see "
                "the PVC section), so a full-size run would take most of an hour by itself.",
                "",
            ]
        if "dra" in options.workload_classes:
            lines += [
                f"The `dra` class measures at most {DRA_PODS} pods ({DRA_OPEN_LOOP_PODS} in open loop): "
                "allocating devices costs both schedulers tens of ms of CPU per pod, so a full-size "
                "run at 5,000 nodes would take over half an hour by itself.",
                "",
            ]
        lines += self._classes()
        lines += self._load_classes()
        lines += self._profiles()
        lines += self._all_runs()
        lines.append(self._method())
        return "\n".join(lines)

    def _summary(self, nodes: int) -> list[str]:
        rows = []
        for klass in self.options.workload_classes:
            ours, theirs = (self.best(nodes, klass, kind, SATURATION) for kind in (OURS, UPSTREAM))
            if ours is None or theirs is None:
                continue
            open_ours = self.best(nodes, klass, OURS, OPEN_LOOP)
            rate = open_ours.rate if open_ours is not None else math.nan
            open_p99 = [self.open_loop_latency(nodes, klass, kind)[1] for kind in (OURS, UPSTREAM)]
            cpu = [r.cpu_ms_per_pod("scheduler") for r in (ours, theirs)]
            broken = [self.violations(nodes, klass, kind) for kind in (OURS, UPSTREAM)]
            shown = " / ".join(f"**{count}**" if count else "0" for count in broken)
            rows.append(
                [
                    f"`{klass}`",
                    f"{nodes:,}",
                    f"{ours.existing:,} / {ours.pods:,}",
                    number(ours.throughput, 1),
                    number(theirs.throughput, 1),
                    f"**{number(ratio(ours.throughput, theirs.throughput), 2)}×**",
                    f"{milliseconds(ours.p99)} / {milliseconds(theirs.p99)}",
                    number(rate),
                    milliseconds(open_p99[0]),
                    milliseconds(open_p99[1]),
                    f"{number(ratio(open_p99[0], open_p99[1]), 2)}×",
                    number(cpu[0], 2),
                    number(cpu[1], 2),
                    f"{number(ratio(cpu[0], cpu[1]), 2)}×",
                    shown,
                ]
            )
        if not rows:
            return []
        header = [
            "class",
            "nodes",
            "pre-existing / measured pods",
            "ours (pods/s)",
            "upstream (pods/s)",
            "ours / upstream",
            "p99 ours / upstream (ms)",
            "open-loop rate (pods/s)",
            "open-loop p99 ours (ms)",
            "upstream (ms)",
            "ours / upstream",
            "sched CPU/pod ours (ms)",
            "upstream (ms)",
            "ours / upstream",
            "violations ours / upstream",
        ]
        return [f"### {nodes:,} nodes", "", table(header, rows, align="l" + "r" * 14)]

    def _load_classes(self) -> list[str]:
        """Each load class measured: its profile, load and Prometheus, and where its pods went
        against its plugin's threshold."""
        lines: list[str] = []
        for klass, profile, soft in (
            (LOAD_AWARE, self._packing_profile(), self._packing_soft()),
            (LOAD_VARIATION, self._variation_profile(), self._variation_soft()),
        ):
            if klass in self.options.workload_classes:
                paragraph = " ".join((profile, self._load_setup(), soft))
                lines += [f"### The `{klass}` class", "", paragraph, "", *self._load_table(klass)]
        return lines

    @staticmethod
    def _packing_profile() -> str:
        return (
            "Both schedulers run seed 000's profile as `deploy/06_configmap.yaml` ships it: "
            "TargetLoadPacking with targetUtilization 70, defaultRequests cpu 2000m and "
            "defaultRequestsMultiplier 1, reading the cluster's Prometheus (metricProvider type "
            "Prometheus); NodeResourcesBalancedAllocation disabled; every other plugin a default one. "
            f"LoadVariationRiskBalancing is not in it (it has the `{LOAD_VARIATION}` class): upstream's "
            "kube-scheduler (scheduler-plugins v0.34.7) panics at start with two Trimaran plugins reading "
            "a metric provider, each starting a load-watcher that registers `/watcher` on Go's default "
            "ServeMux."
        )

    @staticmethod
    def _variation_profile() -> str:
        return (
            f"Both schedulers run the `{LOAD_AWARE}` class's profile with LoadVariationRiskBalancing in "
            "TargetLoadPacking's place (the same extension point and metricProvider, the cluster's "
            "Prometheus): its args upstream's defaults, safeVarianceMargin 1 and safeVarianceSensitivity "
            "1; NodeResourcesBalancedAllocation disabled; every other plugin a default one. It scores a "
            "node by its riskier resource, risk = (mean + margin × stddev) / 2, the mean being the "
            "measured load plus the pod's request, as shares of the node's allocatable."
        )

    @staticmethod
    def _load_setup() -> str:
        """What both load classes share: Prometheus for the class alone, and the nodes' fixed loads."""
        levels = ", ".join(f"{100 * level:.0f}" for level in LOAD_LEVELS)
        return (
            "Prometheus and the node-load exporter run for this class alone: started before its first "
            f"run with an empty database, scraping every {LOAD_SCRAPE_INTERVAL}, and stopped after its "
            f"last, so that no other class is measured with them. Each node carries a fixed CPU load, one "
            f"of {levels} % drawn per node with the size as seed (the same in both load classes; memory "
            "load 0.6 of it), without noise and without load from pods: every sample of a node is the "
            "same, so both schedulers read the same averages whichever runs first (with pods counted, "
            "the 15-minute averages would still hold the previous run's pods). Its pods have no "
            "constraint beyond resources, which the placement check holds them to."
        )

    @staticmethod
    def _packing_soft() -> str:
        return (
            "*over target*: bound measured pods on a node whose CPU load ends above the target, counting "
            "the node's own load and TargetLoadPacking's prediction of the measured pods bound there (a "
            "soft measure, not a violation); *of them, already over*: those on a node above the target "
            "before any of them."
        )

    @staticmethod
    def _variation_soft() -> str:
        return (
            "Without noise every node's stddev is 0, so the margin term adds nothing and the plugin "
            "spreads pods by mean load alone: the load exporter's only variation is Gaussian noise drawn "
            "at each scrape, whose `stddev_over_time` over the 15-minute window both schedulers query "
            "depends on the samples a run's window holds (a single one just after Prometheus starts), "
            "so it would not be the same for both. *over risk*: bound measured pods on a node whose CPU "
            f"mean + margin × stddev ends above {RISK_THRESHOLD} %, counting the node's own load and the "
            "requests of the measured pods bound there (the plugin has no threshold of its own; this is "
            f"the `{LOAD_AWARE}` class's target, so the two read alike; a soft measure, not a "
            "violation); *of them, already over*: those on a node above it before any of them."
        )

    def _load_table(self, klass: str) -> list[str]:
        """A load class's runs: how many of its pods went over its threshold."""
        rows = [
            [
                f"{r.nodes:,}",
                f"{r.order}",
                r.mode if r.mode == SATURATION else f"{r.mode} {number(r.rate)}/s",
                LABELS[r.kind],
                f"{r.bound:,}/{r.pods:,}",
                f"{r.over_target:,}" if r.over_target is not None else "–",
                f"{r.hot_start:,}" if r.hot_start is not None else "–",
            ]
            for r in self.records
            if r.klass == klass
        ]
        if not rows:
            return []
        over = "over target" if LOAD_CLASSES[klass] == TARGET_LOAD_PACKING else "over risk"
        header = ["nodes", "#", "run", "scheduler", "bound", over, "of them, already over"]
        return [table(header, rows, align="rrllrrr")]

    def _profiles(self) -> list[str]:
        """Where our scheduler's time went in each of its runs (py-spy)."""
        profiled = [r for r in self.records if r.profile is not None and r.profile.busy]
        if not profiled:
            return []
        lines = ["### Where our scheduler's time goes", ""]
        lines += [
            "py-spy sampled our scheduler's stacks 100 times a second over the measured span of its "
            "saturation runs (and of its open-loop runs with `--profile-open-loop`); shares are of the "
            "samples where it was running Python rather than waiting for the network. *phases* count "
            "a sample for every phase on its stack; *functions* are where the samples were (self "
            "time), the top few.",
            "",
        ]
        rows = []
        for r in profiled:
            assert r.profile is not None
            phases = ", ".join(f"{name.strip()} {share:.0%}" for name, share in r.profile.phases if share)
            functions = "<br>".join(f"{share:.0%} `{name}`" for name, share in r.profile.functions[:5])
            run = f"{r.mode} {r.rate:g}/s" if r.mode == OPEN_LOOP else r.mode
            rows.append([f"{r.nodes:,}", f"`{r.klass}`", run, f"{r.profile.busy:,}", phases, functions])
        header = ["nodes", "class", "run", "busy samples", "phases", "functions (self)"]
        return [*lines, table(header, rows, align="rllrll"), ""]

    def _classes(self) -> list[str]:
        rows = [
            [f"`{name}`", BY_NAME[name].models, BY_NAME[name].what] for name in self.options.workload_classes
        ]
        return ["### The classes", "", table(["class", "scheduler_perf", "pods"], rows, align="lll")]

    def _all_runs(self) -> list[str]:
        rows = []
        for r in self.records:
            rows.append(
                [
                    f"{r.nodes:,}",
                    f"{r.order}",
                    f"`{r.klass}`",
                    r.mode if r.mode == SATURATION else f"{r.mode} {number(r.rate)}/s",
                    LABELS[r.kind],
                    f"{r.bound:,}/{r.pods:,}" + (f" (+{r.unschedulable} pending)" if r.unschedulable else ""),
                    number(r.throughput, 1),
                    number(r.create_rate),
                    milliseconds(r.p50),
                    milliseconds(r.p99),
                    milliseconds(r.max_latency),
                    f"{number(r.scheduled_attempts)} / {number(r.failed_attempts)}",
                    number(r.cpu_ms_per_pod("scheduler"), 2),
                    f"{r.victims:,}" if r.victims else "",
                    f"**{r.violation_count}**" if r.violation_count else "0",
                    f"{number(r.busy_before, 2)} ({number(r.idle_cpus, 2)})",
                    number(r.machine_busy, 2),
                ]
            )
        if not rows:
            return []
        header = [
            "nodes",
            "#",
            "class",
            "run",
            "scheduler",
            "bound",
            "pods/s",
            "created/s",
            "p50 (ms)",
            "p99 (ms)",
            "max (ms)",
            "attempts scheduled / failed",
            "sched CPU/pod (ms)",
            "victims",
            "violations",
            "busy before (idle)",
            "busy during",
        ]
        lines = every_run(
            "*created/s*: how fast the client created the pods. *attempts*: the "
            "scheduler's own `scheduler_schedule_attempts_total` during the measured span (failed: "
            "unschedulable or error). *victims*: pre-existing pods the scheduler preempted. *busy before*: "
            "CPUs the machine kept busy just before the run (in brackets: the idle cluster alone). "
            "*busy during*: CPUs the scheduler, the control plane, KWOK and the client kept busy "
            "during the run, of the machine's "
            f"{os.cpu_count() or '?'}.",
            header,
            rows,
            "rrlllrrrrrrrrrrrr",
        )
        broken = [(r, text) for r in self.records for text in r.violations]
        if broken:
            lines += [
                "Placement violations (first 10):",
                "",
                *(f"- run {r.order} ({LABELS[r.kind]}, `{r.klass}`): {text}" for r, text in broken[:10]),
                "",
            ]
        return lines

    def _method(self) -> str:
        options = self.options
        sizes = ", ".join(f"{size:,}" for size in options.workload_sizes)
        return f"""\
### Method

- The cluster and the scheduler processes are the throughput section's: at each size ({sizes} nodes
  here) both schedulers run in turn, never at the same time, each a fresh process with the same
  flags and configuration, each waiting for its caches to sync and scheduling {options.warmup_pods}
  warm-up pods (not measured) first. Each class has a namespace of its own.
- Before a class's first run, its pre-existing pods are created already bound to nodes the benchmark
  chooses so that they keep the class's own constraints (one per host for hostname anti-affinity,
  all in the first zone for zone affinity, balanced over the zones otherwise); the preemption class
  has one on every node. They stay for all the class's runs; between runs only the measured pods
  are deleted, and the preemption class's victims are created again where they were, so both
  schedulers start from the same state.
- Saturation: {options.workload_repeats} run(s) per scheduler, the one going first alternating class
  by class; the measured pods are created as fast as the client can ({options.concurrency} requests
  in flight). *pods/s*: pods bound over the time from the first created to the last bound; latency
  from a pod's creation (the create call returning or the watch showing it) to the first watch
  event with `spec.nodeName`; percentiles are nearest-rank. In the churn class only the
  schedulable pods count; the others stay pending until the run's end.
- Open loop{"" if options.open_loop else " (off in this run)"}: {options.open_loop_repeats} runs of
  {options.open_loop_pods} pods per scheduler and class, in ABBA order, pod i created at
  t0 + i / rate (each create starts on time, at most {options.concurrency} in flight), with
  rate = {open_loop_rule(options)} for the class, rounded down. The open-loop p99 in the
  summary is of the runs' latencies pooled (one run's p99 of 500 pods is its fifth-slowest pod:
  it moved up to 2× between runs of either scheduler). Without a ceiling (until 2026-11-24) the
  cheap classes ran at 58-110 pods/s and the whole 2-CPU machine (API server, etcd, KWOK,
  client and scheduler) was 80-96 % busy: each pod costs the control plane 2-3× more CPU
  arriving alone than in a burst, and latency measured the machine's queue (`basic` at 1,000
  nodes: medians 3.0/2.9 ms ours/upstream at 77 pods/s, 16.3/6.0 at 110); *busy during* in the
  table above shows how loaded each run was.
- *sched CPU/pod*: the scheduler process's user and system CPU time during the measured span, per
  pod bound. *attempts*: from the scheduler's own metrics.
- The `{LOAD_AWARE}` and `{LOAD_VARIATION}` classes: seed 000's load-aware profile
  (TargetLoadPacking), and the same with LoadVariationRiskBalancing in its place, each on a
  Prometheus and a node-load exporter that run for that class alone (their paragraphs above say
  how); their pods are the basic ones.
- Placement check, after every run: the namespace's pods and the nodes are listed and every bound
  pod is checked against its node selector and required node affinity, its required pod
  anti-affinity (no two pods in one domain where either's term selects the other), its required
  pod affinity (a pod the term selects in its domain; a pod selecting itself may have been the
  first), its hard topology spread (over the domains of the nodes it admits, the counts of the
  pods it selects differ by at most maxSkew), the nodes' allocatable CPU, memory and pods, and
  for PVC-bearing pods, their volume pinned to their node.
- Raw numbers of every run: `workloads.json` in the run's working directory; beside it, under
  `workloads-<nodes>/`, each scheduler's log and its whole `/metrics` page just before and after
  the measured span (`<run>-<class>-<mode>.metrics-before.txt`, `-after.txt`), from which the time
  inside the scheduler (`scheduler_pod_scheduling_sli_duration_seconds`, attempt durations by
  result) can be set against the end-to-end latency afterwards.
"""
