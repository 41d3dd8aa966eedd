"""The workloads section's pure parts: the classes' pods, where the pre-existing ones go, the
placement check (a clean placement and one breaking each rule), the open-loop schedule and rate,
the options and the rendering."""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from bench.__main__ import WORKLOADS_DEFAULT_SIZES, _sizes, main, parser
from bench.context import BenchOptions
from bench.measuring import keep_counters
from bench.sections import SECTIONS
from bench.stats import PodClock
from bench.workloadclasses import (
    CLASS_NAMES,
    EXISTING,
    HOSTNAME_KEY,
    MEASURED,
    ROLE_LABEL,
    UNSCHEDULABLE_EVERY,
    ZONE_KEY,
    Node,
    check_placement,
    existing_manifests,
    expected_unschedulable,
    measured_manifests,
    node_matches,
    nodes_of,
    room,
    rules_broken,
    selector_matches,
    zone_balanced,
    zones_of,
)
from bench.workloads import WorkloadsSection, create_on_schedule, open_loop_rate
from bench.workloads_report import OPEN_LOOP, SATURATION, WorkloadRecord, open_loop_rule
from tests.unit.bench.reportparts import run_info

from secsched_devtools.cluster.nodes import NodeShape, plan_nodes
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM

JSON = dict[str, Any]
SCHEDULER = "bench-scheduler"


def _nodes(count: int = 9, zones: int = 3) -> list[Node]:
    return nodes_of(plan_nodes(count, NodeShape(cpu="16", memory="64Gi", pods=110), zones))


def _pod(
    name: str,
    node: str = "",
    labels: dict[str, str] | None = None,
    cpu: str = "100m",
    namespace: str = "ns",
    created: str = "2025-01-01T00:00:00Z",
    **spec: Any,
) -> JSON:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "creationTimestamp": created,
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}],
            **spec,
        },
    }


def _anti(color: str, key: str = HOSTNAME_KEY) -> JSON:
    term = {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _affinity(color: str, key: str = ZONE_KEY) -> JSON:
    term = {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _spread(color: str, key: str = ZONE_KEY, skew: int = 1, when: str = "DoNotSchedule") -> list[JSON]:
    return [
        {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"color": color}},
        }
    ]


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
        "workload_sizes": (100,),
        "workload_pods": (60,),
        "workload_existing": (30,),
        "workload_classes": ("basic", "required-anti-affinity"),
    }
    values.update(changes)
    return BenchOptions(**values)


# -- the classes ----------------------------------------------------------------------------------
def test_every_class_makes_named_measured_pods_with_the_same_requests_for_the_same_seed() -> None:
    zones = zones_of(_nodes())
    for klass in CLASS_NAMES:
        pods = measured_manifests(klass, "o1", 10, SCHEDULER, zones, seed=5)
        assert [pod["metadata"]["name"] for pod in pods] == [f"o1-{i:05d}" for i in range(10)]
        assert all(pod["metadata"]["labels"][ROLE_LABEL] == MEASURED for pod in pods)
        assert all(pod["spec"]["schedulerName"] == SCHEDULER for pod in pods)
        again = measured_manifests(klass, "u2", 10, SCHEDULER, zones, seed=5)
        assert [p["spec"]["containers"] for p in pods] == [p["spec"]["containers"] for p in again]
    with pytest.raises(ValueError):
        measured_manifests("nope", "o1", 1, SCHEDULER, zones)


