"""Where the API server is and how to authenticate: kubeconfig files and in-cluster config."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(RuntimeError):
    """The kubeconfig is missing or does not say how to reach a cluster."""


@dataclass(frozen=True)
class Connection:
    """Everything needed to open an authenticated connection to one API server."""

    server: str
    ca_file: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    insecure_skip_verify: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert_file:
            context.load_cert_chain(self.client_cert_file, self.client_key_file)
        return context

    def bearer_token(self) -> str | None:
        """The token to send now; a token file is re-read so rotated tokens are picked up."""
        if self.token_file:
            return Path(self.token_file).read_text().strip()
        return self.token


def _materialise(data_b64: str | None, path: str | None, base: Path, suffix: str) -> str | None:
    """Kubeconfigs carry certificates inline or by path; TLS needs a file either way."""
    if path:
        resolved = Path(path)
        return str(resolved if resolved.is_absolute() else base / resolved)
    if not data_b64:
        return None
    with tempfile.NamedTemporaryFile(prefix="secsched-", suffix=suffix, delete=False) as handle:
        handle.write(base64.b64decode(data_b64))
    os.chmod(handle.name, 0o600)
    return handle.name


def _named(items: list[dict[str, Any]], name: str, kind: str, source: Path) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return dict(item.get(kind) or {})
    raise KubeconfigError(f"{source}: no {kind} named {name!r}")


def from_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> Connection:
    source = Path(path).expanduser()
    if not source.exists():
        raise KubeconfigError(f"kubeconfig {source} does not exist")
    document = yaml.safe_load(source.read_text()) or {}
    context_name = context or document.get("current-context")
    if not context_name:
        raise KubeconfigError(f"{source}: no current-context; pass a context name")
    ctx = _named(document.get("contexts", []), context_name, "context", source)
    cluster = _named(document.get("clusters", []), ctx["cluster"], "cluster", source)
    user = _named(document.get("users", []), ctx.get("user", ""), "user", source) if ctx.get("user") else {}
    base = source.parent
    return Connection(
        server=cluster["server"].rstrip("/"),
        ca_file=_materialise(
            cluster.get("certificate-authority-data"), cluster.get("certificate-authority"), base, ".crt"
        ),
        client_cert_file=_materialise(
            user.get("client-certificate-data"), user.get("client-certificate"), base, ".crt"
        ),
        client_key_file=_materialise(user.get("client-key-data"), user.get("client-key"), base, ".key"),
        token=user.get("token"),
        token_file=user.get("tokenFile"),
        insecure_skip_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
    )


def in_cluster() -> Connection:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("not running in a pod (KUBERNETES_SERVICE_HOST is unset)")
    if ":" in host:
        host = f"[{host}]"
    return Connection(
        server=f"https://{host}:{port}",
        ca_file=str(SERVICE_ACCOUNT_DIR / "ca.crt"),
        token_file=str(SERVICE_ACCOUNT_DIR / "token"),
    )


def load(path: str | None = None, context: str | None = None) -> Connection:
    """kube-scheduler's order: explicit kubeconfig, in-cluster, $KUBECONFIG, ~/.kube/config."""
    if path:
        return from_kubeconfig(path, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    candidate = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path.home() / ".kube" / "config")
    if Path(candidate).expanduser().exists():
        return from_kubeconfig(candidate, context)
    raise KubeconfigError(
        "no kubeconfig given, not running in a pod, and no $KUBECONFIG or ~/.kube/config: "
        "pass --kubeconfig PATH (for the local cluster: `secsched cluster status` prints it)"
    )
