"""The secure port authenticates and authorises as kube-scheduler's: the same requests, sent to
our scheduler and to upstream's kube-scheduler on the same cluster, get the same status codes.

Both run with --authentication-kubeconfig/--authorization-kubeconfig and kube-scheduler's
default always-allow paths, so /metrics needs a TokenReview-ed token or a client certificate
from the cluster's client CA (read from the extension-apiserver-authentication ConfigMap),
and a SubjectAccessReview that allows `get` on the nonResourceURL /metrics.
"""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from secondary_scheduler.kube.client import ApiClient
from secsched_devtools.cluster import versions
from secsched_devtools.cluster.localcluster import LocalCluster, free_port
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, SchedulerRun, launch, ours_command

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: secure-port-test
"""
ALLOWED_USER = "secure-port-allowed"
"""A certificate user the test grants `get /metrics`."""


@dataclass(frozen=True)
class Probe:
    """One request: what it carries and what kube-scheduler answers it."""

    name: str
    path: str
    method: str = "GET"
    token: str | None = None
    cert: tuple[str, str] | None = None
    expected: int = 200


def _issue(
    directory: Path, stem: str, ca_cert: Path, ca_key: Path, cn: str, org: str | None = None
) -> tuple[str, str]:
    """A client certificate for `cn` signed by the CA at ca_cert/ca_key."""
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return str(cert_path), str(key_path)


def _foreign_ca(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-cluster-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "foreign-ca.crt", directory / "foreign-ca.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def _start(kind: str, cluster: LocalCluster, directory: Path) -> SchedulerRun:
    """A scheduler with kube-scheduler's default always-allow paths (not the harness's /metrics)."""
    directory.mkdir(parents=True, exist_ok=True)
    document = yaml.safe_load(CONFIG)
    document["clientConnection"] = {"kubeconfig": str(cluster.kubeconfig)}
    config = directory / f"{kind}.yaml"
    config.write_text(yaml.safe_dump(document))
    command = ours_command() if kind == OURS else [str(versions.bin_dir() / "kube-scheduler-plugins")]
    port = free_port()
    argv = [
        *command,
        f"--config={config}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--authentication-kubeconfig={cluster.kubeconfig}",
        f"--authorization-kubeconfig={cluster.kubeconfig}",
        "--v=2",
    ]
    return launch(kind, argv, directory / f"{kind}.log", port)


def _send(run: SchedulerRun, probe: Probe) -> httpx.Response:
    headers = {"Authorization": f"Bearer {probe.token}"} if probe.token else {}
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if probe.cert:
        context.load_cert_chain(*probe.cert)
    with httpx.Client(verify=context, timeout=10) as client:
        return client.request(probe.method, f"https://127.0.0.1:{run.port}{probe.path}", headers=headers)


async def _token(api: ApiClient, namespace: str, account: str) -> str:
    await api.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
    )
    answer = await api.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    return str(answer["status"]["token"])


async def _grant_metrics(api: ApiClient, namespace: str, name: str, subjects: list[dict[str, str]]) -> None:
    await api.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    await api.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        },
    )


async def test_secure_port_answers_as_kube_scheduler(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    role = f"secure-port-{namespace}"
    allowed_token = await _token(api, namespace, "metrics-reader")
    denied_token = await _token(api, namespace, "no-rbac")
    await _grant_metrics(
        api,
        namespace,
        role,
        [
            {"kind": "ServiceAccount", "name": "metrics-reader", "namespace": namespace},
            {"kind": "User", "name": ALLOWED_USER, "apiGroup": "rbac.authorization.k8s.io"},
        ],
    )
    pki = cluster.pki
    certs = tmp_path / "certs"
    certs.mkdir()
    tester = _issue(certs, "tester", pki.ca_cert, pki.ca_key, "secure-port-tester", "testers")
    allowed = _issue(certs, "allowed", pki.ca_cert, pki.ca_key, ALLOWED_USER)
    master = _issue(certs, "master", pki.ca_cert, pki.ca_key, "secure-port-admin", "system:masters")
    probes = [
        *(Probe(f"anonymous {path}", path) for path in ("/healthz", "/readyz", "/livez")),
        Probe("anonymous /metrics", "/metrics", expected=403),
        Probe("anonymous unknown path", "/nothing-here", expected=403),
        Probe("invalid token /metrics", "/metrics", token="not-a-token", expected=401),
        Probe("invalid token /healthz", "/healthz", token="not-a-token", expected=401),
        Probe("token without RBAC /metrics", "/metrics", token=denied_token, expected=403),
        Probe("token without RBAC /healthz", "/healthz", token=denied_token),
        Probe("allowed token /metrics", "/metrics", token=allowed_token),
        Probe("allowed token POST /metrics", "/metrics", method="POST", token=allowed_token, expected=403),
        Probe("allowed token /metrics again (cached)", "/metrics", token=allowed_token),
        Probe("client cert without RBAC /metrics", "/metrics", cert=tester, expected=403),
        Probe("client cert without RBAC /livez", "/livez", cert=tester),
        Probe("client cert allowed /metrics", "/metrics", cert=allowed),
        Probe("client cert system:masters /metrics", "/metrics", cert=master),
    ]
    answers: dict[str, list[tuple[str, int, str]]] = {}
    for kind in (OURS, UPSTREAM):
        with _start(kind, cluster, tmp_path / kind) as run:
            rows = []
            for probe in probes:
                response = _send(run, probe)
                message = response.json().get("message", "") if response.status_code in (401, 403) else ""
                rows.append((probe.name, response.status_code, message))
                if probe.expected == 200 and probe.path == "/metrics":
                    assert "# HELP" in response.text, (
                        f"{kind} {probe.name}: no metrics in {response.text[:200]}"
                    )
            answers[kind] = rows
    expected = [(probe.name, probe.expected) for probe in probes]
    assert [(name, code) for name, code, _ in answers[UPSTREAM]] == expected, answers[UPSTREAM]
    assert [(name, code) for name, code, _ in answers[OURS]] == expected, answers[OURS]
    assert answers[OURS] == answers[UPSTREAM]  # the 401/403 messages too
    forbidden = dict((name, message) for name, _, message in answers[OURS])
    assert forbidden["anonymous /metrics"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    assert forbidden["client cert without RBAC /metrics"] == (
        'forbidden: User "secure-port-tester" cannot get path "/metrics"'
    )


async def test_client_certificate_from_another_ca_is_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    """Upstream answers 401 (it verifies after the handshake); Python's ssl verifies during it,
    so ours ends the connection in the handshake (TLS 1.3: right after it): either way the
    request is not served."""
    ca_cert, ca_key = _foreign_ca(tmp_path)
    foreign = _issue(tmp_path, "foreign", ca_cert, ca_key, "intruder", "system:masters")
    with _start(UPSTREAM, cluster, tmp_path / "upstream") as run:
        assert _send(run, Probe("foreign", "/metrics", cert=foreign)).status_code == 401
    with (
        _start(OURS, cluster, tmp_path / "ours") as run,
        pytest.raises((httpx.ConnectError, httpx.RemoteProtocolError)),
    ):
        _send(run, Probe("foreign", "/metrics", cert=foreign))
