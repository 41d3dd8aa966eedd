"""`secsched config validate`: effective YAML and warnings, or every error; exit 0 or 1."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli
from secondary_scheduler.config import load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

FIXTURES = Path(__file__).parent / "fixtures"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_a_valid_file_prints_the_effective_configuration(tmp_path: Path) -> None:
    seed = (FIXTURES / "seed000_v1beta3.yaml").read_text()
    path = write(
        tmp_path, seed.replace("${PROM_URL}", "https://prometheus").replace("${PROM_TOKEN}", "t0ken")
    )
    result = CliRunner().invoke(cli, ["config", "validate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"# Effective configuration of {path}, defaults filled in\n")
    document = yaml.safe_load(result.stdout)
    assert document["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert {"name": "TargetLoadPacking", "weight": 1} in document["profiles"][0]["plugins"]["score"][
        "enabled"
    ]
    assert (
        load_config(result.stdout, catalog=IN_TREE_CATALOG).config
        == load_config(path.read_text(), catalog=IN_TREE_CATALOG).config
    )
    warnings = result.stderr.splitlines()
    assert len(warnings) == 4
    assert warnings[1] == (
        f"warning: {path}:11: profiles[0].plugins.score.disabled[1].name: NodeResourcesLeastAllocated has no "
        "effect here: v1beta2 merged it into NodeResourcesFit, which keeps scoring with its scoringStrategy "
        "(LeastAllocated unless configured). To change the strategy set NodeResourcesFit's "
        "args.scoringStrategy.type; to stop resource scoring disable NodeResourcesFit under score"
    )


def test_an_invalid_file_prints_every_error_and_exits_1(tmp_path: Path) -> None:
    path = write(tmp_path, (FIXTURES / "seed001_v1beta1_token_misindented.yaml").read_text())
    result = CliRunner().invoke(cli, ["config", "validate", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors[0] == (
        f"error: {path}:4: leaderElect: unknown field `leaderElect`: "
        "did you mean leaderElection.leaderElect? indent it under leaderElection"
    )
    assert len(errors) == 5  # leaderElect, indentation, ${PROM_URL}, ${PROM_TOKEN}, Token
    assert any("Token: unknown field `Token`: did you mean `token`?" in line for line in errors)
    assert result.stderr.splitlines()[-1] == f"{path}: 5 errors"
    assert result.stderr.startswith("warning: ")  # the deprecated apiVersion


def test_standard_input(tmp_path: Path) -> None:
    text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: x\n"
    result = CliRunner().invoke(cli, ["config", "validate", "-"], input=text)
    assert result.exit_code == 1
    assert 'error: <stdin>:3: parallelism: expected an integer, got the string "x"' in result.stderr


def test_a_missing_file_is_bad_input(tmp_path: Path) -> None:
    """Exit 1, as for any input the command cannot use (and as kube-scheduler exits on a missing --config)."""
    result = CliRunner().invoke(cli, ["config", "validate", str(tmp_path / "absent.yaml")])
    assert result.exit_code == 1
    assert f"error: {tmp_path / 'absent.yaml'}: configuration not found: check the path" in result.stderr


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("kind: KubeSchedulerConfiguration # caf\xe9\n".encode("latin-1"))
    result = CliRunner().invoke(cli, ["config", "validate", str(path)])
    assert result.exit_code == 1
    assert "not UTF-8 text" in result.stderr


def test_help_explains_the_command() -> None:
    result = CliRunner().invoke(cli, ["config", "validate", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for fragment in (
        "kubescheduler.config.k8s.io/v1, v1beta3, v1beta2 and v1beta1",
        "effective configuration on stdout as v1 YAML",
        "exits 0",
        "FILE:LINE: PATH: MESSAGE",
        "exits 1",
        "${VARIABLE}",
    ):
        assert fragment in text
    assert "config" in CliRunner().invoke(cli, ["--help"]).stdout
