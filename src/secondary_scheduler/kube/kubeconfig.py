"""Where the API server is and how to authenticate: kubeconfig files and in-cluster config.

A kubeconfig is checked when it is loaded, as kubectl and client-go would use it: every
problem (bad YAML, a missing context, a CA file that does not exist, a certificate that is
not PEM, a key that does not match) is a KubeconfigError reading `FILE[:LINE]: FIELD: what is
wrong: how to fix it`, raised before any connection is tried.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from secondary_scheduler.safeyaml import (
    MAX_MANIFEST_BYTES,
    Document,
    describe_error,
    load_document,
    read_limited,
)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
MAX_KUBECONFIG_VALUES = 200_000
"""Values a kubeconfig may expand to (aliases included): thousands of contexts fit."""


class KubeconfigError(RuntimeError):
    """The kubeconfig is missing or does not say how to reach a cluster; the message says what to fix."""


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


class _Reader:
    """One kubeconfig being read: its file name and lines, for messages."""

    def __init__(self, source: Path, document: Document) -> None:
        self.source = source
        self.document = document

    def error(self, path: tuple[str | int, ...], problem: str, fix: str = "") -> KubeconfigError:
        line = self.document.line(*path)
        where = f"{self.source}:{line}" if line is not None else str(self.source)
        field = _format_path(path)
        text = f"{where}: {field}: {problem}" if field else f"{where}: {problem}"
        return KubeconfigError(f"{text}: {fix}" if fix else text)

    def named(self, kind: str, name: str) -> tuple[int, dict[str, Any]]:
        """(index, the `kind` mapping) of the entry of list `kind`s called `name`."""
        plural = f"{kind}s"
        items = self.document.data.get(plural)
        if items is None:
            items = []
        if not isinstance(items, list):
            raise self.error((plural,), f"expected a list of {kind}s, got {_kind(items)}")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.error(
                    (plural, index), f"expected a mapping with name and {kind}, got {_kind(item)}"
                )
            if item.get("name") == name:
                body = item.get(kind)
                if body is None:
                    body = {}
                if not isinstance(body, dict):
                    raise self.error((plural, index, kind), f"expected a mapping, got {_kind(body)}")
                return index, body
        names = ", ".join(str(item.get("name")) for item in items if isinstance(item, dict)) or "none"
        raise self.error(
            (plural,), f"no {kind} named {name!r} (the {kind}s here: {names})", "add it or fix the name"
        )

    def text(self, path: tuple[str | int, ...], value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error(path, f"expected a string, got {_kind(value)}")
        return value


def _format_path(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"{type(value).__name__} {value!r}"


def _server_url(reader: _Reader, path: tuple[str | int, ...], value: Any, tls: bool) -> str:
    """client-go's DefaultServerURL: a bare host:port gets https:// (http:// without any TLS setting)."""
    server = reader.text(path, value)
    if not server:
        raise reader.error(path, "missing: the API server's URL", "e.g. server: https://api.example.com:6443")
    candidate = server if "://" in server else f"{'https' if tls else 'http'}://{server}"
    try:
        parts = urlsplit(candidate)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as error:
        raise reader.error(
            path, f"{server!r} is not a URL ({error})", "e.g. https://api.example.com:6443"
        ) from error
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise reader.error(
            path, f"{server!r} is not an http(s) URL with a host", "e.g. server: https://api.example.com:6443"
        )
    return candidate.rstrip("/")


def _file(reader: _Reader, path: tuple[str | int, ...], value: Any, base: Path) -> str | None:
    name = reader.text(path, value)
    if not name:
        return None
    resolved = Path(name).expanduser()
    resolved = resolved if resolved.is_absolute() else base / resolved
    if not resolved.is_file():
        data_key = f"{path[-1]}-data"
        raise reader.error(
            path,
            f"{resolved} does not exist" if not resolved.exists() else f"{resolved} is not a file",
            f"fix the path (relative paths are relative to the kubeconfig), or embed the file as {data_key}",
        )
    return str(resolved)


def _inline(reader: _Reader, path: tuple[str | int, ...], value: Any, suffix: str) -> str | None:
    """Kubeconfigs carry certificates inline (base64) or by path; TLS needs a file either way."""
    text = reader.text(path, value)
    if not text:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise reader.error(
            path,
            "not valid base64",
            f"encode the PEM file with `base64 -w0 FILE`, or name it in {str(path[-1])[:-5]}",
        ) from error
    return _credential_file(data, suffix)


