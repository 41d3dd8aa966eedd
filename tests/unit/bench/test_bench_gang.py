"""The gang section's pure parts: the gangs, the configuration, the per-gang timings, the check, the table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from bench.__main__ import _range, _sizes, parser
from bench.context import BenchOptions
from bench.gang import (
    GangSection,
    bind_spreads,
    gang_config,
    gang_manifests,
    gang_record,
    gang_sizes,
    gang_spans,
    members_of,
    partial_gangs,
)
from bench.gang_report import GangRunRecord
from bench.machine import Machine
from bench.runinfo import RunInfo
from bench.sections import SECTIONS
from bench.stats import PodClock

from secsched_devtools.cluster.schedulers import OURS, UPSTREAM

JSON = dict[str, Any]
LABEL = "scheduling.x-k8s.io/pod-group"


def _options(**changes: Any) -> BenchOptions:
    values: dict[str, Any] = {
        "sizes": (100,),
        "pods": (1000,),
        "qps": 5000.0,
        "burst": 5000,
        "repeats": 2,
        "concurrency": 32,
        "kube_default": False,
        "kube_default_pods": 1000,
        "workdir": Path("/nonexistent"),
        "gang_sizes": (100,),
        "gang_groups": (3,),
    }
    values.update(changes)
    return BenchOptions(**values)


def _pod(name: str, group: str, node: str = "") -> JSON:
    return {"metadata": {"name": name, "labels": {LABEL: group}}, "spec": {"nodeName": node}}


def test_gang_sizes_are_in_range_and_the_same_for_the_same_seed() -> None:
    sizes = gang_sizes(200, (8, 16), seed=1000)
    assert len(sizes) == 200 and min(sizes) >= 8 and max(sizes) <= 16
    assert len(set(sizes)) > 1
    assert sizes == gang_sizes(200, (8, 16), seed=1000)
    assert sizes != gang_sizes(200, (8, 16), seed=1001)
    assert gang_sizes(3, (4, 4)) == [4, 4, 4]
    for groups, members in ((0, (8, 16)), (3, (0, 4)), (3, (9, 8))):
        with pytest.raises(ValueError):
            gang_sizes(groups, members)


def test_each_gang_is_a_podgroup_with_minmember_its_size_and_that_many_labelled_pods() -> None:
    groups, pods = gang_manifests("u1", [3, 2], "bench-scheduler", seed=7)
    assert [g["metadata"]["name"] for g in groups] == ["u1-g000", "u1-g001"]
    assert [g["spec"] for g in groups] == [{"minMember": 3}, {"minMember": 2}]
    assert all(g["apiVersion"] == "scheduling.x-k8s.io/v1alpha1" and g["kind"] == "PodGroup" for g in groups)
    names = [p["metadata"]["name"] for p in pods]
    assert names == ["u1-g000-00", "u1-g000-01", "u1-g000-02", "u1-g001-00", "u1-g001-01"]
    assert [p["metadata"]["labels"][LABEL] for p in pods] == ["u1-g000"] * 3 + ["u1-g001"] * 2
    assert {p["spec"]["schedulerName"] for p in pods} == {"bench-scheduler"}
    assert members_of(pods) == {"u1-g000": names[:3], "u1-g001": names[3:]}
    # Both schedulers get the same requests: they depend on the seed, not on the prefix.
    _, again = gang_manifests("o2", [3, 2], "bench-scheduler", seed=7)
    requests = [p["spec"]["containers"][0]["resources"] for p in pods]
    assert requests == [p["spec"]["containers"][0]["resources"] for p in again]


def test_members_of_leaves_out_pods_of_no_gang() -> None:
    plain = {"metadata": {"name": "solo", "labels": {"app": "x"}}, "spec": {}}
    assert members_of([plain, _pod("a-0", "a")]) == {"a": ["a-0"]}


def test_the_config_enables_coscheduling_as_scheduler_plugins_documents_it_with_default_args() -> None:
    document = yaml.safe_load(gang_config(5000, 5000))
    assert document["clientConnection"] == {"qps": 5000, "burst": 5000}
    assert document["leaderElection"] == {"leaderElect": False}
    (profile,) = document["profiles"]
    assert profile["schedulerName"] == "bench-scheduler"
    plugins = profile["plugins"]
    assert plugins["queueSort"] == {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}
    for point in ("preFilter", "postFilter", "permit", "reserve"):
        assert plugins[point] == {"enabled": [{"name": "Coscheduling"}]}
    assert "pluginConfig" not in profile  # the default args


def _clock() -> PodClock:
    clock = PodClock()
    for name, created, bound in (
        ("a-0", 0.0, 1.0),
        ("a-1", 0.5, 1.2),
        ("b-0", 0.2, 2.0),
        ("b-1", 0.3, 2.5),
        ("c-0", 0.4, 3.0),
        ("c-1", 0.6, None),
    ):
        clock.create_returned(name, created)
        if bound is not None:
            clock.saw(name, bound, "node-1")
    return clock


MEMBERS = {"a": ["a-0", "a-1"], "b": ["b-0", "b-1"], "c": ["c-0", "c-1"]}


def test_per_gang_spans_run_from_the_first_created_to_the_last_bound_of_complete_gangs() -> None:
    clock = _clock()
    assert gang_spans(clock, MEMBERS) == pytest.approx({"a": 1.2, "b": 2.3})
    assert bind_spreads(clock, MEMBERS) == pytest.approx({"a": 0.2, "b": 0.5})
    assert gang_spans(clock, {"empty": []}) == {}


def test_partial_gangs_are_those_with_some_but_not_all_pods_bound() -> None:
    listed = [
        _pod("a-0", "a", "n1"),
        _pod("a-1", "a", "n2"),
        _pod("b-0", "b"),
        _pod("b-1", "b"),
        _pod("c-0", "c", "n3"),
        _pod("c-1", "c"),
        _pod("d-0", "d", "n1"),  # d-1 missing from the listing: not bound
    ]
    members = {**MEMBERS, "d": ["d-0", "d-1"]}
    assert partial_gangs(listed, members) == ["c: 1/2 bound", "d: 1/2 bound"]
    assert partial_gangs(listed[:4], MEMBERS) == []


def test_a_record_has_no_all_bound_time_unless_every_gang_was_bound() -> None:
    listed = [
        _pod(name, group, "n1" if name != "c-1" else "") for group, names in MEMBERS.items() for name in names
    ]
    record = gang_record(OURS, 100, 0, 1, _clock(), MEMBERS, listed)
    assert (record.groups, record.pods, record.bound, record.complete_gangs) == (3, 6, 5, 2)
    assert math.isnan(record.all_bound)
    assert record.partial == ["c: 1/2 bound"]
    assert record.p50 == pytest.approx(1.2) and record.p99 == pytest.approx(2.3)
    assert record.throughput == pytest.approx(5 / 3.0)

    complete = {"a": MEMBERS["a"], "b": MEMBERS["b"]}
    record = gang_record(UPSTREAM, 100, 0, 2, _clock(), complete, listed)
    assert record.all_bound == pytest.approx(2.5) and record.partial == []
    assert record.max_gang == pytest.approx(2.3)


def _record(kind: str, order: int, throughput: float, partial: list[str] | None = None) -> GangRunRecord:
    return GangRunRecord(
        kind=kind,
        nodes=100,
        repeat=0,
        order=order,
        groups=3,
        pods=36,
        bound=36,
        complete_gangs=3,
        throughput=throughput,
        all_bound=36 / throughput,
        create_rate=500.0,
        p50=0.2,
        p99=0.4,
        max_gang=0.4,
        partial=partial or [],
        cpu_seconds={"scheduler": 0.072},
        busy_before=0.9,
        idle_cpus=0.1,
        load_before=1.5,
        load_after=1.7,
    )


def test_render_compares_the_best_runs_and_reports_partial_gangs_and_a_shared_machine() -> None:
    section = GangSection(_options())
    section.records = [
        _record(UPSTREAM, 1, 100.0),
        _record(OURS, 2, 150.0),
        _record(OURS, 3, 120.0),
        _record(UPSTREAM, 4, 90.0, ["u4-g001: 3/8 bound"]),
    ]
    assert section.best(100, OURS) is section.records[1]
    run = RunInfo(
        command="python -m bench --only gang",
        started="2026-11-23 12:00 UTC",
        machine=Machine(2, "cpu", 23.5, "6.1", "3.11.7"),
        versions={},
        load_before=1.4,
        load_waited=False,
        options=section.options,
    )
    text = section.render(run)
    assert "### 100 nodes, 3 gangs, 36 pods" in text
    assert "| ours | 150.0 | 0.24 | 200 | 400 | 2.00 | 3/3 | 0 |" in text
    assert "| upstream | 100.0 | 0.36 | 200 | 400 | 2.00 | 3/3 | 0 |" in text
    assert "| ours / upstream | 1.50× | 0.67× | 1.00× | 1.00× | 1.00× |  |  |" in text
    assert "machine shared with other work" in text
    assert text.count("| 100 | ") == 4  # every run listed
    assert "Partly bound" not in text.split("### Every run")[0]  # the best runs had none
    section.records[0].partial = ["u1-g002: 1/9 bound"]
    assert "- upstream: u1-g002: 1/9 bound" in section.render(run)


def test_the_section_is_registered_and_its_sizes_and_gangs_are_options() -> None:
    assert "gang" in SECTIONS
    assert _sizes(None, ["gang"])[0] == (1000,)
    assert _sizes(None, ["throughput", "gang"])[0] == (100, 1000, 5000)
    assert _range("8,16") == (8, 16)
    args = parser().parse_args(["--only", "gang", "--gang-groups", "20", "--gang-members", "4,6"])
    assert args.only == ("gang",) and args.gang_groups == (20,) and args.gang_members == (4, 6)
    with pytest.raises(SystemExit):
        parser().parse_args(["--gang-members", "16,8"])
    assert _options(gang_sizes=(100, 1000), gang_groups=(5, 50)).gang_groups_for(1000) == 50
