"""Where the API server is and how to authenticate: kubeconfig files and in-cluster config.

A kubeconfig is checked when it is loaded, as kubectl and client-go would use it: every
problem (bad YAML, a missing context, a CA file that does not exist, a certificate that is
not PEM, a key that does not match) is a KubeconfigError reading `FILE[:LINE]: FIELD: what is
wrong: how to fix it`, raised before any connection is tried.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from secondary_scheduler.kube import execcredential, oidcauth
from secondary_scheduler.kube.credentialfiles import private_file
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
    exec: execcredential.ExecConfig | None = None
    """The user's credential plugin: its token or certificate is fetched when a request needs it."""
    oidc: oidcauth.OidcConfig | None = None
    """The user's `auth-provider: oidc`: its id-token, refreshed when expired."""

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert_file:
            context.load_cert_chain(self.client_cert_file, self.client_key_file)
        return context

    def bearer_token(self) -> str | None:
        """The token to send now; a token file is re-read so rotated tokens are picked up, an exec
        plugin is run unless its cached token is still valid (raises execcredential.CredentialError)."""
        if self.token_file:
            return Path(self.token_file).read_text().strip()
        if self.exec is not None:
            return execcredential.authenticator_for(self.exec).credentials().token
        if self.oidc is not None:
            return oidcauth.authenticator_for(self.oidc).credentials().token
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
    return private_file(data, suffix)


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


_BASIC_AUTH_REMOVED = "basic authentication was removed from Kubernetes in 1.19"
_EXEC_FIELDS = (
    "command",
    "args",
    "env",
    "apiVersion",
    "installHint",
    "provideClusterInfo",
    "interactiveMode",
)
_REMOVED_AUTH_PROVIDERS = {
    # client-go 1.34's stubs for the providers it dropped, word for word.
    "gcp": "The gcp auth plugin has been removed.\n"
    'Please use the "gke-gcloud-auth-plugin" kubectl/client-go credential plugin instead.\n'
    "See https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke "
    "for further details",
    "azure": "The azure auth plugin has been removed.\n"
    "Please use the https://github.com/Azure/kubelogin kubectl/client-go credential plugin instead.\n"
    "See https://kubernetes.io/docs/reference/access-authn-authz/authentication/"
    "#client-go-credential-plugins for further details",
}


def _exec_config(
    reader: _Reader,
    at: tuple[str | int, ...],
    body: Any,
    user_name: str,
    base: Path,
    cluster_json: str,
) -> execcredential.ExecConfig:
    """A user's `exec` section checked as clientcmd's validation does, in its words."""
    if not isinstance(body, dict):
        raise reader.error(at, f"expected a mapping with command and apiVersion, got {_kind(body)}")
    for key in body:
        if key not in _EXEC_FIELDS:
            close = difflib.get_close_matches(str(key), _EXEC_FIELDS, n=1, cutoff=0.6)
            fix = (
                f"did you mean `{close[0]}`?"
                if close
                else f"the fields of exec are {', '.join(_EXEC_FIELDS)}"
            )
            raise reader.error((*at, key), "unknown field", fix)
    command = reader.text((*at, "command"), body.get("command"))
    if not command:
        raise reader.error(
            (*at, "command"), f"command must be specified for {user_name} to use exec authentication plugin"
        )
    if os.sep in command and not Path(command).is_absolute():
        command = str(base / command)  # clientcmd: a command with a slash is relative to the kubeconfig
    api_version = reader.text((*at, "apiVersion"), body.get("apiVersion"))
    if not api_version:
        raise reader.error(
            (*at, "apiVersion"),
            f"apiVersion must be specified for {user_name} to use exec authentication plugin",
            f"e.g. apiVersion: {execcredential.API_VERSIONS[0]}",
        )
    if api_version not in execcredential.API_VERSIONS:
        raise reader.error(
            (*at, "apiVersion"),
            f"exec plugin: invalid apiVersion {json.dumps(api_version)}",
            f"use {' or '.join(execcredential.API_VERSIONS)}",
        )
    args = body.get("args") or []
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise reader.error((*at, "args"), f"expected a list of strings, got {_kind(args)}")
    env: list[tuple[str, str]] = []
    entries = body.get("env") or []
    if not isinstance(entries, list):
        raise reader.error((*at, "env"), f"expected a list of name/value pairs, got {_kind(entries)}")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise reader.error(
                (*at, "env", index), f"expected a mapping with name and value, got {_kind(entry)}"
            )
        name = reader.text((*at, "env", index, "name"), entry.get("name"))
        if not name:
            raise reader.error(
                (*at, "env", index, "name"),
                f"env variable name must be specified for {user_name} to use exec authentication plugin",
            )
        env.append((name, reader.text((*at, "env", index, "value"), entry.get("value")) or ""))
    mode = reader.text((*at, "interactiveMode"), body.get("interactiveMode"))
    if not mode and api_version.endswith("/v1beta1"):
        mode = "IfAvailable"  # clientcmd's default for v1beta1, kept for compatibility
    if not mode:
        raise reader.error(
            (*at, "interactiveMode"),
            f"interactiveMode must be specified for {user_name} to use exec authentication plugin",
            "set it to Never, IfAvailable or Always",
        )
    if mode not in execcredential.INTERACTIVE_MODES:
        raise reader.error(
            (*at, "interactiveMode"),
            f"invalid interactiveMode for {user_name}: {json.dumps(mode)}",
            "use Never, IfAvailable or Always",
        )
    provide = body.get("provideClusterInfo", False)
    if not isinstance(provide, bool):
        raise reader.error((*at, "provideClusterInfo"), f"expected true or false, got {_kind(provide)}")
    return execcredential.ExecConfig(
        command=command,
        api_version=api_version,
        args=tuple(args),
        env=tuple(env),
        install_hint=execcredential.clean_install_hint(
            reader.text((*at, "installHint"), body.get("installHint")) or ""
        ),
        provide_cluster_info=provide,
        interactive_mode=mode,
        cluster_json=cluster_json,
    )


