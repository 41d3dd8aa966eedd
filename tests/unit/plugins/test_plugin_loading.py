"""A broken out-of-tree plugin is refused with what is wrong, where, and the fix; it stops only
what it would break.

Two ways in: ``--plugin module:Class`` on the command line, and entry points of installed
packages (group ``secondary_scheduler.plugins``).

- A ``--plugin`` class the user names on this command line that cannot be used stops the command.
- An installed package whose entry point cannot be used (its import fails, it names no plugin
  class, the class is incomplete or its name differs) no longer stops every command: the
  registry loads, its name resolves to a stand-in, and only a profile enabling it fails, in
  ``config validate`` and when the scheduler builds its profiles, naming the package and the fix.
  An installed plugin taking an in-tree plugin's name still stops the registry: every profile
  that enables that name would be ambiguous.
- A plugin whose constructor raises is named with its profile as kube-scheduler names it
  (``creating profile for scheduler name X: initializing plugin "Y": ...``).

The entry-point cases install a fake distribution (a ``*.dist-info`` folder) on ``sys.path``,
which is all ``importlib.metadata`` looks at, so the registry finds it as it would a
pip-installed package. Faults at run time (a plugin raising in ``score()``) and the in-memory
registry checks are ``tests/unit/framework/test_plugin_faults.py``'s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.unit.plugins.brokenplugins import NeedsItsCertificate, not_a_class

from secondary_scheduler.cli.main import cli
from secondary_scheduler.framework import Framework, Handle, ProfileSpec
from secondary_scheduler.kube.wait import poll_until
from secondary_scheduler.plugins.registry import (
    PluginLoadError,
    broken_plugins_enabled,
    in_tree_registry,
    load_registry,
    merge,
)

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.unit.plugins.brokenplugins"
BROKEN_IMPORT = "tests.unit.plugins.brokenimport"
SECSCHED = (sys.executable, "-m", "secondary_scheduler.cli")
MISSING_MODULE = "No module named 'secsched_dependency_that_is_not_installed'"
PROFILE = "secondary-scheduler"
CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {PROFILE}
"""
UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return path


def config_enabling(tmp_path: Path, plugin: str) -> Path:
    """CONFIG with ``plugin`` enabled at score."""
    path = tmp_path / "enabling.yaml"
    path.write_text(f"{CONFIG}  plugins:\n    score:\n      enabled: [{{name: {plugin}, weight: 1}}]\n")
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
    assert result.output == f"error: --plugin={path}: {message}\n"


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
    assert done.stderr == (
        f"error: --plugin={path}: plugin name 'NodeName' is taken by "
        "secondary_scheduler.plugins.nodename.node_name.NodeName: rename one of them\n"
    )


def test_a_good_plugin_flag_joins_the_registry(config: Path) -> None:
    """Naming an installed plugin again is harmless: the same class under the same name."""
    result = CliRunner().invoke(
        cli, ["config", "validate", "--plugin=secsched_example_plugins:AvoidNodeLabel", str(config)]
    )
    assert result.exit_code == 0, result.output


def test_a_plugin_refusing_its_environment_is_named_with_its_profile() -> None:
    """kube-scheduler: ``creating profile for scheduler name X: initializing plugin "Y": ...``;
    the plugin's own ValueError is its message to the user, kept as written."""
    registry = merge(in_tree_registry(), [NeedsItsCertificate], "test")
    with pytest.raises(ValueError) as caught:
        Framework(ProfileSpec(PROFILE, {"score": [("NeedsItsCertificate", 1)]}), registry, Handle())
    assert str(caught.value) == (
        f'creating profile for scheduler name {PROFILE}: initializing plugin "NeedsItsCertificate": '
        "caFile '/not-mounted/ca.crt' cannot be read: mount it, or remove caFile"
    )


# -- installed packages (entry points) --------------------------------------------------------


def install_fake_distribution(root: Path, package: str, entry_points: str) -> None:
    """What pip leaves in site-packages, reduced to what importlib.metadata reads."""
    info = root / f"{package.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[secondary_scheduler.plugins]\n{entry_points}\n")


def origin(name: str, value: str) -> str:
    return f"plugin {name!r} of package broken-plugins (entry point {value})"


MISSING_PACKAGE_ERROR = (
    f"{origin('NeedsMissingPackage', f'{BROKEN_IMPORT}:NeedsMissingPackage')}: cannot import it: "
    f"{MISSING_MODULE}; reinstall the package or uninstall it (pip uninstall broken-plugins)"
)

