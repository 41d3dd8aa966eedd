"""Made-up soak samples for the analysis and report tests."""

from __future__ import annotations

import math

from bench.soak.analysis import MIB
from bench.soak.probe import Buckets, Sample

INF = math.inf
BOUNDS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, INF)


def buckets(counts: dict[float, float]) -> Buckets:
    """Cumulative buckets from observations per bucket (``{upper bound: count}``)."""
    total, cumulative = 0.0, []
    for bound in BOUNDS:
        total += counts.get(bound, 0.0)
        cumulative.append((bound, total))
    return tuple(cumulative)


def sample(
    seconds: float, rss_mib: float = 100.0, tasks: int = 90, attempts: Buckets = (), **more: float
) -> Sample:
    fields: dict[str, float] = {
        "threads": 4,
        "open_fds": 50,
        "api_connections": 30,
        "watch_tasks": 18,
        "scheduled": 0.0,
        "pending_active": 0.0,
        "pending_backoff": 0.0,
        "pending_unschedulable": 0.0,
        **more,
    }
    return Sample(
        seconds=seconds,
        rss_bytes=int(rss_mib * MIB),
        tasks=tasks,
        attempt_buckets=attempts or buckets({}),
        sli_buckets=buckets({}),
        threads=int(fields["threads"]),
        open_fds=int(fields["open_fds"]),
        api_connections=int(fields["api_connections"]),
        watch_tasks=int(fields["watch_tasks"]),
        scheduled=fields["scheduled"],
        pending_active=fields["pending_active"],
        pending_backoff=fields["pending_backoff"],
        pending_unschedulable=fields["pending_unschedulable"],
    )


def steady_run(
    minutes: int = 60, rss: float = 0.0, tasks_per_minute: float = 0.0, slow_from: float | None = None
) -> list[Sample]:
    """A sample a minute: RSS growing ``rss`` MiB a minute, 100 attempts a minute at 2-4 ms (8-16 ms
    from minute ``slow_from`` on)."""
    samples = []
    fast = slow = 0.0
    for minute in range(minutes + 1):
        if minute:
            if slow_from is not None and minute > slow_from:
                slow += 100
            else:
                fast += 100
        samples.append(
            sample(
                minute * 60.0,
                rss_mib=100 + rss * minute,
                tasks=90 + int(tasks_per_minute * minute),
                attempts=buckets({0.004: fast, 0.016: slow}),
                scheduled=fast + slow,
            )
        )
    return samples
