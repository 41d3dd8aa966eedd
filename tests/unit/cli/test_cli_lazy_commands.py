"""The CLI root: its help lists every command without importing one, and a command whose
optional dependency is not installed says which extra to install instead of failing."""

from __future__ import annotations

import importlib
import sys

import pytest
from click.testing import CliRunner

from secondary_scheduler.cli import main
from secondary_scheduler.cli.main import COMMANDS, cli


def test_help_lists_every_command_with_its_summary_without_importing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for spec in COMMANDS.values():
        monkeypatch.delitem(sys.modules, spec.target.partition(":")[0], raising=False)
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name, spec in COMMANDS.items():
        assert f"{name}" in result.output and spec.summary in result.output
    assert not any(spec.target.partition(":")[0] in sys.modules for spec in COMMANDS.values())


def test_a_command_whose_extra_is_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def without_rich(name: str, package: str | None = None) -> object:
        if name == COMMANDS["score"].target.partition(":")[0]:
            raise ModuleNotFoundError("No module named 'rich'", name="rich")
        return real_import(name, package)

    monkeypatch.setattr(main.importlib, "import_module", without_rich)
    result = CliRunner().invoke(cli, ["score", "--help"])
    assert result.exit_code == 1
    assert "`secsched score` needs rich" in result.output
    assert "(the [cli] extra): pip install -e '" in result.output  # from this clone: on no index


def test_an_unknown_missing_module_is_not_disguised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module of this package that is missing is a bug, reported as such (not as an extra)."""
    missing = "secondary_scheduler.gone"

    def broken(name: str, package: str | None = None) -> object:
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)

    monkeypatch.setattr(main.importlib, "import_module", broken)
    result = CliRunner().invoke(cli, ["score", "--help"])
    assert result.exit_code != 0
    assert "pip install" not in result.output
