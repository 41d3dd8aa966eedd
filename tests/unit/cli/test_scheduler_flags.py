"""kube-scheduler 1.34's flags: each works as upstream's or is refused by name."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import uvloop
import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli
from secondary_scheduler.config import load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import Registry
from secondary_scheduler.scheduler import app
from secondary_scheduler.scheduler.options import UNSUPPORTED_FLAGS, LeaderElectionFlags, SchedulerFlags

# Every flag `kube-scheduler --help` lists in 1.34 (scheduler-plugins' build adds nothing).
KUBE_SCHEDULER_FLAGS = (
    "--config",
    "--master",
    "--write-config-to",
    "--bind-address",
    "--cert-dir",
    "--disable-http2-serving",
    "--http2-max-streams-per-connection",
    "--permit-address-sharing",
    "--permit-port-sharing",
    "--secure-port",
    "--tls-cert-file",
    "--tls-cipher-suites",
    "--tls-min-version",
    "--tls-private-key-file",
    "--tls-sni-cert-key",
    "--authentication-kubeconfig",
    "--authentication-skip-lookup",
    "--authentication-token-webhook-cache-ttl",
    "--authentication-tolerate-lookup-failure",
    "--client-ca-file",
    "--requestheader-allowed-names",
    "--requestheader-client-ca-file",
    "--requestheader-extra-headers-prefix",
    "--requestheader-group-headers",
    "--requestheader-uid-headers",
    "--requestheader-username-headers",
    "--authorization-always-allow-paths",
    "--authorization-kubeconfig",
    "--authorization-webhook-cache-authorized-ttl",
    "--authorization-webhook-cache-unauthorized-ttl",
    "--contention-profiling",
    "--kube-api-burst",
    "--kube-api-content-type",
    "--kube-api-qps",
    "--kubeconfig",
    "--pod-max-in-unschedulable-pods-duration",
    "--profiling",
    "--leader-elect",
    "--leader-elect-lease-duration",
    "--leader-elect-renew-deadline",
    "--leader-elect-resource-lock",
    "--leader-elect-resource-name",
    "--leader-elect-resource-namespace",
    "--leader-elect-retry-period",
    "--emulated-version",
    "--feature-gates",
    "--allow-metric-labels",
    "--allow-metric-labels-manifest",
    "--disabled-metrics",
    "--show-hidden-metrics-for-version",
    "--log-flush-frequency",
    "--log-text-info-buffer-size",
    "--log-text-split-stream",
    "--logging-format",
    "--v",
    "--vmodule",
    "--help",
    "--version",
    "--log-json-info-buffer-size",
    "--log-json-split-stream",
)


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["scheduler", *args])
    return result.exit_code, result.output


def test_every_kube_scheduler_flag_is_known() -> None:
    from secondary_scheduler.cli.scheduler_cmd import scheduler

    ours = {opt for param in scheduler.params for opt in getattr(param, "opts", [])} | {"--help"}
    missing = [flag for flag in KUBE_SCHEDULER_FLAGS if flag not in ours and flag not in UNSUPPORTED_FLAGS]
    assert missing == [], "neither supported nor refused: " + ", ".join(missing)


@pytest.mark.parametrize("flag", sorted(UNSUPPORTED_FLAGS))
def test_unsupported_flags_are_refused_by_name(flag: str) -> None:
    code, output = run(f"{flag}=x")
    assert code == 2
    assert f"{flag} is a kube-scheduler flag this scheduler does not support" in output


def test_version() -> None:
    assert run("--version") == (0, "secsched 0.1.0 (kube-scheduler v1.34.0 compatible)\n")
    code, output = run("--version=raw")
    assert code == 0 and json.loads(output)["minor"] == "34"


def test_the_scheduler_runs_on_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command hands its flags and its plugin registry to ``app.run`` inside uvloop's loop
    and exits with its code."""
    seen: list[object] = []

    async def fake_run(flags: SchedulerFlags, registry: Registry) -> int:
        seen.append(type(asyncio.get_running_loop()))
        seen.append(registry["NodeResourcesFit"].__name__)
        return 3

    monkeypatch.setattr(app, "run", fake_run)
    assert run("--leader-elect=false")[0] == 3
    assert seen == [uvloop.Loop, "Fit"]


