"""Kubeconfig exec credential plugins against the real kube-apiserver.

The plugin is a small Python script of the test's: each run it records its environment and
prints the next of the ExecCredentials the test queued (the last one again once they run
out), or fails with the exit code the test asks for. The token it hands out is a real
ServiceAccount token (TokenRequest), so the API server authenticates it.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.client import ApiClient, CredentialsUnavailable
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.demo.operatorflow import service_account_token

pytestmark = pytest.mark.cluster

PLUGIN = """\
#!{python}
import json, os, pathlib, sys
here = pathlib.Path(__file__).parent
runs = here / "runs.jsonl"
count = len(runs.read_text().splitlines()) if runs.exists() else 0
with runs.open("a") as log:
    log.write(json.dumps({{"info": os.environ.get("KUBERNETES_EXEC_INFO"), "extra": os.environ.get("EXTRA"),
                          "args": sys.argv[1:]}}) + "\\n")
queued = json.loads((here / "queue.json").read_text())
answer = queued[min(count, len(queued) - 1)]
if isinstance(answer, int):
    print("the identity provider said no", file=sys.stderr)
    sys.exit(answer)
print(json.dumps(answer))
"""

SELF_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


class Plugin:
    """The test's credential plugin: what it will answer, and what it was run with."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / "credential-plugin"
        self.path.write_text(PLUGIN.format(python=sys.executable))
        self.path.chmod(0o755)

    def answer(self, *answers: dict[str, Any] | int) -> None:
        (self.directory / "queue.json").write_text(json.dumps(list(answers)))

    def runs(self) -> list[dict[str, Any]]:
        log = self.directory / "runs.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def credential(
    token: str | None = None, expires: datetime.datetime | None = None, **status: str
) -> dict[str, Any]:
    body: dict[str, Any] = dict(status)
    if token is not None:
        body["token"] = token
    if expires is not None:
        body["expirationTimestamp"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": body}


def write_kubeconfig(cluster: LocalCluster, directory: Path, plugin: Plugin, **exec_fields: Any) -> Path:
    path = directory / "kubeconfig"
    exec_section = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(plugin.path),
        "args": ["--cluster", "local"],
        "env": [{"name": "EXTRA", "value": "from-kubeconfig"}],
        "interactiveMode": "Never",
        **exec_fields,
    }
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "local",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": cluster.api_url, "certificate-authority": str(cluster.pki.ca_cert)},
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "plugin"}}],
        "users": [{"name": "plugin", "user": {"exec": exec_section}}],
    }
    path.write_text(yaml.safe_dump(document))
    return path


def admin_certificate_kubeconfig(cluster: LocalCluster, directory: Path, plugin: Plugin) -> Path:
    """A kubeconfig whose plugin answers with the cluster admin's client certificate and key."""
    plugin.answer(
        credential(
            clientCertificateData=cluster.pki.client_cert("admin").read_text(),
            clientKeyData=cluster.pki.client_key("admin").read_text(),
        )
    )
    return write_kubeconfig(cluster, directory, plugin)


async def who_am_i(client: ApiClient) -> str:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    answer = await client.create(SELF_REVIEW, review)
    return str(answer["status"]["userInfo"]["username"])


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    return Plugin(tmp_path)


async def test_the_plugins_token_authenticates_and_is_cached(
    cluster: LocalCluster, api: ApiClient, namespace: str, plugin: Plugin, tmp_path: Path
) -> None:
    token = await service_account_token(api, namespace, "default")
    plugin.answer(credential(token))
    path = write_kubeconfig(cluster, tmp_path, plugin, provideClusterInfo=True)
    async with ApiClient(kubeconfig.from_kubeconfig(path)) as client:
        for _ in range(3):
            assert await who_am_i(client) == f"system:serviceaccount:{namespace}:default"
    [run] = plugin.runs()  # no expiry: one run serves every request
    assert run["args"] == ["--cluster", "local"] and run["extra"] == "from-kubeconfig"
    info = json.loads(run["info"])
    assert info["kind"] == "ExecCredential" and info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == cluster.api_url
    assert info["spec"]["cluster"]["certificate-authority-data"]


async def test_an_expired_credential_runs_the_plugin_again_and_a_valid_one_does_not(
    cluster: LocalCluster, api: ApiClient, namespace: str, plugin: Plugin, tmp_path: Path
) -> None:
    token = await service_account_token(api, namespace, "default")
    now = datetime.datetime.now(datetime.UTC)
    plugin.answer(
        credential(token, expires=now - datetime.timedelta(minutes=1)),
        credential(token, expires=now - datetime.timedelta(minutes=1)),
        credential(token, expires=now + datetime.timedelta(hours=1)),
    )
    path = write_kubeconfig(cluster, tmp_path, plugin)
    async with ApiClient(kubeconfig.from_kubeconfig(path)) as client:
        for _ in range(5):
            await who_am_i(client)
    assert len(plugin.runs()) == 3  # twice expired, then cached until its expiry, an hour away


async def test_a_401_runs_the_plugin_again_and_the_request_succeeds(
    cluster: LocalCluster, api: ApiClient, namespace: str, plugin: Plugin, tmp_path: Path
) -> None:
    token = await service_account_token(api, namespace, "default")
    plugin.answer(credential("revoked-token"), credential(token))
    path = write_kubeconfig(cluster, tmp_path, plugin)
    async with ApiClient(kubeconfig.from_kubeconfig(path), max_retry_seconds=0) as client:
        assert await who_am_i(client) == f"system:serviceaccount:{namespace}:default"
    assert len(plugin.runs()) == 2


async def test_a_client_certificate_from_the_plugin_authenticates(
    cluster: LocalCluster, plugin: Plugin, tmp_path: Path
) -> None:
    path = admin_certificate_kubeconfig(cluster, tmp_path, plugin)
    async with ApiClient(kubeconfig.from_kubeconfig(path)) as client:
        assert await who_am_i(client) == "kubernetes-admin"


async def test_a_failing_plugin_is_named_as_client_go_names_it(
    cluster: LocalCluster, plugin: Plugin, tmp_path: Path
) -> None:
    plugin.answer(3)
    path = write_kubeconfig(cluster, tmp_path, plugin)
    async with ApiClient(kubeconfig.from_kubeconfig(path)) as client:
        with pytest.raises(CredentialsUnavailable) as failed:
            await who_am_i(client)
    assert f"getting credentials: exec: executable {plugin.path} failed with exit code 3" in str(failed.value)
    cli = subprocess.run(
        [sys.executable, "-m", "secondary_scheduler.cli", "snapshot", f"--kubeconfig={path}", "--no-metrics"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 1, cli.stderr
    assert f"getting credentials: exec: executable {plugin.path} failed with exit code 3" in cli.stderr
    assert "the identity provider said no" in cli.stderr  # the plugin's own stderr reaches the user
    assert "credential plugin failed" in cli.stderr
    assert "internal error" not in cli.stderr


async def test_snapshot_reads_a_cluster_through_the_plugin(
    cluster: LocalCluster, plugin: Plugin, tmp_path: Path
) -> None:
    path = admin_certificate_kubeconfig(cluster, tmp_path, plugin)
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "secondary_scheduler.cli",
            "snapshot",
            f"--kubeconfig={path}",
            "--no-metrics",
            "-o",
            "-",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr
    assert yaml.safe_load(cli.stdout)["nodes"]
