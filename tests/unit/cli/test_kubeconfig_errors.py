"""Kubeconfig problems are named with file, line, field and fix, before any connection is tried."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.certs import self_signed
from secondary_scheduler.kube import kubeconfig

CERT, KEY = self_signed("test", ["127.0.0.1"])


def write(tmp_path: Path, document: Any, name: str = "kubeconfig") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    return path


def config(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": cluster or {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
    }


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def error_of(path: Path, **kwargs: Any) -> str:
    with pytest.raises(kubeconfig.KubeconfigError) as caught:
        kubeconfig.from_kubeconfig(path, **kwargs)
    return str(caught.value)


def test_a_valid_kubeconfig(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        config(
            {"server": "https://127.0.0.1:6443", "certificate-authority-data": b64(CERT)},
            {"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)},
        ),
    )
    connection = kubeconfig.from_kubeconfig(path)
    assert connection.server == "https://127.0.0.1:6443" and connection.client_cert_file


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("a: [\n", ":2: YAML syntax error"),
        ("- a\n- b\n", ":1: expected a kubeconfig (a mapping with clusters, users, contexts), got a list"),
        ("", "the kubeconfig is empty"),
        ({"clusters": []}, "current-context: no current-context is set"),
        ({**config(), "current-context": "nope"}, "contexts: no context named 'nope' (the contexts here: c)"),
        ({**config(), "clusters": "x"}, "clusters: expected a list of clusters"),
        (
            config({"server": "https://127.0.0.1:6443", "certificate-authority": "missing.crt"}),
            "missing.crt does not exist",
        ),
        (
            config({"server": "https://h", "certificate-authority-data": "!!"}),
            "certificate-authority-data: not valid base64",
        ),
        (
            config({"server": "https://h", "certificate-authority-data": b64(b"not pem")}),
            "no PEM certificate",
        ),
        (config(user={"client-certificate-data": b64(CERT)}), "client-key: missing"),
        (
            config(user={"client-certificate-data": b64(b"x"), "client-key-data": b64(b"y")}),
            "client certificate and key cannot be used",
        ),
        (
            config(user={"exec": {"command": "aws"}}),
            "exec.apiVersion: apiVersion must be specified for u to use exec authentication plugin",
        ),
        (config({"server": "ftp://h"}), "cluster.server: 'ftp://h' is not an http(s) URL"),
        (config({"server": 5}), "cluster.server: expected a string"),
    ],
)
def test_every_problem_names_the_file_and_the_field(tmp_path: Path, document: Any, message: str) -> None:
    path = write(tmp_path, document)
    text = error_of(path)
    assert text.startswith(str(path)), text
    assert message in text, text


def test_the_context_hint_follows_the_caller(tmp_path: Path) -> None:
    path = write(tmp_path, {"clusters": []})
    assert "--context" not in error_of(path)
    assert "or pass --context NAME" in error_of(path, context_flag="--context")


def test_a_missing_file_and_a_directory(tmp_path: Path) -> None:
    assert "kubeconfig not found" in error_of(tmp_path / "absent")
    assert "is a directory" in error_of(tmp_path)


def test_a_host_without_scheme_gets_client_gos_default(tmp_path: Path) -> None:
    path = write(tmp_path, config({"server": "127.0.0.1:8080"}))
    assert kubeconfig.from_kubeconfig(path).server == "http://127.0.0.1:8080"


def test_an_alias_bomb_kubeconfig(tmp_path: Path) -> None:
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"l{i}: &l{i} [" + ",".join(["*a" if i == 1 else f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)
    )
    assert "aliases" in error_of(write(tmp_path, bomb))
