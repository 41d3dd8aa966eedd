"""A plugin's bug is the pod's error status in kube-scheduler's words, naming the plugin and the
extension point, at every extension point; the traceback is logged once at -v=4 (DEBUG); a
plugin missing the method of its base, or an installed package that cannot be imported, is
refused before any pod is scheduled, and only where a profile enables it."""

from __future__ import annotations

import logging
import random
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from tests.unit.framework.kubeobjects import make_node, pod_info, table_of

from secondary_scheduler.cli.main import cli
from secondary_scheduler.framework import Code, CycleState, Framework, Handle, NodeTable, PodInfo, ProfileSpec
from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    Rejection,
    ReservePlugin,
    ScorePlugin,
)
from secondary_scheduler.framework.status import SUCCESS, Status
from secondary_scheduler.plugins import registry as registry_module
from secondary_scheduler.plugins.registry import PluginLoadError, check_plugin, in_tree_registry, merge
from secondary_scheduler.scheduler.schedule_one import bind, schedule_pod

RUNTIME_LOGGER = "secondary_scheduler.framework.runtime"


class Faulty(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    BindPlugin,
    PostBindPlugin,
):
    """Behaves at every point unless the pod's label `break` names that point: then it raises,
    or with label `how=wrong` returns a result of the wrong shape."""

    name: ClassVar[str] = "Faulty"

    def _fails(self, pod: PodInfo, point: str, good: Any, wrong: Any) -> Any:
        if pod.labels.get("break") != point:
            return good
        if pod.labels.get("how") == "wrong":
            return wrong
        raise ZeroDivisionError(f"{point} broke")

    def pre_enqueue(self, pod: PodInfo) -> Status:
        return self._fails(pod, "PreEnqueue", SUCCESS, None)

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        return self._fails(pod, "PreFilter", SUCCESS, "ok")

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        return self._fails(pod, "Filter", [], [Rejection(np.array([True]), "short mask")])

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        return self._fails(pod, "PostFilter", PostFilterResult(Status.unschedulable("no")), SUCCESS)

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        return self._fails(pod, "PreScore", SUCCESS, 0)

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return self._fails(pod, "Score", np.zeros(len(nodes), dtype=np.int64), [1])

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        return self._fails(pod, "NormalizeScore", scores, {"n0": 1})

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._fails(pod, "Reserve", SUCCESS, True)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._fails(pod, "Unreserve", None, None)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return self._fails(pod, "Permit", (SUCCESS, 0.0), SUCCESS)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._fails(pod, "PreBind", SUCCESS, "bound")

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return self._fails(pod, "Bind", SUCCESS, None)

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._fails(pod, "PostBind", None, None)


POINTS = (
    "preEnqueue",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)


def faulty_framework() -> Framework:
    plugins = {point: [("Faulty", 1)] for point in POINTS}
    for point in ("preFilter", "filter"):  # so that a pod too big for its node reaches PostFilter
        plugins[point].append(("NodeResourcesFit", 1))
    registry = merge(in_tree_registry(), (Faulty,), "test")
    return Framework(ProfileSpec("test", plugins), registry, Handle(), rng=random.Random(1))


def broken(point: str, how: str = "raise") -> PodInfo:
    return pod_info("p", labels={"break": point, "how": how})


TABLE = table_of([make_node("n0"), make_node("n1")])

SCHEDULING = [
    ("PreFilter", 'running PreFilter plugin "Faulty": ZeroDivisionError: PreFilter broke'),
    ("Filter", 'running "Faulty" filter plugin: ZeroDivisionError: Filter broke'),
    ("PreScore", 'running PreScore plugin "Faulty": ZeroDivisionError: PreScore broke'),
    ("Score", 'running Score plugins: plugin "Faulty" failed with: ZeroDivisionError: Score broke'),
    (
        "NormalizeScore",
        'running Normalize on Score plugins: plugin "Faulty" failed with: '
        "ZeroDivisionError: NormalizeScore broke",
    ),
]