ENTRY_POINT_CASES = [
    (f"NeedsMissingPackage = {BROKEN_IMPORT}:NeedsMissingPackage", MISSING_PACKAGE_ERROR),
    (
        f"NotAPlugin = {BROKEN}:not_a_class",
        f"{origin('NotAPlugin', f'{BROKEN}:not_a_class')}: {not_a_class!r} is not a plugin class: "
        "subclass the extension-point bases of secondary_scheduler.pluginapi (e.g. ScorePlugin)",
    ),
    (
        f"DictArgs = {BROKEN}:DictArgs",
        f"{origin('DictArgs', f'{BROKEN}:DictArgs')}: DictArgs.args_model must be a pydantic model class "
        "(subclass pluginapi.PluginArgs), not <class 'dict'>",
    ),
    (
        f"Nameless = {BROKEN}:Nameless",
        f"{origin('Nameless', f'{BROKEN}:Nameless')}: Nameless has no name: set the class attribute `name`",
    ),
    (
        f"NoExtensionPoint = {BROKEN}:NoExtensionPoint",
        f"{origin('NoExtensionPoint', f'{BROKEN}:NoExtensionPoint')}: NoExtensionPoint implements no "
        "extension point: subclass at least one of pluginapi's *Plugin bases "
        "(FilterPlugin, ScorePlugin, ...)",
    ),
    (
        "TierScore = secsched_example_plugins:NodeLabelPreference",
        f"{origin('TierScore', 'secsched_example_plugins:NodeLabelPreference')}: the entry point is named "
        "'TierScore' but the class says 'NodeLabelPreference': make them the same",
    ),
]


@pytest.mark.parametrize(
    ("entry_point", "message"), ENTRY_POINT_CASES, ids=[case[0].split(" ")[0] for case in ENTRY_POINT_CASES]
)
def test_a_broken_installed_plugin_fails_only_the_profiles_enabling_it(
    entry_point: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry loads; the entry point's name is a stand-in whose fault, named with the
    package, is reported where a profile enables it: by config validate and when built."""
    install_fake_distribution(tmp_path, "broken-plugins", entry_point)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = load_registry()
    name = entry_point.split(" = ")[0]
    enabled = [(PROFILE, "NodeResourcesFit"), (PROFILE, name)]
    assert broken_plugins_enabled(registry, enabled) == [f"profile {PROFILE!r} enables {message}"]
    with pytest.raises(ValueError) as caught:
        Framework(ProfileSpec(PROFILE, {"score": [(name, 1)]}), registry, Handle())
    assert str(caught.value) == (
        f'creating profile for scheduler name {PROFILE}: initializing plugin "{name}": '
        f"PluginLoadError: {message}"
    )


def test_an_installed_plugin_taking_an_in_tree_name_stops_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a stand-in: the default profile enables NodeName, which would then be ambiguous."""
    install_fake_distribution(tmp_path, "broken-plugins", f"NodeName = {BROKEN}:NodeNameImpostor")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginLoadError) as caught:
        load_registry()
    assert str(caught.value) == (
        f"{origin('NodeName', f'{BROKEN}:NodeNameImpostor')}: plugin name 'NodeName' is taken by "
        "secondary_scheduler.plugins.nodename.node_name.NodeName: rename one of them"
    )


def test_config_validate_refuses_only_a_profile_enabling_a_broken_installed_plugin(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_distribution(
        tmp_path / "site", "broken-plugins", f"NeedsMissingPackage = {BROKEN_IMPORT}:NeedsMissingPackage"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    fine = CliRunner().invoke(cli, ["config", "validate", str(config)])
    assert fine.exit_code == 0, fine.output
    enabling = config_enabling(tmp_path, "NeedsMissingPackage")
    refused = CliRunner().invoke(cli, ["config", "validate", str(enabling)])
    assert refused.exit_code == 1
    assert refused.output == f"error: {enabling}: profile {PROFILE!r} enables {MISSING_PACKAGE_ERROR}\n"


@pytest.fixture
def broken_package_env(tmp_path: Path) -> dict[str, str]:
    """A process environment in which the package broken-plugins is installed, and a kubeconfig
    whose server refuses connections (building the profiles needs no API server)."""
    install_fake_distribution(
        tmp_path / "site", "broken-plugins", f"NeedsMissingPackage = {BROKEN_IMPORT}:NeedsMissingPackage"
    )
    (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
    return {
        **os.environ,
        "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}",
        "KUBECONFIG": str(tmp_path / "kubeconfig"),
    }


SCHEDULER_FLAGS = ("--secure-port=0", "--leader-elect=false")


async def test_the_scheduler_starts_when_no_profile_enables_a_broken_installed_plugin(
    tmp_path: Path, config: Path, broken_package_env: dict[str, str]
) -> None:
    """The real process builds its profiles and starts; SIGTERM then stops it cleanly."""
    log = tmp_path / "scheduler.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*SECSCHED, "scheduler", f"--config={config}", *SCHEDULER_FLAGS],
            cwd=REPO,
            env=broken_package_env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        started = f"starting scheduler for profiles [{PROFILE}]"

        async def read() -> str:
            return log.read_text()

        await poll_until(
            read,
            lambda text: started in text or process.poll() is not None,
            lambda text: f"the scheduler never logged {started!r}; its log:\n{text}",
        )
        assert process.poll() is None, log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert process.returncode == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_the_scheduler_stops_when_a_profile_enables_a_broken_installed_plugin(
    tmp_path: Path, broken_package_env: dict[str, str]
) -> None:
    """As a process: one line naming the profile, the plugin, the package and the fix; exit 1."""
    enabling = config_enabling(tmp_path, "NeedsMissingPackage")
    done = subprocess.run(
        [*SECSCHED, "scheduler", f"--config={enabling}", *SCHEDULER_FLAGS],
        cwd=REPO,
        env=broken_package_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"error: {enabling}: initializing profiles: creating profile for scheduler name {PROFILE}: "
        f'initializing plugin "NeedsMissingPackage": PluginLoadError: {MISSING_PACKAGE_ERROR}\n'
    )
