"""`operator render` refuses what the operator would not apply; `score` runs the pod's own profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli

REPO = Path(__file__).resolve().parents[3]
CR = yaml.safe_load((REPO / "deploy" / "07_secondary-scheduler-operator.cr.yaml").read_text())
CONFIGMAP = yaml.safe_load((REPO / "deploy" / "06_configmap.yaml").read_text())
CONFIGMAP["data"]["config.yaml"] = CONFIGMAP["data"]["config.yaml"].replace("${PROM_URL}", "https://p:9091")
EXAMPLES = REPO / "examples" / "score"


def render(tmp_path: Path, cr: Any = CR, configmap: Any = CONFIGMAP, *extra: str) -> tuple[int, str, str]:
    (tmp_path / "cr.yaml").write_text(yaml.safe_dump(cr))
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(configmap))
    result = CliRunner().invoke(
        cli,
        [
            "operator",
            "render",
            "--cr",
            str(tmp_path / "cr.yaml"),
            "--configmap",
            str(tmp_path / "cm.yaml"),
            *extra,
        ],
    )
    return result.exit_code, result.stdout, result.stderr


def with_(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(document))
    *parents, last = path.split(".")
    target = copy
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    return copy


def test_a_valid_pair_renders(tmp_path: Path) -> None:
    code, stdout, stderr = render(tmp_path)
    assert code == 0, stderr
    assert "kind: Deployment" in stdout


@pytest.mark.parametrize(
    ("cr", "configmap", "message"),
    [
        (
            with_(CR, "metadata.name", "other"),
            CONFIGMAP,
            "metadata.name: 'other': the operator reconciles only",
        ),
        (CR, with_(CONFIGMAP, "metadata.name", "elsewhere"), "metadata.name: this is ConfigMap 'elsewhere'"),
        (
            CR,
            with_(CONFIGMAP, "metadata.namespace", "other-ns"),
            "metadata.namespace: this ConfigMap is in namespace",
        ),
        (
            CR,
            with_(CONFIGMAP, "data", {"config.yaml": {"not": "text"}}),
            "data.config.yaml: expected a string",
        ),
        (
            with_(
                CR,
                "spec.topology",
                {"mode": "HighlyAvailable", "highlyAvailableTopology": {"maxReplicas": 2**31}},
            ),
            CONFIGMAP,
            "maxReplicas: must be <= 2147483647, got 2147483648",
        ),
        (
            with_(CR, "spec.resources", {"requests": {"cpu": 0.5}}),
            CONFIGMAP,
            "a quantity is a string or an integer",
        ),
        (with_(CR, "spec.nodeSelector", {"bad key!": "x"}), CONFIGMAP, "the label key"),
        (with_(CR, "spec.priorityClassName", "Not Valid"), CONFIGMAP, "priorityClassName"),
        (with_(CR, "metadata.generation", "abc"), CONFIGMAP, "metadata.generation: must be an integer"),
    ],
)
def test_refusals(tmp_path: Path, cr: Any, configmap: Any, message: str) -> None:
    code, stdout, stderr = render(tmp_path, cr, configmap)
    assert code == 1 and stdout == "", stderr
    assert stderr.startswith("error: ") and message in stderr, stderr


def test_an_invalid_config_is_refused_unless_allowed(tmp_path: Path) -> None:
    bad = with_(
        CONFIGMAP,
        "data",
        {"config.yaml": CONFIGMAP["data"]["config.yaml"].replace("https://p:9091", "${PROM_URL}")},
    )
    code, stdout, stderr = render(tmp_path, CR, bad)
    assert code == 1 and stdout == ""
    assert "Deployment held back: the operator would set Degraded=True (reason ConfigInvalid)" in stderr
    assert "${PROM_URL}" in stderr and "--allow-invalid" in stderr
    code, stdout, stderr = render(tmp_path, CR, bad, "--allow-invalid")
    assert code == 0 and "kind: Deployment" in stdout
    assert "warning: rendered with --allow-invalid" in stderr


def score(tmp_path: Path, pod: dict[str, Any], *extra: str) -> tuple[int, str]:
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    args = ["score", "--config", str(EXAMPLES / "config.yaml"), "--snapshot", str(EXAMPLES / "snapshot.yaml")]
    result = CliRunner().invoke(cli, [*args, "--pod", str(tmp_path / "pod.yaml"), "--output", "json", *extra])
    return result.exit_code, result.output


EXAMPLE_POD = yaml.safe_load((EXAMPLES / "pod.yaml").read_text())


def test_score_refuses_a_pod_no_profile_schedules(tmp_path: Path) -> None:
    code, output = score(tmp_path, with_(EXAMPLE_POD, "spec.schedulerName", "someone-else"))
    assert code == 1
    assert "spec.schedulerName: 'someone-else' is no profile's schedulerName" in output
    unset = json.loads(json.dumps(EXAMPLE_POD))
    del unset["spec"]["schedulerName"]
    code, output = score(tmp_path, unset)
    assert code == 1 and "'default-scheduler' (unset, so the API server sets it)" in output


def test_profile_overrides_with_a_note(tmp_path: Path) -> None:
    code, output = score(
        tmp_path,
        with_(EXAMPLE_POD, "spec.schedulerName", "someone-else"),
        "--profile",
        "load-aware-scheduler",
    )
    assert code == 0, output
    assert "the scheduler would not run profile 'load-aware-scheduler' for this pod" in output


def test_score_problems_name_their_line_even_under_dotted_keys(tmp_path: Path) -> None:
    pod = with_(EXAMPLE_POD, "metadata.labels", {"example.com/tier": "a" * 70})
    code, output = score(tmp_path, pod)
    assert code == 1
    assert f"error: {tmp_path / 'pod.yaml'}:" in output
    line = int(output.split(f"{tmp_path / 'pod.yaml'}:", 1)[1].split(":", 1)[0])
    text = (tmp_path / "pod.yaml").read_text().splitlines()
    assert "example.com/tier" in text[line - 1]