def test_write_config_to_applies_the_flags(tmp_path: Path) -> None:
    out = tmp_path / "effective.yaml"
    code, output = run(
        f"--write-config-to={out}", "--profiling=false", "--leader-elect=false", "--kube-api-qps=20"
    )
    assert code == 0, output
    written = yaml.safe_load(out.read_text())
    assert written["enableProfiling"] is False
    assert written["leaderElection"]["leaderElect"] is False
    assert written["clientConnection"]["qps"] == 20
    load_config(out.read_text(), str(out), catalog=IN_TREE_CATALOG)  # and it loads back


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bind-address=foo"], "'foo' is not an IP address"),
        (["--tls-min-version=VersionTLS9"], "is not one of"),
        (["--tls-cipher-suites=NOPE"], "unknown cipher suite 'NOPE'"),
        (["--kube-api-qps=-1"], "must be a number from 0"),
        (["--kube-api-burst=-1"], "must be from 0"),
        (["--secure-port=70000"], "70000"),
        (["--leader-elect=maybe"], "is not a boolean"),
        (["--leader-elect-lease-duration=soon"], "is not a duration"),
        (["--logging-format=xml"], "is not one of"),
        (["--version=v9.9.9"], "cannot report another version"),
    ],
)
def test_bad_flag_values_are_usage_errors(args: list[str], message: str) -> None:
    code, output = run(*args)
    assert code == 2 and message in output, output


def test_leader_election_flags_are_validated_after_merging(tmp_path: Path) -> None:
    code, output = run("--leader-elect-lease-duration=5s", f"--write-config-to={tmp_path / 'x'}")
    assert code == 1
    assert "error: leader election: leaseDuration (5s) must be greater than renewDeadline (10s)" in output


def test_cert_dir_makes_and_reuses_kube_schedulers_pair(tmp_path: Path) -> None:
    flags = SchedulerFlags(cert_dir=str(tmp_path / "certs"))
    app.serving_context(flags)
    cert = (tmp_path / "certs" / "kube-scheduler.crt").read_bytes()
    app.serving_context(flags)
    assert (tmp_path / "certs" / "kube-scheduler.crt").read_bytes() == cert


def test_client_ca_file_verifies_client_certificates(tmp_path: Path) -> None:
    import ssl

    from secondary_scheduler.certs import self_signed

    ca, _ = self_signed("ca", ["localhost"])
    (tmp_path / "ca.crt").write_bytes(ca)
    context = app.serving_context(SchedulerFlags(client_ca_file=str(tmp_path / "ca.crt")))
    assert context.verify_mode == ssl.CERT_OPTIONAL
    (tmp_path / "bad.crt").write_text("not pem")
    with pytest.raises(app.StartupError, match="--client-ca-file"):
        app.serving_context(SchedulerFlags(client_ca_file=str(tmp_path / "bad.crt")))


def test_bad_serving_certificates_are_startup_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.crt").write_text("junk")
    flags = SchedulerFlags(
        tls_cert_file=str(tmp_path / "bad.crt"), tls_private_key_file=str(tmp_path / "bad.crt")
    )
    with pytest.raises(app.StartupError, match="not PEM"):
        app.serving_context(flags)
    with pytest.raises(app.StartupError, match="not found"):
        app.serving_context(SchedulerFlags(tls_cert_file="/nope.crt", tls_private_key_file="/nope.key"))


def test_json_logging(capsys: pytest.CaptureFixture[str]) -> None:
    app.configure_logging(0, "json")
    logging.getLogger("secsched.test").warning("hello %s", "world")
    line = capsys.readouterr().err.strip().splitlines()[-1]
    entry = json.loads(line)
    assert entry["msg"] == "hello world" and entry["level"] == "warning"
    app.configure_logging(0)


def test_effective_config_merges_flags_as_kube_scheduler() -> None:
    config = load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "clientConnection: {qps: 7}\n",
        "c",
        catalog=IN_TREE_CATALOG,
    ).config
    flags = SchedulerFlags(
        config="c.yaml",
        kube_api_qps=99,
        leader_election=LeaderElectionFlags(leader_elect=False),
        profiling=False,
    )
    effective = app.effective_config(config, flags)
    assert effective.client_connection.qps == 7  # --kube-api-qps only applies without --config
    assert effective.leader_election.leader_elect is False and effective.enable_profiling is False
