"""The chaos runs as docs/reliability.md's "Chaos" section: ours and upstream's side by side.

The section is written whole by the run that measured it (between its heading and the next
``## `` heading), so the rest of the page (the soak's section) is left as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from bench import pagesection
from bench.chaos import eventsprobe, faults
from bench.chaos.invariants import Recovery, by_rule
from bench.chaos.replicas import RESTART_BACKOFF
from bench.chaos.run import ChaosOptions, RunResult

HEADING = "## Chaos: `make chaos`"


def _seconds(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.1f}"


def section(
    results: Sequence[RunResult], options: ChaosOptions, command: str, machine: str, when: str, commit: str
) -> str:
    """The section's markdown, heading included."""
    names = [result.scheduler for result in results]
    header = "| | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names) + "\n"
    first = results[0]
    election = options.election
    kinds = ", ".join(f"{kind} {count}" for kind, count in first.kinds.items())
    lines = [
        HEADING,
        "",
        f"Measured by `{command}` on {machine}, {when}, commit `{commit}`.",
        "",
        f"Each scheduler on a fresh local cluster of {first.nodes:,} KWOK nodes: a burst of {first.pods:,} "
        f"pods ({kinds}) created at a steady pace, while two replicas under leader election "
        f"(lease {election.lease_seconds:g} s, renew {election.renew_seconds:g} s, retry "
        f"{election.retry_seconds:g} s; an exited replica is started again after {RESTART_BACKOFF:g} s, "
        "as a kubelet would) schedule it with deploy/06's load-aware profile (TargetLoadPacking "
        "reading Prometheus) "
        f"plus Coscheduling, and each fault kind is injected {options.repeats} times at seeded random "
        f"moments (seed {options.seed}), one after another, {options.gap[0]:g}-{options.gap[1]:g} s apart.",
        "",
        'Run it again with `make chaos` (this size by default; `CHAOS_ARGS="--nodes 100 --pods 500 '
        '--repeats 1"` for a short run, `--schedulers ours`, `--faults apiserver-kill,leader-kill`, '
        "`--seed N`; `python -m bench.chaos --help` lists them). Each run's logs and "
        "`chaos.json` (every fault with its times, every violation) go to `out/chaos/`; "
        "`tests/cluster/test_chaos_smoke.py` runs each fault once on 30 nodes in `make test`.",
        "",
        header
        + f"| faults injected | {' | '.join(str(len(r.faults)) for r in results)} |\n"
        + f"| pods bound / burst | {' | '.join(f'{r.bound:,} / {r.pods:,}' for r in results)} |\n"
        + f"| invariant violations | {' | '.join(str(len(r.violations)) for r in results)} |\n"
        + f"| bound pods with no Scheduled Event | {' | '.join(_count(r.without_event) for r in results)} |\n"
        + f"| replica restarts | {' | '.join(str(r.restarts) for r in results)} |\n"
        + f"| run time (s) | {' | '.join(f'{r.seconds:.0f}' for r in results)} |",
        "",
        "Invariants checked on the final state and its Events: every pod bound, exactly once (one "
        "Scheduled Event per pod); no node over its allocatable; no two pods with a required "
        "anti-affinity between them on one node; every DoNotSchedule spread within its skew; every "
        "claim's PV pinned to its pod's node; no gang partly bound; no victim evicted without its "
        "preemptor bound or nominated on its node; no pod on a taint it does not tolerate; and the "
        "operator converged on the CR after each kill.",
        "",
        "Recovery: seconds from a fault's end (the part it broke is back: /readyz, /health, the "
        "process started again; for the leader's kill, the kill itself) to the next binding, p50 / max.",
        "",
        "| fault | what | " + " | ".join(names) + " |\n|---|---|" + "---:|" * len(names),
    ]
    for kind in options.kinds:
        cells = []
        for result in results:
            count, p50, highest, missing = Recovery(result.recovery).summary(kind)
            text = f"{_seconds(p50)} / {_seconds(highest)}"
            if missing:
                text += f" ({missing} of {count} with no binding after)"
            cells.append(text)
        lines.append(f"| {kind} | {faults.DESCRIPTIONS[kind]} | " + " | ".join(cells) + " |")
    if all(r.events for r in results):
        lines += [
            "",
            f"Events lost on kill -9 ({len(first.events)} probes each): a backlog of "
            f"{options.events_probe_pods} pods in a fresh namespace, one replica (no election) started "
            f"on it and killed with SIGKILL once {options.events_probe_share:.0%} of them were bound; "
            "lost are the bound pods with no Scheduled Event. Then the same scheduler is started "
            "again (as a kubelet restarts a killed container) and binds the rest; the last row counts "
            "the bound pods still without a Scheduled Event once it has (ours' next leader writes "
            "those its predecessor left unwritten). The lag is from a binding seen to its "
            "Scheduled Event seen, by a watch of each from the run. `python -m bench.chaos "
            "--events-probe-only --events-probe-repeats 5` runs only this probe, on a cluster of "
            "its own, the two schedulers alternating.",
            "",
            eventsprobe.table({r.scheduler: r.events for r in results}),
        ]
    broken = [r for r in results if r.violations]
    if broken:
        lines += ["", "Violations (the first ten of each run):", ""]
        for result in broken:
            rules = ", ".join(f"{rule} {count}" for rule, count in by_rule(result.violations).items())
            lines.append(f"- {result.scheduler} ({rules}):")
            lines += [f"  - {text}" for text in result.violations[:10]]
    return "\n".join(lines) + "\n"


def write_section(document: Path, text: str) -> None:
    """Replace the Chaos section of ``document`` (up to the next ``## `` heading) with ``text``,
    which starts with the heading."""
    pagesection.write_section(document, HEADING, text.removeprefix(HEADING))


def _count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"