def _credential_file(data: bytes, suffix: str) -> str:
    """The path of a 0600 file holding ``data``, named by its digest in a private directory.

    One file per distinct credential, reused by every load of it, so a process that loads
    kubeconfigs repeatedly (tests, the operator) does not leave a new file behind each time.
    """
    directory = Path(tempfile.gettempdir()) / f"secsched-credentials-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    info = directory.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{directory} must belong to this user and be private (mode 0700)")
    target = directory / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
    if not target.exists():
        handle, temporary = tempfile.mkstemp(dir=directory, suffix=suffix)  # created 0600
        with os.fdopen(handle, "wb") as output:
            output.write(data)
        os.replace(temporary, target)
    return str(target)


def _check_tls(
    reader: _Reader, connection: Connection, cluster_at: tuple[str | int, ...], user_at: tuple[str | int, ...]
) -> None:
    """Build the TLS context once now, so a bad CA, certificate or key is named before any request."""
    try:
        ssl.create_default_context(cafile=connection.ca_file)
    except (ssl.SSLError, OSError, ValueError) as error:
        raise reader.error(
            (*cluster_at, "certificate-authority"),
            f"the CA bundle cannot be used ({ssl_reason(error)})",
            "give the PEM file of the API server's CA (-----BEGIN CERTIFICATE-----)",
        ) from error
    if connection.client_cert_file and not connection.client_key_file:
        raise reader.error(
            (*user_at, "client-key"),
            "missing: a client certificate needs its key",
            "add client-key or client-key-data",
        )
    if connection.client_key_file and not connection.client_cert_file:
        raise reader.error(
            (*user_at, "client-certificate"),
            "missing: a client key needs its certificate",
            "add client-certificate or client-certificate-data",
        )
    if connection.client_cert_file:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_cert_chain(connection.client_cert_file, connection.client_key_file)
        except (ssl.SSLError, OSError, ValueError) as error:
            raise reader.error(
                (*user_at, "client-certificate"),
                f"the client certificate and key cannot be used ({ssl_reason(error)})",
                "give a PEM certificate (-----BEGIN CERTIFICATE-----) and its matching PEM private key",
            ) from error


def ssl_reason(error: BaseException) -> str:
    """OpenSSL's complaint about a certificate or key file, in words."""
    if isinstance(error, ssl.SSLError):
        reason = error.reason or ("PEM_LIB" if "PEM lib" in str(error) else "")
        return {
            "NO_CERTIFICATE_OR_CRL_FOUND": "no PEM certificate in it",
            "KEY_VALUES_MISMATCH": "the key does not match the certificate",
            "PEM_LIB": "not PEM, or the key does not match the certificate",
        }.get(reason, str(error))
    return str(error)


_UNSUPPORTED_AUTH = {
    "exec": "exec credential plugins are not supported",
    "auth-provider": "auth-provider plugins are not supported",
    "username": "basic authentication was removed from Kubernetes in 1.19",
    "password": "basic authentication was removed from Kubernetes in 1.19",
}


