"""Ours against upstream's own code: the same random cases through both, the same answers required.

Every case (``cases.Generator``, seeded) goes through ``secsched score``'s cycle in this process
and through ``conformance-harness``, a thin Go program built from the very modules of
kube-scheduler v1.34 and scheduler-plugins that the local cluster runs (``secsched cluster
build``). Both report per node: feasible or not, the filter reason, each score plugin's raw,
normalized and weighted score, the total, and for a pod with ResourceClaims to allocate the
devices each claim would get there (the request of each device); all must be equal.

``make test`` runs a few hundred cases; ``make conformance`` thousands. Environment:
``CONFORMANCE_CASES`` (count), ``CONFORMANCE_SEED``. A failing case is written, with both
outputs, under ``out/conformance/`` with the two commands that reproduce it.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from secondary_scheduler.cli.score_inputs import ClusterSnapshot, RecentPod
from secondary_scheduler.cli.score_run import CycleError, explain
from secondary_scheduler.config import load_config
from secondary_scheduler.config.model import Profile
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.dynamicresources.dynamic_resources import AllocationNote
from secondary_scheduler.plugins.registry import in_tree_registry
from secondary_scheduler.plugins.trimaran.watchermetrics import WatcherMetrics
from secsched_devtools.cluster import build
from tests.conformance.cases import JSON, Case, Generator
from tests.conformance.dra_cases import POOL_ORDER_DEPENDENT

CASES = int(os.environ.get("CONFORMANCE_CASES", "300"))
SEED = int(os.environ.get("CONFORMANCE_SEED", "1234"))
HARNESS = build.binary_path("conformance-harness")
OUT = Path(__file__).resolve().parents[2] / "out" / "conformance"
GENERATOR = Generator(SEED)
PENDING_PLUGINS = frozenset({"VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits"})
"""Upstream's volume plugins, which ours is still gaining (the volume issue, not this one). The
generator makes no volumes, so they score 0 on every node and change no total; until ours
reports them they are counted as "not in ours" instead of failing, and compared once it does."""


POOL_ORDER_CHECK = "DRA devices, random pool order"
"""Devices per claim where upstream's answer depends on its Go map order of pools: not failed."""


class Tally:
    """Agreement counts over the run, printed at the end of the session (see conftest)."""

    def __init__(self) -> None:
        self.cases = 0
        self.agreed_cases = 0
        self.compared: Counter[str] = Counter()
        self.agreed: Counter[str] = Counter()
        self.features: Counter[str] = Counter()
        self.pending: Counter[str] = Counter()
        self.failures: list[str] = []

    def count(self, what: str, equal: bool) -> None:
        self.compared[what] += 1
        self.agreed[what] += int(equal)


TALLY = Tally()


class Harness:
    """One harness process reading every case as a JSON line; answers are read as tests need them."""

    def __init__(self, cases: list[Case], workdir: Path) -> None:
        if "conformance-harness" in build.missing_binaries():
            pytest.fail(
                f"{HARNESS} (the harness built from this checkout's source) is missing:"
                " run `make binaries` (secsched cluster build)"
            )
        path = workdir / "cases.jsonl"
        with path.open("w") as stream:
            for case in cases:
                line = {
                    "id": str(case.index),
                    "config": case.config,
                    "snapshot": case.snapshot,
                    "pod": case.pod,
                }
                stream.write(json.dumps(line) + "\n")
        self._stderr = (workdir / "harness.stderr").open("w")
        self._process = subprocess.Popen(
            [str(HARNESS), "--cases", str(path)], stdout=subprocess.PIPE, stderr=self._stderr, text=True
        )
        self._answers: dict[str, JSON] = {}

    def answer(self, index: int) -> JSON:
        key = str(index)
        stdout: IO[str] | None = self._process.stdout
        assert stdout is not None
        while key not in self._answers:
            line = stdout.readline()
            if not line:
                code = self._process.wait()
                pytest.fail(f"conformance-harness ended (exit {code}) before case {index}; see its stderr")
            answer = json.loads(line)
            self._answers[str(answer.get("id"))] = answer
        return self._answers.pop(key)

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        self._stderr.close()


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    cases = [GENERATOR.case(index) for index in range(CASES)]
    running = Harness(cases, tmp_path_factory.mktemp("conformance"))
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(autouse=True, scope="module")
def _quiet_load_aware_plugins() -> Iterator[None]:
    """Ours' load-aware plugins warn about nodes without metrics (what `secsched score` also mutes)."""
    logger = logging.getLogger("secondary_scheduler.plugins.trimaran")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


