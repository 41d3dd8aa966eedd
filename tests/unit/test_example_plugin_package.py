"""The example plugin package, installed as a user would install theirs (``make setup`` does
``pip install -e examples/plugins/secsched-example-plugins``): found through its entry points,
its args validated by ``secsched config validate`` like an in-tree plugin's, and its decisions
explained by ``secsched score``. The plugins' own tests live next to them; the cluster test is
tests/cluster/test_example_plugins.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli
from secondary_scheduler.plugins.registry import ENTRY_POINT_GROUP, load_registry

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "secsched-example-plugins"
EXAMPLE = PACKAGE_DIR / "score"
NOT_INSTALLED = f"the example plugin package is not installed: `make setup` does pip install -e {PACKAGE_DIR}"


def test_the_package_is_found_through_its_entry_points() -> None:
    ours = {
        entry.name: entry.value
        for entry in entry_points(group=ENTRY_POINT_GROUP)
        if entry.dist is not None and entry.dist.name == "secsched-example-plugins"
    }
    assert ours == {
        "AvoidNodeLabel": "secsched_example_plugins.avoidlabel:AvoidNodeLabel",
        "NodeLabelPreference": "secsched_example_plugins.labelpreference:NodeLabelPreference",
    }, NOT_INSTALLED
    registry = load_registry()
    assert registry["NodeLabelPreference"].__module__ == "secsched_example_plugins.labelpreference"
    assert registry["AvoidNodeLabel"].__module__ == "secsched_example_plugins.avoidlabel"


def test_config_validate_accepts_a_profile_that_enables_it() -> None:
    result = CliRunner().invoke(cli, ["config", "validate", str(EXAMPLE / "config.yaml")])
    assert result.exit_code == 0, result.output
    [profile] = yaml.safe_load(result.stdout)["profiles"]
    plugins = profile["plugins"]
    assert {"name": "NodeLabelPreference"} in plugins["preScore"]["enabled"]  # from its bases
    assert {"name": "NodeLabelPreference", "weight": 5} in plugins["score"]["enabled"]
    assert {"name": "AvoidNodeLabel"} in plugins["filter"]["enabled"]
    assert "AvoidNodeLabel" not in str(plugins["score"])  # a Filter only: not a score plugin
    args = {entry["name"]: entry["args"] for entry in profile["pluginConfig"]}
    assert args["NodeLabelPreference"] == {"label": "example.com/tier", "preferredValues": ["gold", "silver"]}
    # Defaults come from the plugin's args model, and only from there.
    assert args["AvoidNodeLabel"] == {
        "label": "example.com/draining",
        "values": [],
        "podOptOutLabel": "example.com/ignore-draining",
    }


def test_config_validate_reports_its_args_errors_at_their_line(tmp_path: Path) -> None:
    text = (EXAMPLE / "config.yaml").read_text()
    text = text.replace("preferredValues: [gold, silver]", "preferredValues: [gold, gold]")
    text = text.replace("podOptOutLabel:", "podOptOut:")
    text = text.replace("label: example.com/draining", "label: not a label")
    path = tmp_path / "config.yaml"
    path.write_text(text)
    lines = text.splitlines()

    def line_of(fragment: str) -> int:
        return next(number for number, line in enumerate(lines, 1) if fragment in line)

    result = CliRunner().invoke(cli, ["config", "validate", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: {path}:{line_of('[gold, gold]')}: profiles[0].pluginConfig[0].args.preferredValues: "
        "gold listed more than once: each value has one rank",
        f"error: {path}:{line_of('not a label')}: profiles[0].pluginConfig[1].args.label: "
        "'not a label' is not a valid label key: the name part must be 1-63 characters, alphanumerics "
        "with '-', '_' or '.' inside (e.g. example.com/tier)",
        f"error: {path}:{line_of('podOptOut:')}: profiles[0].pluginConfig[1].args.podOptOut: "
        "unknown field `podOptOut`: did you mean `podOptOutLabel`?",
    ]
    assert result.stderr.splitlines()[-1] == f"{path}: 3 errors"


@pytest.fixture(autouse=True)
def quiet_logger_restored() -> Iterator[None]:
    """`secsched score` silences the load-aware plugins' logger for its process; give it back,
    or the tests after these (their warnings checked with caplog) would hear nothing."""
    logger = logging.getLogger("secondary_scheduler.plugins.trimaran")
    level = logger.level
    yield
    logger.setLevel(level)


def score(*extra: str) -> list[str]:
    return [
        "score",
        f"--config={EXAMPLE / 'config.yaml'}",
        f"--snapshot={EXAMPLE / 'snapshot.yaml'}",
        f"--pod={EXAMPLE / 'pod.yaml'}",
        *extra,
    ]


def test_score_explains_a_decision_with_the_example_plugins() -> None:
    result = CliRunner().invoke(cli, score("--output=json"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # worker-1 is gold (busier than the others, but weight 5 on the tier wins); worker-2 is
    # gold too, but draining; worker-3 is silver; worker-4 has no tier.
    assert report["selected"] == "worker-1"
    nodes = report["nodes"]
    tier = {name: node["plugins"]["NodeLabelPreference"] for name, node in nodes.items() if node["feasible"]}
    assert {name: (score["score"], score["weight"]) for name, score in tier.items()} == {
        "worker-1": (100, 5),
        "worker-3": (50, 5),
        "worker-4": (0, 5),
    }
    assert nodes["worker-2"] == {
        "feasible": False,
        "reason": "node(s) had label example.com/draining, which this profile avoids",
        "plugins": {},
        "total": 0,
    }
    assert nodes["worker-1"]["total"] > nodes["worker-3"]["total"] > nodes["worker-4"]["total"]
    assert (
        "note: NodeLabelPreference: label example.com/tier: gold=100 on 1 node(s), silver=50 on 1 node(s), "
        "other or none=0 on 1 node(s)"
    ) in result.stderr


def test_score_prints_the_table_with_the_plugin_and_its_note() -> None:
    result = CliRunner().invoke(cli, score(), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Pod shop/api-1 → worker-1   (profile tiered-scheduler)")
    assert "Node Label Preference ×5" in result.stdout
    assert "label example.com/tier: gold=100 on 1 node(s)" in result.stdout
