"""The demo's replay scene without a cluster: a small generated fleet replayed per example profile, its
plots embedded in the report, and the example configs it needs or may leave out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from secondary_scheduler.plugins.registry import load_registry
from secsched_devtools.demo.replayscene import (
    EXAMPLES,
    FIGURES,
    OPTIONAL_CONFIGS,
    REQUIRED_CONFIGS,
    ReplayScene,
    ReplaySceneError,
    example_configs,
    run_replay_scene,
)
from secsched_devtools.demo.report import replay_section

SMALL = ReplayScene(vms=40, nodes=4, days=0.25)


def test_every_example_profile_is_replayed_and_its_plots_join_the_report(tmp_path: Path) -> None:
    heard: list[str] = []
    scene = run_replay_scene(tmp_path / "replay", heard.append, SMALL)
    assert [result.config for result in scene.results] == [*REQUIRED_CONFIGS, *OPTIONAL_CONFIGS]
    assert not scene.skipped
    for result in scene.results:
        assert result.decisions >= SMALL.vms // 2  # the fleet's VMs alive in the first hours at least
        assert result.simulated_seconds <= SMALL.days * 86400
    assert heard and heard[0].startswith("secondary-scheduler (targetloadpacking.yaml): day 0.0")
    assert scene.page.exists()
    section = replay_section(scene)
    assert section.count('<img src="data:image/png;base64,') == len(FIGURES)
    for result in scene.results:
        assert f"{result.name} ({result.config})" in section
    assert "secsched replay --trace week.jsonl.gz --nodes 4" in section


def test_an_optional_config_that_does_not_load_is_left_out_saying_why(tmp_path: Path) -> None:
    for name in REQUIRED_CONFIGS:
        shutil.copy(EXAMPLES / name, tmp_path / name)
    (tmp_path / "ours.yaml").write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Nope\n")
    loaded, skipped = example_configs(load_registry(), tmp_path)
    assert [name for name, _ in loaded] == list(REQUIRED_CONFIGS)
    assert list(skipped) == ["ours.yaml"] and "kind" in skipped["ours.yaml"]


def test_a_required_config_that_is_missing_stops_the_scene(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "default.yaml", tmp_path / "default.yaml")
    with pytest.raises(ReplaySceneError, match=r"targetloadpacking\.yaml"):
        example_configs(load_registry(), tmp_path)


def test_no_section_without_a_replay() -> None:
    assert replay_section(None) == ""