_profiles: dict[str, Profile] = {}


def _profile(case: Case) -> Profile:
    """Our effective profile for the case's config (loaded once per config)."""
    if case.profile_name not in _profiles:
        loaded = load_config(case.ours_config, f"<{case.profile_name}>", catalog=IN_TREE_CATALOG)
        _profiles[case.profile_name] = loaded.config.profiles[0]
    return _profiles[case.profile_name]


def run_ours(case: Case) -> JSON:
    """``secsched score --output json`` for the case, in this process (``{"error": ...}`` if the
    cycle fails): the scheduler's framework and plugins, with the inputs the CLI would build."""
    snapshot = copy.deepcopy(case.snapshot)
    by_key = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in snapshot["pods"]}
    recent = [
        RecentPod(by_key[entry["pod"]], by_key[entry["pod"]]["spec"]["nodeName"], float(entry["timestamp"]))
        for entry in snapshot.get("recentlyScheduled", [])
    ]
    metrics = WatcherMetrics.parse(snapshot["metrics"]) if "metrics" in snapshot else None
    cluster = ClusterSnapshot(
        nodes=snapshot["nodes"],
        pods=snapshot["pods"],
        metrics=metrics,
        recently_scheduled=recent,
        now=float(snapshot["now"]),
        objects=snapshot["objects"],
    )
    try:
        report = explain(_profile(case), cluster, copy.deepcopy(case.pod), registry=in_tree_registry())
    except CycleError as error:
        return {"error": str(error)}
    result = report.as_json()
    for note in report.notes:
        if isinstance(note, AllocationNote):  # what the harness reads from upstream's cycle state
            for name, devices in note.requests_by_node().items():
                node = result["nodes"].get(name)
                if node is not None and node["feasible"]:
                    node["devices"] = devices
    return result


def compare(ours: JSON, upstream: JSON, *, devices_comparable: bool = True) -> list[str]:
    """Every difference between the two reports, one line each; tallies agreement per plugin.

    ``devices_comparable`` False: the devices per claim may depend on upstream's random pool
    order (``dra_cases.pool_order_matters``), so their agreement is counted apart, not failed."""
    if "error" in ours or "error" in upstream:
        equal = ("error" in ours) == ("error" in upstream)
        TALLY.count("cycle errors", equal)
        if equal:
            return []
        return [
            f"cycle: ours {ours.get('error', 'succeeded')!r}, upstream {upstream.get('error', 'succeeded')!r}"
        ]
    differences: list[str] = []
    ours_nodes, upstream_nodes = ours["nodes"], upstream["nodes"]
    if set(ours_nodes) != set(upstream_nodes):
        return [f"nodes reported: ours {sorted(ours_nodes)}, upstream {sorted(upstream_nodes)}"]
    for name in sorted(ours_nodes):
        mine, theirs = ours_nodes[name], upstream_nodes[name]
        same_filter = mine["feasible"] == theirs["feasible"] and same_reason(mine["reason"], theirs["reason"])
        TALLY.count("Filter (feasible, reason)", same_filter)
        if not same_filter:
            differences.append(f"{name}: ours {_verdict(mine)}; upstream {_verdict(theirs)}")
            continue
        if not mine["feasible"]:
            continue
        if "devices" in mine or "devices" in theirs:
            same_devices = mine.get("devices") == theirs.get("devices")
            if not devices_comparable:  # upstream's answer is one of several: counted, not failed
                TALLY.count(POOL_ORDER_CHECK, same_devices)
            else:
                TALLY.count("DynamicResources devices", same_devices)
                if not same_devices:
                    ours_devices, upstream_devices = mine.get("devices"), theirs.get("devices")
                    differences.append(f"{name}: devices: ours {ours_devices}, upstream {upstream_devices}")
        for plugin in sorted(set(mine["plugins"]) | set(theirs["plugins"])):
            a, b = mine["plugins"].get(plugin), theirs["plugins"].get(plugin)
            if a is None and plugin in PENDING_PLUGINS:
                TALLY.pending[plugin] += 1
                continue
            TALLY.count(plugin, a == b)
            if a != b:
                differences.append(f"{name}: {plugin}: ours {a}, upstream {b}")
        same_total = mine["total"] == theirs["total"]
        TALLY.count("total", same_total)
        if not same_total:
            differences.append(f"{name}: total: ours {mine['total']}, upstream {theirs['total']}")
    return differences


