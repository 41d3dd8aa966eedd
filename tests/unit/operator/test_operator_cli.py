"""`secsched operator render`: the plan as YAML, exit status saying whether it would roll out."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner
from tests.unit.operator.opbuilders import DEPLOY, SEED_CONFIG, VALID_CONFIG

from secondary_scheduler.cli.main import cli
from secondary_scheduler.operator import names

CR = str(DEPLOY / "07_secondary-scheduler-operator.cr.yaml")


def run(*args: str) -> tuple[int, list[dict[str, object]], str]:
    result = CliRunner().invoke(cli, ["operator", "render", *args])
    return result.exit_code, [d for d in yaml.safe_load_all(result.stdout) if d], result.stderr


def test_render_prints_the_plan(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(VALID_CONFIG)
    code, objects, stderr = run("--cr", CR, "--configmap", str(config))
    assert code == 0, stderr
    assert [o["kind"] for o in objects][-1] == "Deployment"
    assert "no metadata.uid" in stderr


def test_render_ha_takes_node_count_from_a_flag(tmp_path: Path) -> None:
    cr = yaml.safe_load(Path(CR).read_text())
    cr["spec"]["topology"] = {"mode": "HighlyAvailable", "highlyAvailableTopology": {"maxReplicas": 4}}
    cr_file = tmp_path / "cr.yaml"
    cr_file.write_text(yaml.safe_dump(cr))
    config = tmp_path / "config.yaml"
    config.write_text(VALID_CONFIG)
    code, objects, _ = run("--cr", str(cr_file), "--configmap", str(config), "--nodes", "5")
    assert code == 0
    assert objects[-1]["spec"]["replicas"] == 4  # type: ignore[index]


def test_render_without_service_ca_adds_the_secret(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(VALID_CONFIG)
    _, objects, _ = run("--cr", CR, "--configmap", str(config), "--no-service-ca", "--service-monitor")
    kinds = [o["kind"] for o in objects]
    assert "Secret" in kinds and "ServiceMonitor" in kinds


def test_render_bad_config_exits_1_without_a_deployment() -> None:
    code, objects, stderr = run("--cr", CR, "--configmap", str(DEPLOY / "06_configmap.yaml"))
    assert code == 1
    assert "Deployment" not in [o["kind"] for o in objects]
    assert "Deployment held back" in stderr and "${PROM_URL}" in stderr


def test_render_missing_configmap_exits_1() -> None:
    code, _, stderr = run("--cr", CR)
    assert (
        code == 1
        and f"ConfigMap {'secondary-scheduler-config'} (spec.schedulerConfig) does not exist" in stderr
    )


def test_render_invalid_cr_exits_1(tmp_path: Path) -> None:
    cr_file = tmp_path / "cr.yaml"
    cr_file.write_text(
        yaml.safe_dump({"apiVersion": names.API_VERSION, "kind": names.KIND, "spec": {"logLevel": "Loud"}})
    )
    code, objects, stderr = run("--cr", str(cr_file))
    assert code == 1 and objects == []
    assert f"error: {cr_file}: spec.logLevel: expected '', 'Normal'" in stderr


def test_render_seed_config_warnings_go_to_stderr(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        SEED_CONFIG.read_text().replace("${PROM_URL}", "https://p").replace("${PROM_TOKEN}", "x")
    )
    code, _, stderr = run("--cr", CR, "--configmap", str(config))
    assert code == 0
    assert (
        "note: configmap/secondary-scheduler-config:config.yaml:1: apiVersion: v1beta3 is deprecated"
        in stderr
    )
