"""One error contract: `error: FILE[:LINE]: FIELD: problem: fix`, exit 1; usage errors exit 2;
no traceback unless asked for."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from secondary_scheduler.cli import errors
from secondary_scheduler.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "score"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "args",
    [
        ["config", "validate", "/nonexistent/c.yaml"],
        ["score", "--config", "/nonexistent/c.yaml", "--snapshot", "s", "--pod", "p"],
        ["operator", "render", "--cr", "/nonexistent/c.yaml"],
        ["scheduler", "--config", "/nonexistent/c.yaml"],
        ["snapshot", "--config", "/nonexistent/c.yaml"],
        ["snapshot", "--kubeconfig", "/nonexistent/c.yaml"],
        ["operator", "run", "--kubeconfig", "/nonexistent/c.yaml"],
    ],
)
def test_a_missing_file_is_bad_input_everywhere(args: list[str]) -> None:
    code, output = run(*args)
    assert code == 1, output
    assert output.startswith("error: /nonexistent/c.yaml: ") and "not found" in output
    assert "Traceback" not in output


def test_usage_errors_exit_2_as_clicks() -> None:
    code, output = run("config", "validate", "--bogus")
    assert code == 2 and "No such option" in output


def test_a_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "cr.bin"
    path.write_bytes(b"\x9c\xff\x00binary")
    code, output = run("operator", "render", "--cr", str(path))
    assert code == 1
    assert output.startswith(f"error: {path}: is not UTF-8 text (byte 0 is 0x9c): ")


def _boom() -> None:
    raise RuntimeError("kaboom")


@pytest.fixture
def buggy_command() -> click.Command:
    command = click.Command("buggy", callback=_boom)
    cli.add_command(command)
    yield command
    cli.commands.pop("buggy")


def test_a_bug_is_one_line_without_traceback(
    buggy_command: click.Command, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    code, output = run("buggy")
    assert code == 1
    assert output.startswith("error: internal error (a bug in secsched")
    assert "RuntimeError: kaboom" in output and "SECSCHED_DEBUG=1" in output
    assert "Traceback" not in output


def test_debug_shows_the_traceback(buggy_command: click.Command, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(errors.DEBUG_ENV, "1")
    result = CliRunner().invoke(cli, ["buggy"])
    assert isinstance(result.exception, RuntimeError)


@pytest.mark.parametrize(
    ("args", "debug"),
    [(["--v=5"], True), (["-v=6"], True), (["--v", "7"], True), (["--v=4"], False), (["-v", "2"], False)],
)
def test_verbosity_5_asks_for_tracebacks(
    args: list[str], debug: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    assert errors.debug_requested(["scheduler", *args]) is debug


def test_input_error_format() -> None:
    error = errors.InputError("f.yaml", "is wrong", line=3, field="spec.x", fix="fix it", more=["g: also"])
    assert error.format_message() == "f.yaml:3: spec.x: is wrong: fix it\nerror: g: also"