NATIVE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")


def same_reason(ours: str, upstream: str) -> bool:
    """Equal reasons, except for the order of extended resources in Fit's "Insufficient X" list:
    upstream checks them by ranging over a Go map, so their order changes from run to run."""

    def parts(reason: str) -> tuple[list[str], list[str]]:
        ordered, extended = [], []
        for part in reason.split(", "):
            name = part.removeprefix("Insufficient ")
            is_extended = part.startswith("Insufficient ") and name not in NATIVE_RESOURCES
            (extended if is_extended else ordered).append(part)
        return ordered, sorted(extended)

    return ours == upstream or parts(ours) == parts(upstream)


def _verdict(node: JSON) -> str:
    return "feasible" if node["feasible"] else f"infeasible ({node['reason']!r})"


def _save(case: Case, ours: JSON, upstream: JSON, differences: list[str]) -> str:
    """The case's files, both outputs and the difference, and the commands that reproduce it."""
    directory = OUT / f"seed-{SEED}" / f"case-{case.index}"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(case.config)
    (directory / "ours-config.yaml").write_text(case.ours_config)
    (directory / "snapshot.json").write_text(json.dumps(case.snapshot, indent=2))
    (directory / "pod.json").write_text(json.dumps(case.pod, indent=2))
    (directory / "ours.json").write_text(json.dumps(ours, indent=2, sort_keys=True))
    (directory / "upstream.json").write_text(json.dumps(upstream, indent=2, sort_keys=True))
    (directory / "differences.txt").write_text("\n".join(differences) + "\n")
    inputs = f"--snapshot {directory}/snapshot.json --pod {directory}/pod.json"
    return (
        f"case {case.index} (seed {SEED}, profile {case.profile_name}) in {directory}\n"
        f"  ours:     .venv/bin/secsched score --config {directory}/ours-config.yaml {inputs} --output json\n"
        f"  upstream: {HARNESS} --config {directory}/config.yaml {inputs}\n"
        f"  again:    CONFORMANCE_SEED={SEED} CONFORMANCE_CASES={case.index + 1} "
        f".venv/bin/pytest tests/conformance -k 'case_{case.index}_'\n"
    )


def _case_id(index: int) -> str:
    return f"case_{index}_{GENERATOR.profile_for(index)}"


@pytest.mark.parametrize("index", range(CASES), ids=_case_id)
def test_same_decisions_as_upstream(index: int, harness: Harness) -> None:
    case = GENERATOR.case(index)
    ours = run_ours(case)
    answer = harness.answer(index)
    upstream: JSON = answer["result"] if "result" in answer else {"error": answer.get("error")}
    differences = compare(ours, upstream, devices_comparable=POOL_ORDER_DEPENDENT not in case.features)
    TALLY.cases += 1
    TALLY.features.update(case.features)
    if not differences:
        TALLY.agreed_cases += 1
        return
    reproduction = _save(case, ours, upstream, differences)
    TALLY.failures.append(reproduction)
    shown = "\n".join(f"  - {line}" for line in differences[:25])
    more = f"\n  ... {len(differences) - 25} more" if len(differences) > 25 else ""
    pytest.fail(f"{reproduction}differences:\n{shown}{more}", pytrace=False)


def summary_lines() -> list[str]:
    """Agreement per plugin, for the terminal summary."""
    if not TALLY.cases:
        return []
    lines = [
        f"conformance: {TALLY.agreed_cases}/{TALLY.cases} cases agree with upstream "
        f"(seed {SEED}); per check (nodes compared, agreeing):"
    ]
    for what in sorted(TALLY.compared):
        compared, agreed = TALLY.compared[what], TALLY.agreed[what]
        lines.append(f"  {what:<36} {agreed:>6}/{compared:<6} {100.0 * agreed / compared:6.2f}%")
    for plugin, nodes in sorted(TALLY.pending.items()):
        lines.append(f"  {plugin:<36} not compared on {nodes} nodes: ours has no such plugin yet")
    lines.append("features exercised (cases):")
    features = [f"{name} {count}" for name, count in sorted(TALLY.features.items())]
    for start in range(0, len(features), 4):
        lines.append("  " + ", ".join(features[start : start + 4]))
    return lines
