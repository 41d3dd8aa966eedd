"""What a newcomer meets first (issue 42, item 4): each message names their input or the extra to
install, never "internal error"; help reads without extras; the score table fits 80 columns."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import secondary_scheduler
from secondary_scheduler.cli.errors import DEVTOOLS, install_hint
from secondary_scheduler.cli.main import COMMANDS, cli

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "score"
CR = REPO / "deploy" / "07_secondary-scheduler-operator.cr.yaml"
CONFIGMAP = yaml.safe_load((REPO / "deploy" / "06_configmap.yaml").read_text())
CONFIGMAP["data"]["config.yaml"] = CONFIGMAP["data"]["config.yaml"].replace("${PROM_URL}", "https://p:9091")


def secsched_without(packages: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`secsched ARGS` in a fresh interpreter where `packages` cannot be imported, as in an
    installation without their extra (a None in sys.modules makes `import` fail as if absent)."""
    program = (
        "import sys\n"
        f"for name in {packages!r}:\n"
        "    sys.modules[name] = None\n"
        "from secondary_scheduler.cli.main import cli\n"
        f"cli(args={list(args)!r})\n"
    )
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )


def test_help_lists_what_a_user_runs_first_and_the_dev_tooling_last() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == list(COMMANDS)
    assert listed[:3] == ["scheduler", "operator", "config"]
    assert listed[-2:] == ["cluster", "demo"]
    assert "cluster up" not in result.output  # which a CLI-only install cannot run


def test_operator_run_without_kopf_names_the_operator_extra() -> None:
    result = secsched_without(["kopf"], "operator", "run")
    assert result.returncode == 1
    assert "internal error" not in result.stderr
    assert result.stderr.startswith("error: `secsched operator run` needs kopf")
    assert "(the [operator] extra): pip install -e '" in result.stderr
    assert "[operator]'" in result.stderr


def test_cluster_up_help_reads_without_its_extra_and_running_it_names_the_extra() -> None:
    helped = secsched_without(["httpx", "rich"], "cluster", "up", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--nodes" in helped.stdout and "Start a local cluster" in helped.stdout
    ran = secsched_without(["httpx", "rich"], "cluster", "up")
    assert ran.returncode == 1
    assert "internal error" not in ran.stderr
    assert "`secsched cluster up` needs" in ran.stderr
    assert "(the [cluster] extra of secondary-scheduler-devtools): pip install -e '" in ran.stderr
    assert f"{REPO}/devtools[cluster]'" in ran.stderr


@pytest.mark.parametrize(("command", "extra"), [("cluster", "cluster"), ("demo", "demo")])
def test_the_dev_tooling_without_its_package_names_the_package(command: str, extra: str) -> None:
    """The images hold only the runtime package: `cluster` and `demo` there (or in any install
    without devtools/) say which package to install, and `--help` still lists them."""
    ran = secsched_without(["secsched_devtools"], command, "--help")
    assert ran.returncode == 1
    assert ran.stderr == (
        f"error: `secsched {command}` is dev tooling, in the secondary-scheduler-devtools package, which "
        f"this installation lacks (the images never hold it): pip install -e '{REPO}/devtools[{extra}]'\n"
    )
    helped = secsched_without(["secsched_devtools"], "--help")
    assert helped.returncode == 0 and f"{command} " in helped.stdout


def test_the_install_hint_is_the_clone_pip_installs_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The packages are on no index: the hint is this clone's path (editable install) or, from a
    wheel, how to install from a clone; never `pip install 'secondary-scheduler[...]'`."""
    assert install_hint("operator") == f"pip install -e '{REPO}[operator]'"
    assert install_hint("cluster", DEVTOOLS) == f"pip install -e '{REPO}/devtools[cluster]'"
    wheel = "/opt/venv/lib/python3.11/site-packages/secondary_scheduler/__init__.py"
    monkeypatch.setattr(secondary_scheduler, "__file__", wheel)
    hint = install_hint("operator")
    assert "in a clone of the repository, pip install '.[operator]'" in hint
    assert "secondary-scheduler[" not in hint
    assert "pip install './devtools[cluster]'" in install_hint("cluster", DEVTOOLS)


def test_a_plugin_refusing_its_environment_at_start_is_the_users_error(tmp_path: Path) -> None:
    """examples/score/config.yaml outside a pod: its in-cluster caFile is missing. That is a
    StartupError naming the file, the profile, the plugin and the field, as kube-scheduler names
    them ("initializing profiles: creating profile for scheduler name X: initializing plugin "Y": …")."""
    config = yaml.safe_load((EXAMPLES / "config.yaml").read_text())
    missing = tmp_path / "not-mounted" / "service-ca.crt"
    for entry in config["profiles"][0]["pluginConfig"]:
        entry["args"]["metricProvider"]["caFile"] = str(missing)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "kubeconfig").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    result = CliRunner().invoke(
        cli,
        [
            "scheduler",
            f"--config={tmp_path / 'config.yaml'}",
            f"--kubeconfig={tmp_path / 'kubeconfig'}",
            "--secure-port=0",
            "--leader-elect=false",
        ],
    )
    assert result.exit_code == 1
    assert "internal error" not in result.output
    assert (
        f"error: {tmp_path / 'config.yaml'}: initializing profiles: creating profile for scheduler name "
        'load-aware-scheduler: initializing plugin "TargetLoadPacking": metricProvider.caFile'
    ) in result.output
    assert "remove caFile to trust the system CAs" in result.output


def _config_with_scheduler_name(tmp_path: Path, name: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"profiles:\n- schedulerName: {name}\n"
    )
    return str(path)


def test_a_scheduler_name_no_event_can_carry_is_refused(tmp_path: Path) -> None:
    """“secondary” (typographic quotes pasted from a web page): the API server refuses every Event
    whose reportingController it is, and kube-scheduler reports a profile's Events under it."""
    result = CliRunner().invoke(
        cli, ["config", "validate", _config_with_scheduler_name(tmp_path, "“secondary”")]
    )
    assert result.exit_code == 1
    assert "profiles[0].schedulerName: '“secondary”' is not a valid name" in result.output
    assert "refuses every Event" in result.output
    assert "did you mean 'secondary'?" in result.output


def test_a_scheduler_name_the_api_server_takes_still_loads(tmp_path: Path) -> None:
    """Upper case is no DNS subdomain, but pods and Events take it (kube-scheduler runs it)."""
    result = CliRunner().invoke(
        cli, ["config", "validate", _config_with_scheduler_name(tmp_path, "Secondary")]
    )
    assert result.exit_code == 0, result.output


def _render(tmp_path: Path, cr: Path | dict, configmap: object, *extra: str) -> tuple[int, str, str]:
    if isinstance(cr, dict):
        (tmp_path / "cr.yaml").write_text(yaml.safe_dump(cr))
        cr = tmp_path / "cr.yaml"
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(configmap))
    result = CliRunner().invoke(
        cli, ["operator", "render", "--cr", str(cr), "--configmap", str(tmp_path / "cm.yaml"), *extra]
    )
    return result.exit_code, result.stdout, result.stderr


