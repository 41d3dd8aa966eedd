"""The kill -9 Events probe's figures: where a probe's lost Events were, and the repeated runs'
table (each run, median and mean) that docs/reliability.md shows."""

from __future__ import annotations

from bench.chaos import report
from bench.chaos.eventsprobe import EventsProbe, median_share, table
from bench.chaos.run import ChaosOptions, RunResult


def probe(bound: int, lost: int, bound_at_kill: int, lost_before: list[float]) -> EventsProbe:
    return EventsProbe(
        backlog=600,
        bound=bound,
        lost=lost,
        examples=[],
        bound_at_kill=bound_at_kill,
        events_at_kill=bound_at_kill - len(lost_before),
        lost_bound_before_kill=lost_before,
        lag_seconds=[0.1, 0.2, 0.3],
        binding_rate=120.0,
    )


def test_lost_events_are_split_into_bound_after_the_kill_and_behind_the_bindings() -> None:
    found = probe(bound=260, lost=15, bound_at_kill=250, lost_before=[0.3, 0.1, 0.05, 0.02, 0.01])
    assert found.share == 15 / 260
    assert found.bound_after_kill == 10
    assert found.lost_after_kill == 10
    line = found.summary()
    assert "lost 15 of 260 bound (5.8%)" in line
    assert "10 bound after it, 10 of them lost" in line
    assert "lost pods bound 10 ms-300 ms before the kill" in line


def test_the_table_lists_every_run_and_the_median_share_per_scheduler() -> None:
    ours = [probe(100, 10, 95, []), probe(100, 5, 95, []), probe(100, 20, 95, [])]
    upstream = [probe(100, 8, 99, []), probe(100, 6, 99, []), probe(100, 7, 99, [])]
    assert median_share(ours) == 0.10
    text = table({"ours": ours, "upstream": upstream})
    lines = text.splitlines()
    assert lines[0] == "| run | ours | upstream |"
    assert lines[2] == "| 1 | 10 of 100 (10.0%) | 8 of 100 (8.0%) |"
    assert "| median lost share | 10.0% | 7.0% |" in lines
    assert "| bound after the kill / of them lost, median | 5 / 10 | 1 / 7 |" in lines


def test_a_chaos_json_of_one_probe_per_run_still_reads() -> None:
    """chaos.json written before the probe was repeated held one probe object, not a list."""
    result = RunResult.from_json(
        {
            "scheduler": "ours",
            "nodes": 1,
            "pods": 1,
            "kinds": {},
            "faults": [],
            "bound": 1,
            "violations": [],
            "recovery": {},
            "restarts": 0,
            "seconds": 1.0,
            "events": {"backlog": 600, "bound": 272, "lost": 33, "examples": []},
        }
    )
    assert [(p.bound, p.lost) for p in result.events] == [(272, 33)]


def test_the_chaos_section_shows_every_probe_of_each_scheduler() -> None:
    results = [
        RunResult(
            scheduler=name,
            nodes=10,
            pods=10,
            kinds={"plain": 10},
            faults=[],
            bound=10,
            violations=[],
            recovery={},
            restarts=0,
            seconds=1.0,
            events=[probe(100, lost, 95, []) for lost in losses],
        )
        for name, losses in (("ours", (10, 5, 20)), ("upstream", (8, 6, 7)))
    ]
    text = report.section(results, ChaosOptions(kinds=("apiserver-kill",)), "make chaos", "m", "now", "c")
    assert "Events lost on kill -9 (3 probes each)" in text
    assert "| 3 | 20 of 100 (20.0%) | 7 of 100 (7.0%) |" in text
    assert "| median lost share | 10.0% | 7.0% |" in text
