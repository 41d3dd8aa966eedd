"""How the throughput section's runs read in docs/benchmarks.md: what each run recorded, and the prose.

The measuring is in ``bench.throughput``; this module only reads its records.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.context import BenchOptions
from bench.measuring import LABELS, SCHEDULER_NAME, best_run
from bench.report import comparison_rows, every_run, milliseconds, number, table
from bench.runinfo import RunInfo
from bench.stats import RunMeasures, ratio
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM

KUBE_DEFAULT_QPS = 50.0
KUBE_DEFAULT_BURST = 100


@dataclass(kw_only=True)
class RunRecord(RunMeasures):
    """One scheduler's one run at one size."""

    qps: float
    burst: int
    watch_events: int = 0


class ThroughputReport:
    """The throughput section's Markdown, from its records."""

    name = "throughput"
    title = "Throughput and latency"
    options: BenchOptions
    records: list[RunRecord]

    def best(self, nodes: int, kind: str, qps: float) -> RunRecord | None:
        """The run with the highest throughput (complete runs first)."""
        return best_run(
            (r for r in self.records if r.nodes == nodes and r.kind == kind and r.qps == qps),
            lambda r: r.bound == r.pods,
        )

    def render(self, run: RunInfo) -> str:
        options = run.options
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            f"Both schedulers run the same one-profile configuration (schedulerName `{SCHEDULER_NAME}`, "
            f"the default plugins, leader election off) with the same client limits, "
            f"qps {options.qps:g} and burst {options.burst}, as kube-scheduler's scheduler_perf sets them, "
            "so that neither waits on its own rate limiter. Nodes are 16 CPUs / 64Gi / 110 pods; the pods "
            "ask for 100m-500m CPU and 128-512Mi memory, so all fit. The best of "
            f"{options.repeats} runs per scheduler and size (by throughput) is shown; every run is listed "
            "further down.",
            "",
        ]
        summary_rows = []
        for nodes in options.sizes:
            ours = self.best(nodes, OURS, options.qps)
            theirs = self.best(nodes, UPSTREAM, options.qps)
            if ours is None or theirs is None:
                continue
            summary_rows.append(
                [
                    f"{nodes:,}",
                    f"{ours.pods:,}",
                    number(ours.throughput, 1),
                    number(theirs.throughput, 1),
                    f"**{number(ratio(ours.throughput, theirs.throughput), 2)}×**",
                ]
            )
        if summary_rows:
            lines += [
                "### Summary",
                "",
                table(
                    ["nodes", "pods", "ours (pods/s)", "upstream (pods/s)", "ours / upstream"], summary_rows
                ),
            ]
        for nodes in options.sizes:
            lines += self._size_table(nodes, options.qps, options.burst)
        if options.kube_default:
            smallest = min(options.sizes)
            ours = self.best(smallest, OURS, KUBE_DEFAULT_QPS)
            if ours is not None:
                lines += [
                    f"### With kube-scheduler's default client limits (qps {KUBE_DEFAULT_QPS:g}, "
                    f"burst {KUBE_DEFAULT_BURST}), {smallest:,} nodes",
                    "",
                    "One run each. A binding is one API request, so after the burst of 100 both "
                    "schedulers are held to about 50 pods/s by their own rate limiter (Events go "
                    "through a client of their own in both).",
                    "",
                    *self._size_table(smallest, KUBE_DEFAULT_QPS, KUBE_DEFAULT_BURST, heading=False),
                ]
        lines += self._all_runs()
        lines += [self._method()]
        return "\n".join(lines)

    def _size_table(self, nodes: int, qps: float, burst: int, heading: bool = True) -> list[str]:
        ours = self.best(nodes, OURS, qps)
        theirs = self.best(nodes, UPSTREAM, qps)
        if ours is None or theirs is None:
            return []
        rows = comparison_rows(ours, theirs, lambda record: [f"{record.bound:,}/{record.pods:,}"])
        title = [f"### {nodes:,} nodes, {ours.pods:,} pods", ""] if heading else []
        header = [
            "scheduler",
            "pods/s",
            "p50 latency (ms)",
            "p99 latency (ms)",
            "scheduler CPU/pod (ms)",
            "bound",
        ]
        return [*title, table(header, rows)]

    def _all_runs(self) -> list[str]:
        rows = []
        for record in self.records:
            rows.append(
                [
                    f"{record.nodes:,}",
                    f"{record.order}",
                    LABELS[record.kind],
                    f"{record.qps:g}/{record.burst}",
                    f"{record.bound:,}/{record.pods:,}",
                    number(record.throughput, 1),
                    number(record.create_rate),
                    milliseconds(record.p50),
                    milliseconds(record.p99),
                    milliseconds(record.max_latency),
                    milliseconds(record.mean_attempt_seconds),
                    number(record.cpu_ms_per_pod("scheduler"), 2),
                    number(record.cpu_ms_per_pod("kube-apiserver"), 2),
                    f"{number(record.busy_before, 2)} ({number(record.idle_cpus, 2)})",
                ]
            )
        return every_run(
            "*created/s*: how fast the client created the pods (the most any "
            "scheduler could reach). *attempt*: the scheduler's own mean "
            "`scheduler_scheduling_attempt_duration_seconds` (scheduling plus binding, as it reports "
            "it). *CPU/pod*: CPU time the scheduler and the API server used during the run, per pod "
            "bound. *busy before*: CPUs the machine kept busy just before the run, and in brackets what the "
            "idle cluster alone kept busy at that size.",
            [
                "nodes",
                "#",
                "scheduler",
                "qps/burst",
                "bound",
                "pods/s",
                "created/s",
                "p50 (ms)",
                "p99 (ms)",
                "max (ms)",
                "attempt (ms)",
                "sched CPU/pod (ms)",
                "apiserver CPU/pod (ms)",
                "busy before (idle)",
            ],
            rows,
            "rrlrrrrrrrrrrr",
        )

    def _method(self) -> str:
        options = self.options
        return f"""\
### Method

- One cluster is grown through the sizes ({", ".join(f"{size:,}" for size in options.sizes)} KWOK nodes);
  at each size both schedulers run on it in turn, never at the same time, each as a fresh process
  started with the same flags and configuration, and each waits for its caches to sync first.
- The client (this benchmark) creates the pods with {options.concurrency} requests in flight and
  watches them, through the project's own API client (`kube/client.py`, the scheduler's too;
  about 0.6 ms of CPU per request here). A pod's latency runs from its creation
  (the create call returning, or the watch showing it, whichever is first) to the first watch
  event showing `spec.nodeName`, so it includes the API server's and the watch's delays, the
  same for both schedulers. Pods are created faster than either scheduler binds them, so the
  latency mostly measures how long a pod waits in the queue behind the ones created before it:
  it grows with the gap between the creation rate and the throughput. Throughput is the number
  of pods over the time from the first creation to the last binding. {options.warmup_pods}
  warm-up pods are scheduled (and not measured) before each run.
- *scheduler CPU/pod* is the user and system CPU time of the scheduler process during the
  measured span (from /proc), over the pods bound; it includes its watches, its bindings and
  its Events.
- Percentiles are nearest-rank over every measured pod.
- Everything runs on this one machine: the API server, etcd, KWOK, the benchmark client and
  the scheduler share its CPUs, so the numbers measure the whole system, and a scheduler that
  uses less CPU leaves more to the API server. Between runs the pods are deleted, and the next
  run waits until the machine is quiet again (at most {options.quiet_margin:g} CPUs busier than
  the idle cluster measured after it settled, for 2 seconds; at most {options.quiet_timeout:g}s).
- Raw numbers of every run: `throughput.json` in the run's working directory.
"""
