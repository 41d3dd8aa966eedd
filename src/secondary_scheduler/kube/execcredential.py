"""client-go credential plugins: a kubeconfig user's `exec` command that prints an ExecCredential.

Managed clusters (EKS, GKE, AKS, kubelogin's OIDC) hand out short-lived credentials through a
command the kubeconfig names. This module runs it the way client-go's exec authenticator does
(k8s.io/client-go/plugin/pkg/client/auth/exec): KUBERNETES_EXEC_INFO in its environment,
standard input passed only when interactive, the result (a bearer token or a client
certificate and key) cached until its expirationTimestamp, and the command run again when
the API server answers 401 to the credentials it gave. Errors read as client-go's.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import os
import re
import shutil
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from secondary_scheduler.kube.credentialfiles import private_file

log = logging.getLogger(__name__)

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
"""The ExecCredential versions client-go 1.34 speaks (v1alpha1 is gone)."""
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"
"""The cluster extension whose value reaches the plugin as spec.cluster.config."""

_INSTALL_HINT_HELP = (
    "\n\nIt looks like you are trying to use a client-go credential plugin that is not installed."
    "\n\nTo learn more about this feature, consult the documentation available at:"
    "\n      https://kubernetes.io/docs/reference/access-authn-authz/authentication/"
    "#client-go-credential-plugins"
)
_HINTS_PER_HOUR = 10
"""client-go shows the install hint at most this often an hour, so a retrying process does not spew it."""
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class CredentialError(Exception):
    """The credential plugin gave no usable credentials; the message is client-go's."""


