"""A soak's figures as Markdown (the Soak section of docs/reliability.md) and its samples as CSV.

The section is rewritten whole by each run, between its heading and the next one; the rest of
the page (the Chaos section, another tool's) is left as it is.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import pagesection
from bench.machine import git_commit, load_average, machine
from bench.soak.analysis import MIB, Analysis, bucket_difference, quantile
from bench.soak.churn import Churned
from bench.soak.options import SoakOptions
from bench.soak.probe import Sample

HEADING = "## Soak: `make soak`"
WARM_UP = (
    "Why the first quarter is left out of the slope: ours keeps a little of each churned pod for a "
    "while, by design and within bounds, so RSS climbs in the first minutes and then levels off. The "
    "node table keeps the request rows of up to 1,024 pods beyond twice those bound "
    "(`framework/nodetable.py`); the Event recorder keeps each Event it wrote for 6 to 12 minutes, "
    "as client-go's finishTime (`kube/events/recorder.py`); the cycle collector freezes what survives "
    "a pass and thaws it every 5 minutes (`scheduler/garbage.py`), so a churned pod's cyclic garbage "
    "may wait that long. At 5 pods a second all three are full within about 12 minutes."
)
"""Why the slope skips the warm-up: what fills in the first minutes, each with its bound."""
WARM_UP_SECONDS = 12 * 60
"""How long those caches take to fill at the default churn (the last sentence above)."""
TIMELINE_ROWS = 12
"""Rows of the timeline table: one per twelfth of the run (5 minutes in an hour)."""


@dataclass(frozen=True)
class RunContext:
    """When and where: the line under the heading."""

    started: str
    command: str
    machine: str
    commit: str
    load_before: float

    @classmethod
    def now(cls, command: str) -> RunContext:
        return cls(
            started=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            command=command,
            machine=machine().describe(),
            commit=git_commit(),
            load_before=load_average(),
        )


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _timeline(samples: Sequence[Sample]) -> list[str]:
    """Rows at every twelfth of the run: the gauges then, and the p99 since the previous row."""
    end = samples[-1].seconds
    step = end / TIMELINE_ROWS
    rows = [
        "| minute | RSS (MiB) | tasks | watch loops | API conns | open files | pending "
        "| p99 attempt since previous row |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    previous = samples[0]
    picked: list[Sample] = []
    for row in range(1, TIMELINE_ROWS + 1):
        candidates = [sample for sample in samples if sample.seconds <= row * step + 1e-6]
        if candidates and (not picked or candidates[-1] is not picked[-1]):
            picked.append(candidates[-1])
    for sample in [samples[0], *picked]:
        p99 = quantile(0.99, bucket_difference(sample.attempt_buckets, previous.attempt_buckets))
        rows.append(
            f"| {sample.seconds / 60:.1f} | {sample.rss_bytes / MIB:.1f} | {sample.tasks} | "
            f"{sample.watch_tasks} | {sample.api_connections} | {sample.open_fds} | "
            f"{sample.pending_active + sample.pending_backoff:.0f} | "
            f"{_ms(p99) if sample is not samples[0] else '–'} |"
        )
        previous = sample
    return rows


def _missed(missed: Sequence[str]) -> str:
    if not missed:
        return ""
    return f", {len(missed)} missed (the first at {missed[0]})"


def render(
    context: RunContext,
    options: SoakOptions,
    analysis: Analysis,
    churned: Churned,
    samples: Sequence[Sample],
    missed: Sequence[str] = (),
) -> str:
    """The section's body (under its heading); ``missed``: the samples not taken, and why."""
    gauges = analysis.gauges
    window = _minutes(analysis.window)
    latency = analysis.latency
    verdict = (
        "**passed**"
        if analysis.passed
        else "**FAILED** (" + "; ".join(check.what for check in analysis.failures()) + ")"
    )
    kinds = ", ".join(f"{kind} {count:,}" for kind, count in sorted(churned.pods_by_kind.items()))
    flaps = ", ".join(f"{kind} {count}" for kind, count in churned.flaps.items()) or "none"
    errors = (
        ", ".join(f"{what} {count}" for what, count in churned.errors.items()) if churned.errors else "none"
    )
    lines = [
        f"_Measured {context.started} with `{context.command}` on {context.machine} (commit "
        f"{context.commit}); 1-minute load {context.load_before:.2f} when the run began._",
        "",
        f"Ours (`secsched scheduler`, its own process: deploy/06's TargetLoadPacking profile reading "
        f"the cluster's Prometheus) for {_minutes(analysis.duration)} of churn on {options.nodes} KWOK "
        f"nodes that stay and up to {options.node_churn_pool} that come and go: "
        f"{churned.pods_created:,} pods created ({options.pod_rate:g}/s; {kinds}) and "
        f"{churned.pods_deleted:,} deleted, each after {options.pod_lifetime:g} s; "
        f"{churned.nodes_added} nodes added and {churned.nodes_removed} removed "
        f"({options.node_churn_count} every {options.node_churn_every:g} s); metrics flapped every "
        f"{options.flap_every:g} s ({flaps}; each outage {options.outage:g} s). "
        f"{analysis.scheduled:,.0f} pods scheduled. Failed API calls of the churn: {errors}.",
        "",
        f"Verdict: {verdict}. Sampled every {options.sample_every:g} s from outside the process "
        f"({len(samples)} samples{_missed(missed)}: "
        "RSS, threads, open files from /proc; connections to the API server from its sockets; "
        "asyncio tasks from `--profiling`'s task dump, watch loops being the `reflector-*` tasks; "
        "latency from /metrics). The first and last windows are the run's first and last "
        f"{window}; the RSS slope is fitted after the first quarter.",
        "",
        WARM_UP,
        "",
        "| | first window | last window | whole run (min – max) |",
        "|---|---:|---:|---:|",
    ]
    for gauge in gauges.values():
        lines.append(
            f"| {gauge.name} (median) | {gauge.first.median:,.1f} | {gauge.last.median:,.1f} | "
            f"{gauge.whole.minimum:,.1f} – {gauge.whole.maximum:,.1f} |"
        )
    lines += [
        f"| attempt latency p50 (scheduled) | {_ms(latency.first_p50)} | {_ms(latency.last_p50)} | |",
        f"| attempt latency p99 (scheduled) | {_ms(latency.first_p99)} | {_ms(latency.last_p99)} | |",
        f"| pod scheduling SLI p99 | {_ms(analysis.sli_p99_first)} | {_ms(analysis.sli_p99_last)} | |",
        "",
        f"RSS: {analysis.rss_first_mib:.1f} MiB as the churn began, {analysis.rss_start_mib:.1f} MiB "
        f"after the first quarter, {analysis.rss_end_mib:.1f} MiB at the end (most "
        f"{analysis.rss_max_mib:.1f} MiB); fitted slope after the first quarter "
        f"{analysis.rss_slope_mib_per_hour:+.1f} MiB per hour.",
        "",
        "| bound | measured | allowed | |",
        "|---|---:|---:|---|",
    ]
    for check in analysis.checks:
        unit = f" {check.unit}" if check.unit else ""
        lines.append(
            f"| {check.what} | {check.measured:.2f}{unit} | {check.allowed:g}{unit} | "
            f"{'ok' if check.passed else '**exceeded**'} |"
        )
    lines += ["", *_timeline(samples)]
    return "\n".join(lines) + "\n"


def write_section(page: Path, body: str) -> None:
    """Replace the Soak section's body in ``page`` (from its heading to the next ``## `` heading)."""
    pagesection.write_section(page, HEADING, body)


SAMPLE_COLUMNS = (
    "seconds",
    "rss_bytes",
    "threads",
    "open_fds",
    "api_connections",
    "tasks",
    "watch_tasks",
    "scheduled",
    "pending_active",
    "pending_backoff",
    "pending_unschedulable",
)


def write_samples(path: Path, samples: Sequence[Sample]) -> None:
    """Every sample's gauges, one row each (the histograms stay in memory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as output:
        writer = csv.writer(output)
        writer.writerow([*SAMPLE_COLUMNS, "task_kinds"])
        for sample in samples:
            kinds = " ".join(f"{kind}={count}" for kind, count in sorted(sample.task_kinds.items()))
            writer.writerow([*(getattr(sample, column) for column in SAMPLE_COLUMNS), kinds])
