"""How the volumes section's runs read in docs/benchmarks.md: what each run recorded, and the prose.

The measuring is in ``bench.volumes``; this module only reads its records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench import storage
from bench.context import BenchOptions
from bench.measuring import LABELS, SCHEDULER_NAME, best_run
from bench.report import (
    compared_runs_method,
    comparison_rows,
    every_run,
    load_note,
    milliseconds,
    number,
    table,
)
from bench.runinfo import RunInfo
from bench.stats import RunMeasures, ratio
from secsched_devtools.cluster import provisioner
from secsched_devtools.cluster.localcluster import PROVISIONER
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM

WARMUP_PODS = 10
STORAGE = "storage alone"


@dataclass(kw_only=True)
class VolumeRunRecord(RunMeasures):
    """One scheduler's one run at one size; ``throughput`` counts pods from the first created to
    the last pod bound and last claim Bound."""

    claims_bound: int
    phases: storage.Phases = field(default_factory=storage.Phases)
    violations: list[str] = field(default_factory=list)
    moved: int = 0
    """Pods bound elsewhere than the node first written on their claim (the provisioner refused it)."""
    load_after: float = math.nan

    def cpu_share(self, process: str) -> float:
        """CPUs the process kept busy on average over the run's span."""
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.span > 0 else seconds / self.span


@dataclass
class StorageRecord:
    """The storage stack alone at one size: claims with a node already chosen, no scheduler."""

    nodes: int
    order: int
    claims: int
    bound: int
    rate: float
    p50: float
    p99: float
    span: float
    phases: storage.Phases = field(default_factory=storage.Phases)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    busy_before: float = math.nan
    load_before: float = math.nan

    def cpu_share(self, process: str) -> float:
        seconds = self.cpu_seconds.get(process)
        return math.nan if seconds is None or not self.span > 0 else seconds / self.span