def test_render_refuses_a_cr_namespace_the_api_server_would(tmp_path: Path) -> None:
    cr = yaml.safe_load(CR.read_text())
    cr["metadata"]["namespace"] = "Secondary_Scheduler"
    configmap = {**CONFIGMAP, "metadata": {**CONFIGMAP["metadata"], "namespace": "Secondary_Scheduler"}}
    code, stdout, stderr = _render(tmp_path, cr, configmap)
    assert (code, stdout) == (1, "")
    assert "metadata.namespace: 'Secondary_Scheduler' is not a valid name" in stderr
    assert "put it in" not in stderr  # no advice to move the ConfigMap into it


def test_render_refuses_an_invalid_namespace_flag(tmp_path: Path) -> None:
    cr = yaml.safe_load(CR.read_text())
    del cr["metadata"]["namespace"]
    code, _, stderr = _render(tmp_path, cr, CONFIGMAP, "--namespace", "Bad_NS")
    assert code == 2
    assert "Invalid value for '--namespace': 'Bad_NS' is not a valid name" in stderr


def test_render_refuses_a_secret_given_as_the_configmap(tmp_path: Path) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": dict(CONFIGMAP["metadata"]),
        "stringData": dict(CONFIGMAP["data"]),
    }
    code, stdout, stderr = _render(tmp_path, CR, secret)
    assert (code, stdout) == (1, "")
    assert "kind: this is a Secret, not a ConfigMap or a KubeSchedulerConfiguration" in stderr
    assert "never from a Secret: kubectl create configmap secondary-scheduler-config" in stderr
    assert "Deployment held back" not in stderr  # not read as a broken KubeSchedulerConfiguration


def test_render_refuses_the_cr_given_as_the_configmap(tmp_path: Path) -> None:
    code, _, stderr = _render(tmp_path, CR, yaml.safe_load(CR.read_text()))
    assert code == 1
    assert "kind: this is a SecondaryScheduler, not a ConfigMap" in stderr


@pytest.mark.parametrize("width", [80, 100])
def test_the_score_table_wraps_reasons_at_a_narrow_terminal(width: int) -> None:
    """At 80 columns the reasons go under the table, whole (no `Insuffic…`); so do the headers."""
    result = CliRunner().invoke(
        cli,
        [
            "score",
            f"--config={EXAMPLES / 'config.yaml'}",
            f"--snapshot={EXAMPLES / 'snapshot.yaml'}",
            f"--pod={EXAMPLES / 'pod.yaml'}",
        ],
        env={"COLUMNS": str(width)},
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert all(len(line) <= width for line in result.stdout.splitlines())
    assert "Not feasible because:\n  ✗ worker-4: Insufficient memory" in result.stdout
    assert "Allocation" in result.stdout


def test_the_score_table_keeps_reasons_in_a_column_when_they_fit() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "score",
            f"--config={EXAMPLES / 'config.yaml'}",
            f"--snapshot={EXAMPLES / 'snapshot.yaml'}",
            f"--pod={EXAMPLES / 'pod.yaml'}",
        ],
        env={"COLUMNS": "220"},
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "worker-4" in line)
    assert row.rstrip().endswith("Insufficient memory")
    assert "Not feasible because:" not in result.stdout