def test_the_classes_carry_scheduler_perfs_terms() -> None:
    zones = zones_of(_nodes())
    anti = measured_manifests("required-anti-affinity", "o", 1, SCHEDULER, zones)[0]
    assert anti["metadata"]["labels"]["color"] == "green"
    assert anti["spec"]["affinity"] == _anti("green")
    affinity = measured_manifests("required-affinity", "o", 1, SCHEDULER, zones)[0]
    assert affinity["spec"]["affinity"] == _affinity("blue")
    preferred = measured_manifests("preferred-affinity", "o", 1, SCHEDULER, zones)[0]["spec"]["affinity"]
    assert preferred["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 1
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in preferred["podAntiAffinity"]
    node = measured_manifests("node-affinity", "o", 1, SCHEDULER, zones)[0]["spec"]["affinity"]
    expression = node["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][
        0
    ]
    assert expression["matchExpressions"] == [
        {"key": ZONE_KEY, "operator": "In", "values": ["zone-a", "zone-b"]}
    ]
    hard = measured_manifests("spread-hard", "o", 1, SCHEDULER, zones)[0]["spec"]["topologySpreadConstraints"]
    assert hard == _spread("purple")
    soft = measured_manifests("spread-soft", "o", 1, SCHEDULER, zones)[0]["spec"]["topologySpreadConstraints"]
    assert [(c["topologyKey"], c["whenUnsatisfiable"]) for c in soft] == [
        (ZONE_KEY, "ScheduleAnyway"),
        (HOSTNAME_KEY, "ScheduleAnyway"),
    ]
    pvc = measured_manifests("pvc", "o", 1, SCHEDULER, zones)[0]
    assert pvc["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "o-00000"
    preemptor = measured_manifests("preemption", "o", 1, SCHEDULER, zones)[0]
    assert preemptor["spec"]["priorityClassName"] == "bench-high"
    assert preemptor["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "9"


def test_one_pod_in_five_of_the_churn_stream_fits_nowhere() -> None:
    pods = measured_manifests("unschedulable-churn", "o", 20, SCHEDULER, ["zone-a"])
    stuck = [pod for pod in pods if expected_unschedulable(pod)]
    assert len(stuck) == 20 // UNSCHEDULABLE_EVERY
    assert all(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "32" for pod in stuck)
    assert all(not expected_unschedulable(pod) for pod in pods[: UNSCHEDULABLE_EVERY - 1])


def test_zone_balanced_placement_differs_by_at_most_one_per_zone_and_host() -> None:
    nodes = _nodes(10)
    placed = zone_balanced(nodes, 25)
    zones = Counter(node.labels[ZONE_KEY] for node in placed)
    assert max(zones.values()) - min(zones.values()) <= 1
    hosts = Counter(node.name for node in placed)
    assert max(hosts.values()) - min(hosts.values()) <= 1


@pytest.mark.parametrize("klass", CLASS_NAMES)
def test_pre_existing_pods_are_bound_and_keep_their_own_constraints(klass: str) -> None:
    nodes = _nodes(30)
    pods = existing_manifests(klass, 20, nodes, SCHEDULER, seed=3)
    expected = len(nodes) if klass == "preemption" else 20
    assert len(pods) == expected
    assert all(pod["spec"]["nodeName"] and pod["metadata"]["labels"][ROLE_LABEL] == EXISTING for pod in pods)
    assert check_placement(pods, nodes) == []
    if klass == "required-anti-affinity":
        assert len({pod["spec"]["nodeName"] for pod in pods}) == 20
    if klass == "required-affinity":
        zone_of = {node.name: node.labels[ZONE_KEY] for node in nodes}
        assert {zone_of[pod["spec"]["nodeName"]] for pod in pods} == {"zone-a"}


def test_room_refuses_more_anti_affine_pods_or_preemptors_than_nodes() -> None:
    assert room("required-anti-affinity", 100, 30, 60) is None
    assert room("required-anti-affinity", 100, 50, 60) is not None
    assert room("preemption", 100, 100, 101) is not None
    assert room("basic", 10, 500, 500) is None
    with pytest.raises(ValueError):
        existing_manifests("required-anti-affinity", 31, _nodes(30), SCHEDULER)


# -- the placement check ---------------------------------------------------------------------------
def test_selectors_and_node_affinity() -> None:
    assert selector_matches({}, {"a": "1"}) and not selector_matches(None, {"a": "1"})
    expressions = {
        "matchExpressions": [
            {"key": "a", "operator": "In", "values": ["1"]},
            {"key": "b", "operator": "DoesNotExist"},
        ]
    }
    assert selector_matches(expressions, {"a": "1"}) and not selector_matches(
        expressions, {"a": "1", "b": "2"}
    )
    node = Node("n1", {ZONE_KEY: "zone-a", "rank": "5"})
    assert node_matches(_pod("p", nodeSelector={ZONE_KEY: "zone-a"}), node)
    assert not node_matches(_pod("p", nodeSelector={ZONE_KEY: "zone-b"}), node)
    greater = {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["4"]}]}
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
    required: JSON = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    }
    terms = required["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    terms.append(by_name)
    assert not node_matches(_pod("p", affinity=required), node)
    terms.append(greater)
    assert node_matches(_pod("p", affinity=required), node)


def test_a_clean_placement_has_no_violation() -> None:
    nodes = _nodes(6)  # zone-a: 0, 3; zone-b: 1, 4; zone-c: 2, 5
    pods = [
        _pod("anti-1", "kwok-node-0", {"color": "green"}, affinity=_anti("green")),
        _pod("anti-2", "kwok-node-1", {"color": "green"}, affinity=_anti("green")),
        _pod("aff-1", "kwok-node-0", {"color": "blue"}, affinity=_affinity("blue")),
        _pod("aff-2", "kwok-node-3", {"color": "blue"}, affinity=_affinity("blue")),
        _pod("spread-1", "kwok-node-0", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
        _pod("spread-2", "kwok-node-1", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
        _pod("spread-3", "kwok-node-5", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
        _pod("spread-4", "kwok-node-3", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
        _pod("zone", "kwok-node-4", nodeSelector={ZONE_KEY: "zone-b"}),
        _pod("pending", "", {"color": "green"}, affinity=_anti("green")),
        _pod("other-ns", "kwok-node-0", {"color": "green"}, namespace="elsewhere"),
    ]
    assert check_placement(pods, nodes) == []


def test_anti_affinity_is_symmetric_and_reported_once_per_pair() -> None:
    nodes = _nodes(3)
    # Only the first pod has the term; the second is selected by it: still a violation.
    pods = [
        _pod("a", "kwok-node-0", {"color": "green"}, affinity=_anti("green")),
        _pod("b", "kwok-node-0", {"color": "green"}),
    ]
    assert check_placement(pods, nodes) == [
        "anti-affinity: ns/a and ns/b share kubernetes.io/hostname=kwok-node-0"
    ]
    both = [
        _pod("a", "kwok-node-0", {"color": "green"}, affinity=_anti("green")),
        _pod("b", "kwok-node-0", {"color": "green"}, affinity=_anti("green")),
    ]
    assert len(check_placement(both, nodes)) == 1
    zone_wide = [
        _pod("a", "kwok-node-0", {"color": "green"}, affinity=_anti("green", ZONE_KEY)),
        _pod("b", "kwok-node-3", {"color": "green"}),
    ]
    assert rules_broken(check_placement(zone_wide, _nodes(6))) == {"anti-affinity": 1}


def test_required_affinity_needs_a_selected_pod_in_the_domain_unless_the_pod_came_first() -> None:
    nodes = _nodes(6)
    first = _pod(
        "a", "kwok-node-1", {"color": "blue"}, created="2025-01-01T00:00:00Z", affinity=_affinity("blue")
    )
    assert check_placement([first], nodes) == []  # the first of its kind may go anywhere
    late = _pod(
        "b", "kwok-node-0", {"color": "blue"}, created="2025-01-01T00:00:05Z", affinity=_affinity("blue")
    )
    found = check_placement([first, late], nodes)
    assert found == ["affinity: ns/b is in topology.kubernetes.io/zone=zone-a, with no pod its term selects"]
    # A pod its term does not select itself has no such excuse.
    lonely = _pod("c", "kwok-node-0", {"color": "red"}, affinity=_affinity("blue"))
    assert rules_broken(check_placement([lonely], nodes)) == {"affinity": 1}


def test_hard_topology_spread_over_the_admitted_domains() -> None:
    nodes = _nodes(6)
    skewed = [
        _pod("s1", "kwok-node-0", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
        _pod("s2", "kwok-node-3", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
        _pod("s3", "kwok-node-1", {"color": "purple"}, topologySpreadConstraints=_spread("purple")),
    ]
    found = check_placement(skewed, nodes)  # zone-a 2, zone-b 1, zone-c 0
    assert rules_broken(found) == {"topology spread": 1}
    assert "skew 2 > maxSkew 1" in found[0]
    # The first two, admitting zone-a only: one domain, no skew.
    admit = {ZONE_KEY: "zone-a"}
    only_a = [_pod(p["metadata"]["name"], p["spec"]["nodeName"], {"color": "purple"}) for p in skewed[:2]]
    for pod in only_a:
        pod["spec"]["nodeSelector"] = admit
        pod["spec"]["topologySpreadConstraints"] = _spread("purple")
    assert check_placement(only_a, nodes) == []
    soft = [
        _pod(
            "s1", "kwok-node-0", {"color": "o"}, topologySpreadConstraints=_spread("o", when="ScheduleAnyway")
        )
    ]
    soft.append(
        _pod(
            "s2",
            "kwok-node-3",
            {"color": "o"},
            topologySpreadConstraints=soft[0]["spec"]["topologySpreadConstraints"],
        )
    )
    assert check_placement(soft, nodes) == []


def test_node_affinity_and_resources_violations() -> None:
    nodes = _nodes(3)
    wrong_zone = _pod("z", "kwok-node-0", nodeSelector={ZONE_KEY: "zone-b"})
    assert rules_broken(check_placement([wrong_zone], nodes)) == {"node affinity": 1}
    ghost = _pod("g", "no-such-node")
    assert rules_broken(check_placement([ghost], nodes)) == {"node affinity": 1}
    full = [_pod("f1", "kwok-node-1", cpu="14"), _pod("f2", "kwok-node-1", cpu="9")]
    found = check_placement(full, nodes)
    assert rules_broken(found) == {"resources": 1} and "23,000m of CPU" in found[0]
    # The preemption class's end state: one filler gone, its preemptor in its place.
    filler, preemptor = _pod("f", "kwok-node-2", cpu="14"), _pod("p", "kwok-node-1", cpu="9")
    assert check_placement([filler, preemptor], nodes) == []
    terminating = _pod("t", "kwok-node-2", cpu="9")
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert check_placement([filler, terminating], nodes) == []


# -- open loop -------------------------------------------------------------------------------------
def test_open_loop_rate_is_a_share_of_the_slower_rounded_down_at_least_one() -> None:
    assert open_loop_rate([301.0, 250.9], 0.5) == 125
    assert open_loop_rate([1.5, 900.0], 0.5) == 1
    assert open_loop_rate([math.nan, 0.0], 0.5) is None
    assert open_loop_rate([math.nan, 40.0], 0.5) == 20
    assert open_loop_rate([301.0, 250.9], 0.5, ceiling=30.0) == 30


class _SlowApi:
    """Creates take 300 ms each: a fixed schedule must not wait for the previous one."""

    def __init__(self) -> None:
        self.started: list[float] = []

    async def create(self, path: str, body: JSON) -> JSON:
        self.started.append(time.monotonic())
        await asyncio.sleep(0.3)
        return body


def test_open_loop_creates_on_a_fixed_schedule_without_waiting_for_each_create() -> None:
    api = _SlowApi()
    clock = PodClock()
    manifests = [{"metadata": {"name": f"p{i}"}} for i in range(10)]
    started = time.monotonic()
    lag = asyncio.run(create_on_schedule(api, "ns", manifests, clock, 100.0, 32))  # type: ignore[arg-type]
    elapsed = time.monotonic() - started
    assert len(clock.created) == 10
    # 10 pods at 100/s: the last is due at 90 ms and returns 300 ms later, not after 10 x 300 ms.
    # Generous margins: the machine may be busy running other tests.
    assert elapsed < 1.5
    assert lag < 0.3
    assert api.started == sorted(api.started)
    assert api.started[-1] - api.started[0] > 0.06  # spread over the schedule, not all at once


# -- the options, the section, the rendering -------------------------------------------------------
def test_the_section_is_registered_after_throughput_and_its_options_parse() -> None:
    names = list(SECTIONS)
    assert names.index("workloads") == names.index("throughput") + 1
    assert _sizes(None, ["workloads"])[0] == WORKLOADS_DEFAULT_SIZES == (1000, 5000)
    args = parser().parse_args(
        [
            "--only",
            "workloads",
            "--workload-classes",
            "basic,preemption",
            "--no-open-loop",
            "--open-loop-fraction",
            "0.25",
            "--open-loop-pods",
            "30",
            "--workload-repeats",
            "2",
        ]
    )
    assert args.workload_classes == ("basic", "preemption") and args.open_loop is False
    assert args.open_loop_fraction == 0.25 and args.open_loop_pods == 30 and args.workload_repeats == 2
    assert parser().parse_args([]).workload_classes == CLASS_NAMES and parser().parse_args([]).open_loop
    for bad in (["--workload-classes", "basic,nope"], ["--open-loop-fraction", "1.5"]):
        with pytest.raises(SystemExit):
            parser().parse_args(bad)
    options = _options(workload_sizes=(100, 1000), workload_pods=(60, 500), workload_existing=(30, 400))
    assert options.workload_pods_for(1000) == 500 and options.workload_existing_for(100) == 30


def test_main_passes_the_workload_defaults_per_size(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[BenchOptions] = []

    def fake_run(options: BenchOptions, *args: Any, **kwargs: Any) -> str:
        seen.append(options)
        return ""

    monkeypatch.setattr("bench.__main__.run", fake_run)
    main(["--only", "workloads", "--output", "-", "--workdir", "/tmp/x"])
    assert seen[-1].workload_sizes == (1000, 5000)
    assert seen[-1].workload_pods == (500, 1000) and seen[-1].workload_existing == (500, 1000)
    main(["--only", "workloads", "--sizes", "100", "--workload-pods", "60", "--workload-existing", "30"])
    assert seen[-1].workload_sizes == (100,) and seen[-1].workload_pods == (60,)
    assert seen[-1].workload_existing == (30,)


def _record(
    klass: str, kind: str, mode: str, throughput: float, p99: float, **changes: Any
) -> WorkloadRecord:
    values: dict[str, Any] = {
        "klass": klass,
        "mode": mode,
        "kind": kind,
        "nodes": 100,
        "repeat": 0,
        "order": 1,
        "existing": 30,
        "pods": 60,
        "bound": 60,
        "throughput": throughput,
        "create_rate": 500.0,
        "p50": p99 / 2,
        "p99": p99,
        "max_latency": p99,
        "span": 60 / throughput,
        "cpu_seconds": {"scheduler": 0.6},
    }
    values.update(changes)
    return WorkloadRecord(**values)


def test_render_has_the_summary_every_run_and_the_method() -> None:
    options = _options()
    section = WorkloadsSection(options)
    section.records = [
        _record("basic", UPSTREAM, SATURATION, 200.0, 0.3),
        _record("basic", OURS, SATURATION, 300.0, 0.2),
        _record("basic", OURS, OPEN_LOOP, math.nan, 0.02, rate=100.0, latencies=[0.01, 0.02]),
        _record("basic", UPSTREAM, OPEN_LOOP, math.nan, 0.04, rate=100.0, latencies=[0.04, 0.03]),
        _record(
            "required-anti-affinity",
            OURS,
            SATURATION,
            100.0,
            0.5,
            violation_count=1,
            violations=["anti-affinity: ns/a and ns/b share kubernetes.io/hostname=n"],
        ),
        _record("required-anti-affinity", UPSTREAM, SATURATION, 50.0, 0.9),
    ]
    text = section.render(run_info(options))
    assert text.startswith("## Workload classes\n\n_Measured 2025-01-01 00:00 UTC")
    assert "### 100 nodes" in text
    basic = next(line for line in text.splitlines() if line.startswith("| `basic` | 100 |"))
    assert "| 30 / 60 | 300.0 | 200.0 | **1.50×** | 200 / 300 | 100 | 20.0 | 40.0 | 0.50× |" in basic
    anti = next(line for line in text.splitlines() if line.startswith("| `required-anti-affinity` | 100 |"))
    assert "**2.00×**" in anti and anti.endswith("| **1** / 0 |")
    assert "### Every run" in text and "### Method" in text and "Placement violations" in text
    assert "time goes" not in text
    assert "The `pvc` class was not part of this run." in text
    from bench.profiles import Profile

    section.records[0].profile = Profile(100, 80, [("Fit.filter (x.py)", 0.5)], [("scheduling cycles", 0.9)])
    rendered = section.render(run_info(options))
    assert "### Where our scheduler's time goes" in rendered
    assert "scheduling cycles 90%" in rendered and "50% `Fit.filter (x.py)`" in rendered


def test_open_loop_p99_is_of_every_open_loop_run_pooled() -> None:
    """Two runs of 100 pods: the p99 is the pooled 198th value, not either run's own p99."""
    section = WorkloadsSection(_options())
    first = [index / 1000 for index in range(100)]  # 0-99 ms
    second = [0.2 + index / 1000 for index in range(100)]  # 200-299 ms
    section.records = [
        _record("basic", OURS, OPEN_LOOP, math.nan, first[98], latencies=first),
        _record("basic", OURS, OPEN_LOOP, math.nan, second[98], latencies=second, repeat=1),
        _record("basic", UPSTREAM, OPEN_LOOP, math.nan, 0.05, latencies=[0.05]),
        _record("basic", OURS, SATURATION, 100.0, 0.5),
    ]
    p50, p99 = section.open_loop_latency(100, "basic", OURS)
    assert (p50, p99) == (first[99], second[97])
    assert section.open_loop_latency(100, "basic", UPSTREAM) == (0.05, 0.05)
    assert all(math.isnan(value) for value in section.open_loop_latency(100, "spread-hard", OURS))


def test_every_run_says_how_busy_the_whole_machine_was() -> None:
    cpu = {"scheduler": 1.0, "etcd": 2.0}
    busy = _record("basic", OURS, OPEN_LOOP, 100.0, 0.02, span=2.0, cpu_seconds=cpu)
    assert busy.machine_busy == 1.5
    assert math.isnan(_record("basic", OURS, OPEN_LOOP, 100.0, 0.02, span=math.nan).machine_busy)
    section = WorkloadsSection(_options())
    section.records = [busy]
    row = next(line for line in section.render(run_info(_options())).splitlines() if "open-loop" in line)
    assert row.endswith("| 1.50 |")


def test_open_loop_rate_of_the_section_uses_each_schedulers_best_saturation_run() -> None:
    section = WorkloadsSection(_options(open_loop_fraction=0.5, open_loop_max_rate=0.0))
    assert section.open_loop_rate(100, "basic") is None
    section.records = [
        _record("basic", OURS, SATURATION, 300.0, 0.2),
        _record("basic", OURS, SATURATION, 320.0, 0.2),
        _record("basic", UPSTREAM, SATURATION, 181.0, 0.3),
    ]
    assert section.open_loop_rate(100, "basic") == 90
    capped = WorkloadsSection(_options(open_loop_fraction=0.5, open_loop_max_rate=30.0))
    capped.records = section.records
    assert capped.open_loop_rate(100, "basic") == 30


def test_open_loop_rule_names_the_ceiling_only_when_there_is_one() -> None:
    assert open_loop_rule(_options(open_loop_fraction=0.5, open_loop_max_rate=30.0)).endswith(
        "throughputs and at most 30 pods/s"
    )
    assert open_loop_rule(_options(open_loop_fraction=0.5, open_loop_max_rate=0.0)).endswith("throughputs")


def test_profile_summary_counts_busy_samples_by_function_and_phase() -> None:
    from bench.profiles import summarise

    top = "BaseEventLoop._run_once (asyncio/base_events.py:1922);Handle._run (asyncio/events.py:80)"
    cycle = "schedule_pod (secondary_scheduler/scheduler/schedule_one.py:240)"
    lines = [
        f"{top};EpollSelector.select (selectors.py:468) 30",
        "scheduler (secondary_scheduler/cli/scheduler_cmd.py:409);run (uvloop/__init__.py:92);"
        "Runner.run (asyncio/runners.py:118) 20",
        f"{top};{cycle};Fit.filter (secondary_scheduler/plugins/noderesources/fit.py:150) 30",
        f"{top};{cycle};Evaluator.preempt (secondary_scheduler/framework/preemption.py:260) 10",
        f"{top};Reflector.run (/opt/secsched/lib/secondary_scheduler/kube/reflector.py:80);loads (x.py:1) 10",
    ]
    profile = summarise(lines)
    assert (profile.samples, profile.busy) == (100, 50)
    assert profile.functions[0] == ("Fit.filter (secondary_scheduler/plugins/noderesources/fit.py)", 0.6)
    phases = dict(profile.phases)
    assert phases["scheduling cycles"] == 0.8
    assert phases["  of which preemption"] == 0.2
    assert phases["watch events in"] == 0.2


def test_a_run_records_what_the_counters_moved_by_over_its_span() -> None:
    from bench.stats import RunMeasures

    run = RunMeasures(
        kind="ours", nodes=1, repeat=0, order=1, pods=4, bound=4, throughput=1.0, create_rate=1.0,
        p50=0.1, p99=0.2, max_latency=0.3, span=4.0,
    )  # fmt: skip
    before = {"scheduled": 10.0, "failed": 1.0, "duration_count": 10.0, "duration_sum": 1.0}
    after = {"scheduled": 14.0, "failed": 2.0, "duration_count": 14.0, "duration_sum": 1.2}
    run.add_span(({"scheduler": 1.0}, {"scheduler": 1.4}), (before, after))
    assert run.cpu_ms_per_pod("scheduler") == pytest.approx(100.0)
    assert (run.scheduled_attempts, run.failed_attempts) == (4.0, 1.0)
    assert run.mean_attempt_seconds == pytest.approx(0.05)


def test_a_runs_metrics_page_is_kept_whole(tmp_path: Path) -> None:
    """The page is saved as the scheduler served it, so any metric can be compared afterwards."""
    page = '# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram\nscheduler_x{a="b"} 1\n'
    run = SimpleNamespace(get=lambda path: SimpleNamespace(text=page if path == "/metrics" else ""))
    target = tmp_path / "o1-basic-open-loop.metrics-after.txt"
    keep_counters(run, target)  # type: ignore[arg-type]
    assert target.read_text() == page