class VolumesReport:
    """The volumes section's Markdown, from its records."""

    name = "volumes"
    title = "PVC-bearing pods"
    options: BenchOptions
    records: list[VolumeRunRecord]
    storage_records: list[StorageRecord]
    cleanups: list[float]
    """Seconds each clean-up took (the next run waits for the whole capacity back)."""
    versions: dict[str, str]

    def best(self, nodes: int, kind: str) -> VolumeRunRecord | None:
        """The run with the highest throughput (complete runs first)."""
        return best_run(
            (r for r in self.records if r.nodes == nodes and r.kind == kind),
            lambda r: r.bound == r.pods and r.claims_bound == r.pods,
        )

    def render(self, run: RunInfo) -> str:
        options = run.options
        lines = [f"## {self.title}", "", run.measured(), "", *self._load_note(run), self._what(), ""]
        summary = []
        for nodes in options.volume_sizes:
            ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
            if ours is None or theirs is None:
                continue
            rates = self.storage_rates(nodes)
            summary.append(
                [
                    f"{nodes:,}",
                    f"{ours.pods:,}",
                    number(ours.throughput, 1),
                    number(theirs.throughput, 1),
                    f"**{number(ratio(ours.throughput, theirs.throughput), 2)}×**",
                    " / ".join(number(rate, 1) for rate in rates) or "–",
                    "; ".join(f"{LABELS[r.kind]}: {self._setter(r, rates)}" for r in (ours, theirs)),
                ]
            )
        if summary:
            header = [
                "nodes",
                "pods",
                "ours (pods/s)",
                "upstream (pods/s)",
                "ours / upstream",
                "storage alone (claims/s)",
                "pace set by",
            ]
            lines += ["### Summary", "", table(header, summary, align="rrrrrrl")]
        for nodes in options.volume_sizes:
            lines += self._pace(nodes)
            lines += self._size_tables(nodes)
        lines += self._all_runs()
        lines.append(self._method())
        return "\n".join(lines)

    def storage_rates(self, nodes: int) -> list[float]:
        """The storage stack alone's claims/s at this size, in the order measured."""
        return [r.rate for r in self.storage_records if r.nodes == nodes]

    @staticmethod
    def _setter(record: VolumeRunRecord, rates: Sequence[float]) -> str:
        setter = storage.pace_setter(record.throughput, record.phases.decided_rate, rates)
        return {"storage": "storage stack", "scheduler": "scheduler", "both": "both"}[setter]

    def _pace(self, nodes: int) -> list[str]:
        ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
        if ours is None or theirs is None:
            return []
        rates = self.storage_rates(nodes)
        runs: list[VolumeRunRecord | StorageRecord] = [*self.records, *self.storage_records]
        busiest = max((r.cpu_share(PROVISIONER) for r in runs if r.nodes == nodes), default=math.nan)
        sentences = [
            storage.pace_sentence(
                LABELS[r.kind], r.throughput, r.phases, r.cpu_ms_per_pod("scheduler"), rates
            )
            for r in (ours, theirs)
        ]
        return [
            f"### Who set the pace at {nodes:,} nodes",
            "",
            *(f"- {sentence}" for sentence in sentences),
            f"- The provisioner process kept at most {number(busiest, 2)} CPUs busy over any run (1.00 "
            "would be one Python process saturated); the storage stack's time goes to round trips: "
            "kube-controller-manager's PV controller handing each claim over and binding it, and the "
            "provisioner creating each PV and its Event in turn.",
            "",
        ]

    def _load_note(self, run: RunInfo) -> list[str]:
        return load_note(
            run.machine.cpus,
            run.load_before,
            self.records,
            self.options.quiet_margin,
            [r.load_before for r in self.storage_records],
        )

    def _what(self) -> str:
        ours = self.versions.get("secondary-scheduler", "?")
        upstream = self.versions.get("upstream kube-scheduler (scheduler-plugins build)", "?")
        sizes = ", ".join(sorted(set(storage.CLAIM_SIZES), key=lambda size: int(size.rstrip("Gi"))))
        return (
            "**What this measures.** Each pod mounts one PersistentVolumeClaim of the local cluster's "
            f"`{storage.STORAGE_CLASS}` class: WaitForFirstConsumer, node-local volumes made by the "
            "cluster's own provisioner once a scheduler has chosen a node, each node's free storage "
            "published as a CSIStorageCapacity and its volume limit in its CSINode (what a KubeVirt VM "
            "with a disk on hostpath-provisioner, LVMS or TopoLVM asks of a scheduler). VolumeBinding's "
            "Filter checks each node's free storage and NodeVolumeLimits its volume count; PreBind writes "
            "`volume.kubernetes.io/selected-node` on the claim, then waits, polling once a second (both "
            "schedulers), until the provisioner has made the PV and kube-controller-manager has bound it; "
            "only then is the pod bound. A pod is done when it is bound and its claim Bound, so its "
            "latency includes the storage stack's work (the same for both schedulers) and throughput can "
            "be set by the storage stack rather than the scheduler: *storage alone* is how fast claims "
            "with a node already chosen get Bound with no scheduler running, and the tables below split "
            "each pod's time into the scheduler's steps and the storage stack's. Both schedulers run the "
            f"throughput section's configuration (schedulerName `{SCHEDULER_NAME}`, the default plugins, "
            f"volume plugins included, qps {self.options.qps:g}, burst {self.options.burst}); ours is "
            f"`{ours}`, upstream's kube-scheduler `{upstream}`. Claims ask for {sizes}; every node has "
            f"the provisioner's default pool ({provisioner.DEFAULT_STORAGE}) and volume limit "
            f"({provisioner.DEFAULT_MAX_VOLUMES}), so all fit."
        )

    def _size_tables(self, nodes: int) -> list[str]:
        ours, theirs = self.best(nodes, OURS), self.best(nodes, UPSTREAM)
        if ours is None or theirs is None:
            return []
        rows = comparison_rows(
            ours,
            theirs,
            lambda record: [
                f"{record.bound:,}/{record.pods:,}",
                f"{record.claims_bound:,}/{record.pods:,}",
                f"{len(record.violations)}",
            ],
        )
        header = [
            "scheduler",
            "pods/s",
            "p50 latency (ms)",
            "p99 latency (ms)",
            "scheduler CPU/pod (ms)",
            "pods bound",
            "claims Bound",
            "PV not on the pod's node",
        ]
        lines = [f"### {nodes:,} nodes, {ours.pods:,} pods with a claim each", "", table(header, rows)]
        phase_rows = []
        for label, record in (("ours", ours), ("upstream", theirs)):
            phase_rows.append(
                [
                    label,
                    number(record.phases.decided_rate, 1),
                    number(record.phases.provisioned_rate, 1),
                    *(
                        f"{milliseconds(record.phases.p50.get(phase, math.nan))} / "
                        f"{milliseconds(record.phases.p99.get(phase, math.nan))}"
                        for phase in storage.PHASES
                    ),
                    number(record.cpu_share(PROVISIONER), 2),
                    number(record.cpu_share("kube-controller-manager"), 2),
                ]
            )
        for alone in (r for r in self.storage_records if r.nodes == nodes):
            phase_rows.append(
                [
                    f"{STORAGE} (#{alone.order})",
                    "",
                    number(alone.phases.provisioned_rate, 1),
                    *(
                        f"{milliseconds(alone.phases.p50.get(phase, math.nan))} / "
                        f"{milliseconds(alone.phases.p99.get(phase, math.nan))}"
                        for phase in storage.PHASES
                    ),
                    number(alone.cpu_share(PROVISIONER), 2),
                    number(alone.cpu_share("kube-controller-manager"), 2),
                ]
            )
        lines += [
            "Where the time went (the best runs above, and the storage stack alone). *given a node/s*: "
            "claims given `selected-node` per second, from the first pod created (the scheduler's pace); "
            "*Bound/s*: claims Bound per second from the first node choice (the storage stack's pace, as "
            "the scheduler fed it). Then p50 / p99 in ms of each step: *scheduled* (pod created → its "
            "claim has a node), *handed over* (→ kube-controller-manager hands the claim to the "
            "provisioner), *provisioned* (→ the PV exists), *volume bound* (→ claim Bound), *pod bound* "
            "(→ the scheduler's PreBind saw it and bound the pod). *provisioner*, *kcm*: CPUs the "
            "provisioner and kube-controller-manager kept busy on average over the run.",
            "",
            table(
                [
                    "run",
                    "given a node/s",
                    "Bound/s",
                    *(f"{phase} (ms)" for phase in storage.PHASES),
                    "provisioner (CPUs)",
                    "kcm (CPUs)",
                ],
                phase_rows,
                align="lrrrrrrrrr",
            ),
        ]
        misplaced = [text for record in (ours, theirs) for text in record.violations]
        if misplaced:
            lines += ["Misplaced volumes (first 10):", "", *(f"- {text}" for text in misplaced[:10]), ""]
        return lines

    def _all_runs(self) -> list[str]:
        rows = []
        entries: list[VolumeRunRecord | StorageRecord] = [*self.records, *self.storage_records]
        for record in sorted(entries, key=lambda entry: (entry.nodes, entry.order)):
            if isinstance(record, StorageRecord):
                rows.append(
                    [
                        f"{record.nodes:,}",
                        f"{record.order}",
                        STORAGE,
                        f"{record.bound:,}/{record.claims:,} claims",
                        number(record.rate, 1),
                        "",
                        milliseconds(record.p50),
                        milliseconds(record.p99),
                        "",
                        "",
                        "",
                        number(record.cpu_share(PROVISIONER), 2),
                        "",
                        f"{number(record.busy_before, 2)}",
                        f"{record.load_before:.2f}",
                    ]
                )
                continue
            rows.append(
                [
                    f"{record.nodes:,}",
                    f"{record.order}",
                    LABELS[record.kind],
                    f"{record.bound:,}/{record.pods:,} pods, {record.claims_bound:,} claims",
                    number(record.throughput, 1),
                    number(record.create_rate),
                    milliseconds(record.p50),
                    milliseconds(record.p99),
                    milliseconds(record.mean_attempt_seconds),
                    number(record.failed_attempts),
                    number(record.cpu_ms_per_pod("scheduler"), 2),
                    number(record.cpu_share(PROVISIONER), 2),
                    f"{len(record.violations)}",
                    f"{number(record.busy_before, 2)} ({number(record.idle_cpus, 2)})",
                    f"{record.load_before:.2f} → {record.load_after:.2f}",
                ]
            )
        header = [
            "nodes",
            "#",
            "run",
            "done",
            "pods/s (claims/s)",
            "created/s",
            "p50 (ms)",
            "p99 (ms)",
            "attempt (ms)",
            "unschedulable attempts",
            "sched CPU/pod (ms)",
            "provisioner (CPUs)",
            "misplaced",
            "busy before (idle)",
            "load",
        ]
        return every_run(
            "*created/s*: how fast the client created the pods. *attempt*: the "
            "scheduler's own mean `scheduler_scheduling_attempt_duration_seconds` (as it reports it). "
            "*unschedulable attempts*: attempts that found no node (for example a claim not yet in the "
            "scheduler's cache). *busy before*: CPUs the machine kept busy just before the run (in brackets: "
            "the idle cluster alone). *load*: the 1-minute load average at the start and end of the run.",
            header,
            rows,
            "rrllrrrrrrrrrrr",
        )

    def _method(self) -> str:
        options = self.options
        cleanup = (
            f" (it took {min(self.cleanups):.0f}-{max(self.cleanups):.0f} s here)" if self.cleanups else ""
        )
        return f"""\
### Method

{compared_runs_method(options.volume_sizes, options.repeats)}
- A run creates {WARMUP_PODS} warm-up pods with their claims (not measured), then all the measured
  claims, waits until its watch has seen them and the machine has settled, then creates the pods
  with {options.concurrency} requests in flight. Throughput is pods over the time from the first pod
  created to the last pod bound or claim Bound, whichever is later; a pod's latency runs from its
  creation to the first watch event showing it bound. Percentiles are nearest-rank. *scheduler
  CPU/pod* is the scheduler process's CPU time over that span, per pod bound.
- *Storage alone* (before the first and after the last scheduler run at each size): the same number
  of claims, created with `selected-node` already set (round robin over the nodes) and no scheduler
  running; claims per second from the first created to the last Bound.
- After each run the pods and claims are deleted and the next run waits until the provisioner has
  deleted every PV (reclaim policy Delete) and every node's CSIStorageCapacity shows its whole pool
  again{cleanup}, so every run starts with the same free storage.
- Placement check: after each run, every measured pod's claim must be Bound to a PV whose node
  affinity (`kubernetes.io/hostname In [...]`) names the pod's node.
- Raw numbers of every run: `volumes.json` in the run's working directory; the provisioner's log is
  the cluster's `logs/storage-provisioner.log`.
"""
