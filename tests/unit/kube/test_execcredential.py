"""The exec credential plugin's rules, in client-go's words: kubeconfig checks, interactive mode,
what a plugin may print, caching until expiry, and the 401 refresh."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.certs import self_signed
from secondary_scheduler.kube import kubeconfig
from secondary_scheduler.kube.execcredential import CredentialError, ExecAuthenticator, ExecConfig

V1 = "client.authentication.k8s.io/v1"
CERT, KEY = self_signed("plugin-user", ["127.0.0.1"])


def script(tmp_path: Path, body: str, name: str = "plugin") -> str:
    """A plugin: `body` is Python run with the ExecCredential printed from `out` (a dict) if set."""
    path = tmp_path / name
    path.write_text(
        f"#!{sys.executable}\nimport json, os, sys\nout = None\n{body}\n"
        "if out is not None: print(json.dumps(out))\n"
    )
    path.chmod(0o755)
    return str(path)


def printing(tmp_path: Path, output: Any) -> str:
    return script(tmp_path, f"out = {output!r}")


def authenticator(
    command: str, *, now: float = 1000.0, terminal: bool = False, **fields: Any
) -> ExecAuthenticator:
    config = ExecConfig(command=command, api_version=fields.pop("api_version", V1), **fields)
    return ExecAuthenticator(config, stdin_is_terminal=lambda: terminal, now=lambda: now)


def status(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ExecCredential", "status": fields}


def failure(auth: ExecAuthenticator) -> str:
    with pytest.raises(CredentialError) as caught:
        auth.credentials()
    return str(caught.value)


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("", "decoding stdout: Object 'Kind' is missing in ''"),
        ({"apiVersion": V1}, "decoding stdout: Object 'Kind' is missing"),
        ({"kind": "ExecCredential"}, "decoding stdout: Object 'apiVersion' is missing"),
        (
            {"apiVersion": "v1", "kind": "Pod"},
            'decoding stdout: no kind "Pod" is registered for version "v1"',
        ),
        (
            {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "kind": "ExecCredential",
                "status": {"token": "t"},
            },
            "exec plugin is configured to use API version client.authentication.k8s.io/v1, "
            "plugin returned version client.authentication.k8s.io/v1beta1",
        ),
        ({"apiVersion": V1, "kind": "ExecCredential"}, "exec plugin didn't return a status field"),
        (status(), "exec plugin didn't return a token or cert/key pair"),
        (status(clientCertificateData="x"), "exec plugin returned only certificate or key, not both"),
        (status(clientCertificateData="x", clientKeyData="y"), "failed parsing client key/certificate"),
        (
            status(token="t", expirationTimestamp="soon"),
            "status.expirationTimestamp: 'soon' is not an RFC 3339 time",
        ),
        (status(token=5), "decoding stdout: status.token: expected a string, got 5"),
    ],
)
def test_what_the_plugin_prints_is_checked_as_client_go_checks_it(
    tmp_path: Path, output: Any, message: str
) -> None:
    command = script(tmp_path, "") if output == "" else printing(tmp_path, output)
    assert message in failure(authenticator(command))


def test_a_token_is_cached_until_its_expiry_then_the_plugin_runs_again(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = script(
        tmp_path,
        f"p = {str(counter)!r}\n"
        "n = int(open(p).read()) + 1 if os.path.exists(p) else 1\nopen(p, 'w').write(str(n))\n"
        f"out = {{'apiVersion': {V1!r}, 'kind': 'ExecCredential', "
        "'status': {'token': f'token-{n}', 'expirationTimestamp': '1970-01-01T00:20:00Z'}}",
    )
    clock = [1000.0]
    auth = ExecAuthenticator(ExecConfig(command=command, api_version=V1), now=lambda: clock[0])
    first = auth.credentials()
    assert first.token == "token-1" and auth.credentials() is first and auth.cached() is first
    clock[0] = 1201.0  # past 00:20:00
    assert auth.cached() is None
    assert auth.credentials().token == "token-2"


def test_a_401_runs_the_plugin_once_however_many_requests_saw_it(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = script(
        tmp_path,
        f"p = {str(counter)!r}\n"
        "n = int(open(p).read()) + 1 if os.path.exists(p) else 1\nopen(p, 'w').write(str(n))\n"
        f"out = {{'apiVersion': {V1!r}, 'kind': 'ExecCredential', 'status': {{'token': f'token-{{n}}'}}}}",
    )
    auth = authenticator(command)
    used = auth.credentials()
    fresh = auth.refresh_after_unauthorized(used)
    assert fresh is not None and fresh.token == "token-2"
    assert auth.refresh_after_unauthorized(used) is fresh  # a second request with the old token
    assert counter.read_text() == "2"


def test_a_failed_refresh_is_logged_and_the_401_stands(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    flag = tmp_path / "fail"
    command = script(
        tmp_path,
        f"if os.path.exists({str(flag)!r}): sys.exit(7)\n"
        f"out = {{'apiVersion': {V1!r}, 'kind': 'ExecCredential', 'status': {{'token': 't'}}}}",
    )
    auth = authenticator(command)
    used = auth.credentials()
    flag.write_text("")
    assert auth.refresh_after_unauthorized(used) is None
    assert f"refreshing credentials: exec: executable {command} failed with exit code 7" in caplog.text


def test_a_client_certificate_result(tmp_path: Path) -> None:
    command = printing(tmp_path, status(clientCertificateData=CERT.decode(), clientKeyData=KEY.decode()))
    creds = authenticator(command).credentials()
    assert creds.token is None and creds.client_cert_file and creds.client_key_file
    assert Path(creds.client_cert_file).read_bytes() == CERT


def test_a_missing_executable_shows_the_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    auth = authenticator("gke-gcloud-auth-plugin", install_hint="Install it with gcloud components install")
    message = failure(auth)
    assert message.startswith(
        "exec: executable gke-gcloud-auth-plugin not found\n\nIt looks like you are trying"
    )
    assert message.endswith("\n\nInstall it with gcloud components install")
    for _ in range(9):
        failure(auth)
    assert failure(auth) == "exec: executable gke-gcloud-auth-plugin not found"  # ten hints an hour at most


def test_a_path_that_does_not_exist(tmp_path: Path) -> None:
    assert failure(authenticator(str(tmp_path / "absent"))) == (
        f"exec: fork/exec {tmp_path / 'absent'}: no such file or directory"
    )


@pytest.mark.parametrize(
    ("mode", "terminal", "interactive", "message"),
    [
        ("Never", True, False, None),
        ("IfAvailable", False, False, None),
        ("IfAvailable", True, True, None),
        ("Always", True, True, None),
        (
            "Always",
            False,
            None,
            "exec plugin cannot support interactive mode: standard input is not a terminal",
        ),
    ],
)
def test_interactive_mode(
    tmp_path: Path, mode: str, terminal: bool, interactive: bool | None, message: str | None
) -> None:
    command = script(
        tmp_path,
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        f"out = {{'apiVersion': {V1!r}, 'kind': 'ExecCredential', "
        "'status': {'token': str(info['spec']['interactive'])}}",
    )
    auth = authenticator(command, terminal=terminal, interactive_mode=mode)
    if message is not None:
        assert failure(auth) == message
    else:
        assert auth.credentials().token == str(interactive)


def test_cluster_info_only_when_asked(tmp_path: Path) -> None:
    auth = authenticator("x", cluster_json='{"server":"https://k"}')
    assert "cluster" not in json.loads(auth.exec_info(False))["spec"]
    auth = authenticator("x", cluster_json='{"server":"https://k"}', provide_cluster_info=True)
    assert json.loads(auth.exec_info(False))["spec"] == {
        "interactive": False,
        "cluster": {"server": "https://k"},
    }


# -- the kubeconfig's exec section ----------------------------------------------------------


def load(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any] | None = None
) -> kubeconfig.Connection:
    document = {
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": cluster or {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "eks-user"}}],
        "users": [{"name": "eks-user", "user": user}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return kubeconfig.from_kubeconfig(path)


def refused(tmp_path: Path, user: dict[str, Any]) -> str:
    with pytest.raises(kubeconfig.KubeconfigError) as caught:
        load(tmp_path, user)
    return str(caught.value)


@pytest.mark.parametrize(
    ("user", "message"),
    [
        (
            {"exec": {"apiVersion": V1, "interactiveMode": "Never"}},
            "exec.command: command must be specified for eks-user",
        ),
        (
            {"exec": {"command": "aws", "interactiveMode": "Never"}},
            "exec.apiVersion: apiVersion must be specified",
        ),
        (
            {"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1alpha1"}},
            'exec.apiVersion: exec plugin: invalid apiVersion "client.authentication.k8s.io/v1alpha1"',
        ),
        (
            {"exec": {"command": "aws", "apiVersion": V1}},
            "exec.interactiveMode: interactiveMode must be specified for eks-user to use exec "
            "authentication plugin",
        ),
        (
            {"exec": {"command": "aws", "apiVersion": V1, "interactiveMode": "Sometimes"}},
            'exec.interactiveMode: invalid interactiveMode for eks-user: "Sometimes"',
        ),
        (
            {
                "exec": {
                    "command": "aws",
                    "apiVersion": V1,
                    "interactiveMode": "Never",
                    "env": [{"value": "x"}],
                }
            },
            "exec.env[0].name: env variable name must be specified for eks-user",
        ),
        (
            {"exec": {"command": "aws", "apiVersion": V1, "interactiveMode": "Never", "arg": ["x"]}},
            "exec.arg: unknown field: did you mean `args`?",
        ),
        (
            {"exec": {"command": "aws", "apiVersion": V1}, "auth-provider": {"name": "oidc"}},
            "authProvider cannot be provided in combination with an exec plugin for eks-user",
        ),
        (
            {"exec": {"command": "aws", "apiVersion": V1, "interactiveMode": "Never"}, "token": "t"},
            "client-go ignores an exec plugin when the user also has a token",
        ),
        (
            {"auth-provider": {"name": "gcp"}},
            'Please use the "gke-gcloud-auth-plugin" kubectl/client-go credential',
        ),
        ({"auth-provider": {"name": "azure"}}, "Please use the https://github.com/Azure/kubelogin"),
        (
            {"auth-provider": {"name": "keycloak"}},
            'auth-provider.name: no Auth Provider found for name "keycloak"',
        ),
    ],
)
def test_the_exec_section_is_checked_with_client_gos_texts(
    tmp_path: Path, user: dict[str, Any], message: str
) -> None:
    text = refused(tmp_path, user)
    assert text.startswith(f"{tmp_path / 'kubeconfig'}:"), text
    assert message in text, text


def test_an_exec_section_as_clientcmd_reads_it(tmp_path: Path) -> None:
    connection = load(
        tmp_path,
        {
            "exec": {
                # v1beta1: interactiveMode defaults to IfAvailable
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": "bin/get-token",
                "args": ["--region", "eu"],
                "env": [{"name": "AWS_PROFILE", "value": "prod"}],
                "installHint": "\x1b[31mbrew install get-token\x1b[0m",
                "provideClusterInfo": True,
            }
        },
        {
            "server": "https://127.0.0.1:6443",
            "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k8s"}}],
        },
    )
    config = connection.exec
    assert config is not None
    assert config.command == str(tmp_path / "bin/get-token")  # a path is relative to the kubeconfig
    assert config.args == ("--region", "eu") and config.env == (("AWS_PROFILE", "prod"),)
    assert config.interactive_mode == "IfAvailable" and config.install_hint == "brew install get-token"
    assert json.loads(config.cluster_json) == {
        "server": "https://127.0.0.1:6443",
        "config": {"audience": "k8s"},
    }