@pytest.mark.parametrize(("point", "message"), SCHEDULING)
def test_an_exception_in_the_scheduling_cycle_is_the_pods_error(point: str, message: str) -> None:
    result = schedule_pod(faulty_framework(), broken(point), TABLE, CycleState())
    assert result.status.code == Code.ERROR
    assert result.status.message == message


@pytest.mark.parametrize(
    ("point", "message"),
    [
        (
            "PreFilter",
            'running PreFilter plugin "Faulty": PreFilter of plugin "Faulty" returned str '
            "'ok', not a Status",
        ),
        ("Filter", 'running "Faulty" filter plugin: Filter of plugin "Faulty" returned Rejection'),
        (
            "PreScore",
            'running PreScore plugin "Faulty": PreScore of plugin "Faulty" returned int 0, not a Status',
        ),
        (
            "Score",
            'running Score plugins: plugin "Faulty" failed with: TypeError: Score of plugin "Faulty" '
            "returned list [1], not 2 integer scores",
        ),
        (
            "NormalizeScore",
            'plugin "Faulty" failed with: TypeError: NormalizeScore of plugin "Faulty" returned dict',
        ),
    ],
)
def test_a_wrong_result_in_the_scheduling_cycle_is_the_pods_error(point: str, message: str) -> None:
    result = schedule_pod(faulty_framework(), broken(point, "wrong"), TABLE, CycleState())
    assert result.status.code == Code.ERROR
    assert message in result.status.message


def test_a_post_filter_fault_names_the_plugin() -> None:
    table = table_of([make_node("n0", cpu="1")])
    pod = pod_info("p", labels={"break": "PostFilter"}, requests={"cpu": "2"})
    result = schedule_pod(faulty_framework(), pod, table, CycleState())
    assert result.status.code == Code.ERROR
    assert result.status.message == 'running PostFilter plugin "Faulty": ZeroDivisionError: PostFilter broke'
    wrong = pod_info("p", labels={"break": "PostFilter", "how": "wrong"}, requests={"cpu": "2"})
    result = schedule_pod(faulty_framework(), wrong, table, CycleState())
    assert 'PostFilter of plugin "Faulty" returned Status' in result.status.message


@pytest.mark.parametrize("how", ["raise", "wrong"])
def test_pre_enqueue_reserve_and_permit_faults(how: str) -> None:
    fw = faulty_framework()
    status = fw.run_pre_enqueue(broken("PreEnqueue", how))
    assert (status.code, status.plugin) == (Code.ERROR, "Faulty")
    assert status.message.startswith('running PreEnqueue plugin "Faulty": ')
    status = fw.run_reserve_plugins_reserve(CycleState(), broken("Reserve", how), "n0")
    assert (status.code, status.plugin) == (Code.ERROR, "Faulty")
    assert status.message.startswith('running Reserve plugin "Faulty": ')
    permit = fw.run_permit_plugins(CycleState(), broken("Permit", how), "n0")
    assert (permit.status.code, permit.status.plugin) == (Code.ERROR, "Faulty")
    assert permit.status.message.startswith('running Permit plugin "Faulty": ')


@pytest.mark.parametrize(
    ("point", "how"), [("PreBind", "raise"), ("PreBind", "wrong"), ("Bind", "raise"), ("Bind", "wrong")]
)
async def test_pre_bind_and_bind_faults(point: str, how: str) -> None:
    fw = faulty_framework()
    pod = broken(point, how)
    if point == "PreBind":
        status = await fw.run_pre_bind_plugins(CycleState(), pod, "n0")
    else:
        status = await bind(fw, CycleState(), pod, "n0")
    assert (status.code, status.plugin) == (Code.ERROR, "Faulty")
    assert status.message.startswith(f'running {point} plugin "Faulty": ')


def test_unreserve_and_post_bind_faults_are_logged_and_the_cycle_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fw = faulty_framework()
    with caplog.at_level(logging.DEBUG, logger=RUNTIME_LOGGER):
        fw.run_reserve_plugins_unreserve(CycleState(), broken("Unreserve"), "n0")
        fw.run_post_bind_plugins(CycleState(), broken("PostBind"), "n0")
    errors = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert errors == [
        'running Unreserve plugin "Faulty" for pod default/p: ZeroDivisionError: Unreserve broke',
        'running PostBind plugin "Faulty" for pod default/p: ZeroDivisionError: PostBind broke',
    ]


