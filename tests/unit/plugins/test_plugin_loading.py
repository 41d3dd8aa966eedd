"""A broken out-of-tree plugin stops the process at startup with what is wrong, where, and the fix.

Two ways in: ``--plugin module:Class`` on the command line, and entry points of installed
packages (group ``secondary_scheduler.plugins``). The entry-point cases install a fake
distribution (a ``*.dist-info`` folder) on ``sys.path``, which is all ``importlib.metadata``
looks at, so the registry finds it as it would a pip-installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli
from secondary_scheduler.plugins.registry import PluginLoadError, load_registry

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.unit.plugins.brokenplugins"
BROKEN_IMPORT = "tests.unit.plugins.brokenimport"
SECSCHED = (sys.executable, "-m", "secondary_scheduler.cli")
MISSING_MODULE = "No module named 'secsched_dependency_that_is_not_installed'"
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: secondary-scheduler
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return path


FLAG_CASES = [
    (
        f"{BROKEN}:NotAPlugin",
        f"<class '{BROKEN}.NotAPlugin'> is not a plugin class: subclass the extension-point bases "
        "of secondary_scheduler.pluginapi (e.g. ScorePlugin)",
    ),
    (
        f"{BROKEN}:NodeNameImpostor",
        "plugin name 'NodeName' is taken by secondary_scheduler.plugins.nodename.node_name.NodeName: "
        "rename one of them",
    ),
    (
        f"{BROKEN}:DictArgs",
        "DictArgs.args_model must be a pydantic model class (subclass pluginapi.PluginArgs), "
        "not <class 'dict'>",
    ),
    (f"{BROKEN}:Nameless", "Nameless has no name: set the class attribute `name`"),
    (
        f"{BROKEN}:NoExtensionPoint",
        "NoExtensionPoint implements no extension point: subclass at least one of pluginapi's *Plugin "
        "bases (FilterPlugin, ScorePlugin, ...)",
    ),
    (
        f"{BROKEN_IMPORT}:NeedsMissingPackage",
        f"cannot import {BROKEN_IMPORT}: {MISSING_MODULE}: install the package that provides it, "
        "or put its directory on PYTHONPATH",
    ),
    (f"{BROKEN}:Missing", f"module {BROKEN} has no Missing: check the class name"),
    (BROKEN, "expected module:Class, e.g. mycompany.plugins:GpuScore"),
]


@pytest.mark.parametrize(("path", "message"), FLAG_CASES, ids=[p.rsplit(".")[-1] for p, _ in FLAG_CASES])
def test_a_broken_plugin_flag_stops_config_validate(path: str, message: str, config: Path) -> None:
    result = CliRunner().invoke(cli, ["config", "validate", f"--plugin={path}", str(config)])
    assert result.exit_code == 1, result.output
    assert f"--plugin={path}: {message}" in result.output
    assert "Traceback" not in result.output


def test_a_broken_plugin_flag_stops_the_scheduler_process(config: Path) -> None:
    """The real process: exit code 1, one line saying what to fix, no traceback."""
    path = f"{BROKEN}:NodeNameImpostor"
    done = subprocess.run(
        [*SECSCHED, "scheduler", f"--config={config}", f"--plugin={path}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert f"--plugin={path}: plugin name 'NodeName' is taken by" in done.stderr
    assert "rename one of them" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_good_plugin_flag_joins_the_registry(config: Path) -> None:
    """Naming an installed plugin again is harmless: the same class under the same name."""
    result = CliRunner().invoke(
        cli, ["config", "validate", "--plugin=secsched_example_plugins:AvoidNodeLabel", str(config)]
    )
    assert result.exit_code == 0, result.output


# -- installed packages (entry points) --------------------------------------------------------


def install_fake_distribution(root: Path, package: str, entry_points: str) -> None:
    """What pip leaves in site-packages, reduced to what importlib.metadata reads."""
    info = root / f"{package.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[secondary_scheduler.plugins]\n{entry_points}\n")


ENTRY_POINT_CASES = [
    (
        f"NodeName = {BROKEN}:NodeNameImpostor",
        f"plugin 'NodeName' of package broken-plugins (entry point {BROKEN}:NodeNameImpostor): "
        "plugin name 'NodeName' is taken by secondary_scheduler.plugins.nodename.node_name.NodeName: "
        "rename one of them",
    ),
    (
        f"NeedsMissingPackage = {BROKEN_IMPORT}:NeedsMissingPackage",
        f"plugin 'NeedsMissingPackage' of package broken-plugins (entry point {BROKEN_IMPORT}:"
        f"NeedsMissingPackage): cannot import it: {MISSING_MODULE}; reinstall the package or uninstall "
        "it (pip uninstall broken-plugins)",
    ),
    (
        f"NotAPlugin = {BROKEN}:not_a_class",
        f"plugin 'NotAPlugin' of package broken-plugins (entry point {BROKEN}:not_a_class): <function "
        "not_a_class",
    ),
    (
        f"DictArgs = {BROKEN}:DictArgs",
        f"plugin 'DictArgs' of package broken-plugins (entry point {BROKEN}:DictArgs): DictArgs.args_model "
        "must be a pydantic model class (subclass pluginapi.PluginArgs), not <class 'dict'>",
    ),
    (
        "TierScore = secsched_example_plugins:NodeLabelPreference",
        "plugin 'TierScore' of package broken-plugins (entry point secsched_example_plugins:"
        "NodeLabelPreference): the entry point is named 'TierScore' but the class says "
        "'NodeLabelPreference': make them the same",
    ),
]


@pytest.mark.parametrize(
    ("entry_point", "message"), ENTRY_POINT_CASES, ids=[case[0].split(" ")[0] for case in ENTRY_POINT_CASES]
)
def test_a_broken_installed_plugin_stops_the_registry(
    entry_point: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_distribution(tmp_path, "broken-plugins", entry_point)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginLoadError) as caught:
        load_registry()
    assert str(caught.value).startswith(message)


def test_a_broken_installed_plugin_stops_config_validate(tmp_path: Path, config: Path) -> None:
    """As a process: the package is named, with the command that removes it; exit 1, no traceback."""
    install_fake_distribution(tmp_path / "site", "broken-plugins", f"NeedsMissingPackage = {BROKEN_IMPORT}:X")
    done = subprocess.run(
        [*SECSCHED, "config", "validate", str(config)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "plugin 'NeedsMissingPackage' of package broken-plugins" in done.stderr
    assert "(pip uninstall broken-plugins)" in done.stderr
    assert "Traceback" not in done.stderr