@dataclass(frozen=True)
class ExecConfig:
    """A kubeconfig user's `exec` section, checked, with the cluster the plugin may be told about."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"
    cluster_json: str = "{}"
    """spec.cluster of the ExecCredential (client-go's ConfigToExecCluster), as JSON: hashable."""


@dataclass(frozen=True, eq=False)
class Credentials:
    """What one run of the plugin gave. Compared by identity: a new run is new credentials."""

    token: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    expires: float | None = field(default=None, compare=False)
    """Seconds since the epoch after which the plugin is run again (None: until a 401)."""


def clean_install_hint(hint: str) -> str:
    """client-go strips terminal escape sequences from the hint: a kubeconfig must not drive the terminal."""
    return _ANSI_ESCAPE.sub("", hint)


def cluster_info(
    server: str,
    *,
    tls_server_name: str | None,
    insecure: bool,
    ca_data: bytes | None,
    proxy_url: str | None,
    disable_compression: bool,
    config: Any,
) -> str:
    """spec.cluster as client-go's ConfigToExecCluster fills it, as compact JSON."""
    cluster: dict[str, Any] = {"server": server}
    if tls_server_name:
        cluster["tls-server-name"] = tls_server_name
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    if ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(ca_data).decode()
    if proxy_url:
        cluster["proxy-url"] = proxy_url
    if disable_compression:
        cluster["disable-compression"] = True
    if config is not None:
        cluster["config"] = config
    return json.dumps(cluster, separators=(",", ":"), sort_keys=True)


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and os.isatty(sys.stdin.fileno())
    except (OSError, ValueError):  # closed or replaced standard input
        return False


class ExecAuthenticator:
    """Runs one plugin and caches its credentials; one per distinct ExecConfig in a process.

    Thread-safe (the lock also keeps an interactive plugin from being run twice at once):
    the API client calls it from worker threads so a slow plugin never blocks the event loop.
    """

    failure_prefix = "getting credentials: "
    """How client-go introduces this plugin's errors."""

    def __init__(
        self,
        config: ExecConfig,
        *,
        stdin_is_terminal: Callable[[], bool] = _stdin_is_terminal,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._stdin_is_terminal = stdin_is_terminal
        self._now = now
        self._lock = threading.Lock()
        self._cached: Credentials | None = None
        self._hint_window = -1.0
        self._hints_in_window = 0

    def cached(self) -> Credentials | None:
        """The credentials in hand if they have not expired: no plugin run (the fast path)."""
        creds = self._cached
        if creds is None or self._expired(creds):
            return None
        return creds

    def credentials(self) -> Credentials:
        """Cached credentials, or the plugin's new ones if there are none or they expired."""
        with self._lock:
            if self._cached is not None and not self._expired(self._cached):
                return self._cached
            return self._refresh_locked()

    def refresh_after_unauthorized(self, used: Credentials) -> Credentials | None:
        """The API server refused `used`: run the plugin again unless another caller already did.

        Returns the credentials to use from now on, or None when the plugin failed (logged,
        as client-go does: the 401 stands).
        """
        with self._lock:
            if used is not self._cached:
                return self._cached
            try:
                return self._refresh_locked()
            except CredentialError as error:
                log.error("refreshing credentials: %s", error)
                return None

    def _expired(self, creds: Credentials) -> bool:
        return creds.expires is not None and self._now() > creds.expires

    def _interactive(self) -> bool:
        mode = self.config.interactive_mode
        if mode == "Never":
            return False
        if mode == "IfAvailable":
            return self._stdin_is_terminal()
        if not self._stdin_is_terminal():
            raise CredentialError(
                "exec plugin cannot support interactive mode: standard input is not a terminal"
            )
        return True

    def exec_info(self, interactive: bool) -> str:
        """The KUBERNETES_EXEC_INFO value: an ExecCredential with only its spec."""
        spec: dict[str, Any] = {"interactive": interactive}
        if self.config.provide_cluster_info:
            spec["cluster"] = json.loads(self.config.cluster_json)
        credential = {"kind": "ExecCredential", "apiVersion": self.config.api_version, "spec": spec}
        return json.dumps(credential, separators=(",", ":"))

    def _refresh_locked(self) -> Credentials:
        interactive = self._interactive()
        env = {**os.environ, **dict(self.config.env), EXEC_INFO_ENV: self.exec_info(interactive)}
        argv = [self._executable(), *self.config.args]
        try:
            result = subprocess.run(
                argv,
                env=env,
                stdin=None if interactive else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None,  # the plugin talks to the user on our standard error
                check=False,
            )
        except OSError as error:
            reason = (error.strerror or str(error)).lower()
            raise CredentialError(f"exec: fork/exec {argv[0]}: {reason}") from error
        if result.returncode != 0:
            code = result.returncode if result.returncode > 0 else -1  # Go: -1 when killed by a signal
            raise CredentialError(f"exec: executable {self.config.command} failed with exit code {code}")
        self._cached = self._decode(result.stdout)
        return self._cached

    def _executable(self) -> str:
        """Go's exec.Command: a name without a slash is looked up on our PATH."""
        command = self.config.command
        if os.sep in command:
            return command
        found = shutil.which(command)
        if found is None:
            raise CredentialError(self._not_found())
        return found

    def _not_found(self) -> str:
        text = f"exec: executable {self.config.command} not found"
        now = self._now()
        if now - self._hint_window >= 3600:
            self._hint_window, self._hints_in_window = now, 0
        if self._hints_in_window < _HINTS_PER_HOUR:
            self._hints_in_window += 1
            text += _INSTALL_HINT_HELP
            if self.config.install_hint:
                text += f"\n\n{self.config.install_hint}"
        return text

    def _decode(self, stdout: bytes) -> Credentials:
        """The plugin's ExecCredential, checked as client-go checks it, in its words."""
        shown = stdout[:200].decode(errors="replace")
        try:
            document = yaml.safe_load(stdout.decode("utf-8-sig")) if stdout.strip() else None
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            raise CredentialError(f"decoding stdout: {error}") from error
        if not isinstance(document, dict) or not document.get("kind"):
            raise CredentialError(f"decoding stdout: Object 'Kind' is missing in '{shown}'")
        version, kind = document.get("apiVersion"), document["kind"]
        if not version:
            raise CredentialError(f"decoding stdout: Object 'apiVersion' is missing in '{shown}'")
        if kind != "ExecCredential" or version not in API_VERSIONS:
            raise CredentialError(
                f'decoding stdout: no kind "{kind}" is registered for version "{version}" in scheme'
            )
        if version != self.config.api_version:
            raise CredentialError(
                f"exec plugin is configured to use API version {self.config.api_version}, "
                f"plugin returned version {version}"
            )
        status = document.get("status")
        if status is None:
            raise CredentialError("exec plugin didn't return a status field")
        if not isinstance(status, dict):
            raise CredentialError("decoding stdout: status: expected an object")
        token, cert, key = (
            _string(status, name) for name in ("token", "clientCertificateData", "clientKeyData")
        )
        if not token and not cert and not key:
            raise CredentialError("exec plugin didn't return a token or cert/key pair")
        if bool(cert) != bool(key):
            raise CredentialError("exec plugin returned only certificate or key, not both")
        creds = Credentials(token=token or None, expires=_expiry(status.get("expirationTimestamp")))
        if cert and key:
            cert_file, key_file = private_file(cert.encode(), ".crt"), private_file(key.encode(), ".key")
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert_file, key_file)
            except (ssl.SSLError, OSError) as error:
                raise CredentialError(f"failed parsing client key/certificate: {error}") from error
            creds = Credentials(
                token=creds.token, client_cert_file=cert_file, client_key_file=key_file, expires=creds.expires
            )
        return creds


def _string(status: dict[str, Any], name: str) -> str:
    value = status.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CredentialError(f"decoding stdout: status.{name}: expected a string, got {value!r}")
    return value


def _expiry(value: Any) -> float | None:
    """expirationTimestamp (RFC 3339) as epoch seconds."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise CredentialError(
            f"decoding stdout: status.expirationTimestamp: expected an RFC 3339 time, got {value!r}"
        )
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError as error:
        raise CredentialError(
            f"decoding stdout: status.expirationTimestamp: {value!r} is not an RFC 3339 time"
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


_AUTHENTICATORS: dict[ExecConfig, ExecAuthenticator] = {}
_AUTHENTICATORS_LOCK = threading.Lock()


def authenticator_for(config: ExecConfig) -> ExecAuthenticator:
    """The process's one authenticator for `config` (client-go's global cache): every client
    built from the same kubeconfig user shares one plugin run and one cached credential."""
    with _AUTHENTICATORS_LOCK:
        found = _AUTHENTICATORS.get(config)
        if found is None:
            found = _AUTHENTICATORS[config] = ExecAuthenticator(config)
        return found