def test_the_traceback_is_logged_once_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    fw = faulty_framework()
    with caplog.at_level(logging.DEBUG, logger=RUNTIME_LOGGER):
        for _ in range(3):
            schedule_pod(fw, broken("Score"), TABLE, CycleState())
    tracebacks = [record for record in caplog.records if record.exc_info is not None]
    assert len(tracebacks) == 1
    assert (
        tracebacks[0].levelno == logging.DEBUG
        and "plugin Faulty failed at Score" in tracebacks[0].getMessage()
    )


class NoScore(ScorePlugin):
    name: ClassVar[str] = "NoScore"


class HalfReserve(ReservePlugin):
    name: ClassVar[str] = "HalfReserve"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS


class NoArgs(ScorePlugin):
    """Forgets to keep what it needs: its __init__ raises."""

    name: ClassVar[str] = "NoArgs"

    def __init__(self, args: Any, handle: Handle) -> None:
        raise AttributeError("'NoArgs' object has no attribute 'args'")

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        return np.zeros(len(nodes), dtype=np.int64)


def test_a_plugin_missing_its_bases_method_is_refused_when_loaded() -> None:
    with pytest.raises(
        PluginLoadError, match=r"--plugin=m:NoScore: NoScore does not define score\(\) of ScorePlugin"
    ):
        check_plugin(NoScore, "--plugin=m:NoScore")
    with pytest.raises(PluginLoadError, match=r"does not define unreserve\(\) of ReservePlugin"):
        check_plugin(HalfReserve, "x")


def test_a_plugin_that_fails_to_initialize_names_itself() -> None:
    registry = merge(in_tree_registry(), (NoArgs,), "test")
    with pytest.raises(
        ValueError,
        match=r'initializing plugin "NoArgs": AttributeError: .NoArgs. object has no attribute .args.',
    ):
        Framework(ProfileSpec("test", {"score": [("NoArgs", 1)]}), registry, Handle())


def test_config_validate_refuses_a_plugin_missing_a_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "halfplugin.py").write_text(
        "from secondary_scheduler.pluginapi import ScorePlugin\nclass Half(ScorePlugin):\n    name = 'Half'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(cli, ["config", "validate", "--plugin", "halfplugin:Half", "-"], input="")
    assert result.exit_code == 1
    assert "--plugin=halfplugin:Half: Half does not define score() of ScorePlugin" in result.output


def broken_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = EntryPoint(
        "GpuScore", "gpu_plugins_not_installed.score:GpuScore", registry_module.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [entry])


def config(tmp_path: Path, plugin: str | None) -> str:
    profile: dict[str, Any] = {"schedulerName": "secondary"}
    if plugin:
        profile["plugins"] = {"score": {"enabled": [{"name": plugin, "weight": 1}]}}
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [profile],
            }
        )
    )
    return str(path)


def test_a_broken_plugin_package_fails_only_where_it_is_enabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken_entry_point(monkeypatch)
    registry = registry_module.load_registry()  # loading no longer fails for every command
    assert "NodeResourcesFit" in registry
    fine = CliRunner().invoke(cli, ["config", "validate", config(tmp_path, None)])
    assert fine.exit_code == 0, fine.output
    refused = CliRunner().invoke(cli, ["config", "validate", config(tmp_path, "GpuScore")])
    assert refused.exit_code == 1
    assert "profile 'secondary' enables plugin 'GpuScore' of package an unknown package" in refused.output
    assert "cannot import it: No module named 'gpu_plugins_not_installed'" in refused.output
    with pytest.raises(
        ValueError, match="initializing plugin \"GpuScore\": PluginLoadError: plugin 'GpuScore'"
    ):
        Framework(ProfileSpec("secondary", {"score": [("GpuScore", 1)]}), registry, Handle())