def from_kubeconfig(
    path: str | os.PathLike[str], context: str | None = None, context_flag: str | None = None
) -> Connection:
    """The connection a kubeconfig's context (default: its current-context) describes.

    `context_flag` names the caller's option to choose a context, for the hint when none is set.
    """
    source = Path(path).expanduser()
    try:
        data = read_limited(source, MAX_MANIFEST_BYTES, "the kubeconfig")
        text = data.decode("utf-8-sig")
    except FileNotFoundError as error:
        raise KubeconfigError(f"{source}: kubeconfig not found: check the path") from error
    except IsADirectoryError as error:
        raise KubeconfigError(f"{source}: is a directory: give the kubeconfig file itself") from error
    except OSError as error:
        raise KubeconfigError(f"{source}: cannot be read ({error.strerror or error})") from error
    except UnicodeDecodeError as error:
        raise KubeconfigError(f"{source}: is not UTF-8 text: is this the right file?") from error
    except yaml.YAMLError as error:
        raise KubeconfigError(f"{source}: {describe_error(error)[1]}") from error
    try:
        document = load_document(
            text, max_bytes=MAX_MANIFEST_BYTES, what="the kubeconfig", max_values=MAX_KUBECONFIG_VALUES
        )
    except yaml.YAMLError as error:
        line, message = describe_error(error)
        where = f"{source}:{line}" if line is not None else str(source)
        raise KubeconfigError(
            f"{where}: {message}: a kubeconfig is YAML as `kubectl config view --raw` writes it"
        ) from error
    if document.data is None:
        raise KubeconfigError(
            f"{source}: the kubeconfig is empty: write one with `kubectl config view --raw --minify`"
        )
    if not isinstance(document.data, dict):
        raise KubeconfigError(
            f"{source}:1: expected a kubeconfig (a mapping with clusters, users, contexts), "
            f"got {_kind(document.data)}"
        )
    reader = _Reader(source, document)
    context_name = context or reader.text(("current-context",), document.data.get("current-context"))
    if not context_name:
        how = f", or pass {context_flag} NAME" if context_flag else ""
        raise reader.error(
            ("current-context",),
            "no current-context is set, so there is no cluster to use",
            f"set it with `kubectl --kubeconfig {source} config use-context NAME`{how}",
        )
    context_index, ctx = reader.named("context", context_name)
    context_at = ("contexts", context_index, "context")
    cluster_name = reader.text((*context_at, "cluster"), ctx.get("cluster"))
    if not cluster_name:
        raise reader.error((*context_at, "cluster"), "missing: the context must name a cluster")
    cluster_index, cluster = reader.named("cluster", cluster_name)
    cluster_at = ("clusters", cluster_index, "cluster")
    user_name = reader.text((*context_at, "user"), ctx.get("user"))
    user: dict[str, Any] = {}
    user_at: tuple[str | int, ...] = ("users",)
    if user_name:
        user_index, user = reader.named("user", user_name)
        user_at = ("users", user_index, "user")
    for key, why in _UNSUPPORTED_AUTH.items():
        if user.get(key):
            raise reader.error(
                (*user_at, key),
                f"{why} by this program",
                "use a kubeconfig with a token, a tokenFile or a client certificate "
                "(e.g. `kubectl create token SERVICEACCOUNT` for a token)",
            )
    base = source.parent
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise reader.error(
            (*cluster_at, "insecure-skip-tls-verify"), f"expected true or false, got {_kind(insecure)}"
        )
    ca_file = _file(
        reader, (*cluster_at, "certificate-authority"), cluster.get("certificate-authority"), base
    ) or _inline(
        reader, (*cluster_at, "certificate-authority-data"), cluster.get("certificate-authority-data"), ".crt"
    )
    cert_file = _file(
        reader, (*user_at, "client-certificate"), user.get("client-certificate"), base
    ) or _inline(reader, (*user_at, "client-certificate-data"), user.get("client-certificate-data"), ".crt")
    key_file = _file(reader, (*user_at, "client-key"), user.get("client-key"), base) or _inline(
        reader, (*user_at, "client-key-data"), user.get("client-key-data"), ".key"
    )
    token = reader.text((*user_at, "token"), user.get("token"))
    token_file = _file(reader, (*user_at, "tokenFile"), user.get("tokenFile"), base)
    tls = bool(ca_file or cert_file or insecure)
    connection = Connection(
        server=_server_url(reader, (*cluster_at, "server"), cluster.get("server"), tls),
        ca_file=ca_file,
        client_cert_file=cert_file,
        client_key_file=key_file,
        token=token or None,
        token_file=token_file,
        insecure_skip_verify=insecure,
    )
    if connection.server.startswith("https:"):
        _check_tls(reader, connection, cluster_at, user_at)
    return connection


def in_cluster() -> Connection:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("not running in a pod (KUBERNETES_SERVICE_HOST is unset)")
    if ":" in host:
        host = f"[{host}]"
    token = SERVICE_ACCOUNT_DIR / "token"
    if not token.is_file():
        raise KubeconfigError(
            f"{token}: the pod's ServiceAccount token is missing: set automountServiceAccountToken: true "
            "on the pod (or its ServiceAccount)"
        )
    return Connection(
        server=f"https://{host}:{port}",
        ca_file=str(SERVICE_ACCOUNT_DIR / "ca.crt"),
        token_file=str(token),
    )


def load(path: str | None = None, context: str | None = None, context_flag: str | None = None) -> Connection:
    """kube-scheduler's order: explicit kubeconfig, in-cluster, $KUBECONFIG, ~/.kube/config."""
    if path:
        return from_kubeconfig(path, context, context_flag)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    candidate = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path.home() / ".kube" / "config")
    if Path(candidate).expanduser().exists():
        return from_kubeconfig(candidate, context, context_flag)
    raise KubeconfigError(
        "no kubeconfig given, not running in a pod, and no $KUBECONFIG or ~/.kube/config: "
        "pass --kubeconfig PATH (for the local cluster: `secsched cluster status` prints it)"
    )