def _exec_cluster_json(
    reader: _Reader,
    cluster_at: tuple[str | int, ...],
    cluster: dict[str, Any],
    server: str,
    ca_file: str | None,
) -> str:
    """What a plugin with provideClusterInfo is told about the cluster (client-go's ConfigToExecCluster)."""
    extension = None
    extensions = cluster.get("extensions") or []
    if not isinstance(extensions, list):
        raise reader.error(
            (*cluster_at, "extensions"), f"expected a list of named extensions, got {_kind(extensions)}"
        )
    for entry in extensions:
        if isinstance(entry, dict) and entry.get("name") == execcredential.CLUSTER_EXTENSION:
            extension = entry.get("extension")
    return execcredential.cluster_info(
        server,
        tls_server_name=cluster.get("tls-server-name"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        ca_data=Path(ca_file).read_bytes() if ca_file else None,
        proxy_url=cluster.get("proxy-url"),
        disable_compression=bool(cluster.get("disable-compression")),
        config=extension,
    )


def _auth_provider(
    reader: _Reader, at: tuple[str | int, ...], body: Any, user_name: str, server: str
) -> oidcauth.OidcConfig:
    """The oidc provider kubectl registers; any other is refused with client-go's own text, which
    for gcp and azure names the exec plugin that replaced it."""
    name = body.get("name") if isinstance(body, dict) else None
    if name == "oidc" and isinstance(body, dict):
        for key in body:
            if key not in ("name", "config"):
                raise reader.error(
                    (*at, key), "unknown field", "the fields of auth-provider are name, config"
                )
        raw = body.get("config") or {}
        if not isinstance(raw, dict):
            raise reader.error((*at, "config"), f"expected a mapping of strings, got {_kind(raw)}")
        try:
            return oidcauth.parse_config(
                raw, kubeconfig=str(reader.source.absolute()), user=user_name, cluster_address=server
            )
        except oidcauth.OidcConfigError as error:
            raise reader.error((*at, "config", error.key), error.problem, error.fix) from error
    if name in _REMOVED_AUTH_PROVIDERS:
        raise reader.error((*at, "name"), _REMOVED_AUTH_PROVIDERS[str(name)])
    raise reader.error(
        (*at, "name"),
        f"no Auth Provider found for name {json.dumps(name)}",
        "use an exec credential plugin (kubelogin for OIDC: `kubectl oidc-login get-token`), a token, "
        "or a client certificate",
    )


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
    for key in ("username", "password"):
        if user.get(key):
            raise reader.error(
                (*user_at, key),
                f"{_BASIC_AUTH_REMOVED} by this program",
                "use a token, a tokenFile, a client certificate or an exec credential plugin "
                "(e.g. `kubectl create token SERVICEACCOUNT` for a token)",
            )
    if user.get("exec") and user.get("auth-provider"):
        raise reader.error(
            (*user_at, "auth-provider"),
            f"authProvider cannot be provided in combination with an exec plugin for {user_name}",
            "keep one of them",
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
    server = _server_url(reader, (*cluster_at, "server"), cluster.get("server"), tls)
    exec_config = None
    if user.get("exec") is not None:
        if token or token_file or cert_file:
            raise reader.error(
                (*user_at, "exec"),
                "client-go ignores an exec plugin when the user also has a token, tokenFile or client "
                "certificate, so this user's credentials are ambiguous",
                "remove either exec or the static credentials",
            )
        exec_config = _exec_config(
            reader,
            (*user_at, "exec"),
            user["exec"],
            str(user_name),
            base,
            _exec_cluster_json(reader, cluster_at, cluster, server, ca_file),
        )
    oidc_config = None
    if user.get("auth-provider"):
        oidc_config = _auth_provider(
            reader, (*user_at, "auth-provider"), user["auth-provider"], str(user_name), server
        )
        if token or token_file or cert_file:
            raise reader.error(
                (*user_at, "auth-provider"),
                "the user also has a token, tokenFile or client certificate: its credentials are ambiguous",
                "remove either auth-provider or the static credentials",
            )
    connection = Connection(
        server=server,
        ca_file=ca_file,
        client_cert_file=cert_file,
        client_key_file=key_file,
        token=token or None,
        token_file=token_file,
        insecure_skip_verify=insecure,
        exec=exec_config,
        oidc=oidc_config,
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
