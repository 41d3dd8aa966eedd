"""kube-scheduler's command-line flags, and how they combine with the config file.

The operator's Deployment (ours and OpenShift's) runs the scheduler with kube-scheduler's
flags, so we accept the same ones. A flag given explicitly overrides the matching config
field, as in kube-scheduler; every accepted flag either takes effect or is reported.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace

from secondary_scheduler.scheduler.delegatedauth import DelegatedAuthOptions

GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float:
    """'137s', '1m30s', '500ms' -> seconds, as Go's time.ParseDuration reads them."""
    value = text.strip()
    if value in ("0", ""):
        return 0.0
    position, total = 0, 0.0
    for match in GO_DURATION.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(value):
        raise ValueError(f"{text!r} is not a duration (examples: 15s, 1m30s, 500ms)")
    return total


FLOAT32_MAX = 3.4028234663852886e38
INT32_MAX = 2**31 - 1

TLS_CIPHER_SUITES = frozenset(
    {
        # Go's tls.CipherSuites() (what component-base's --tls-cipher-suites accepts as secure)...
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",  # legacy names component-base keeps
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        # ... and tls.InsecureCipherSuites(), which it accepts too.
        "TLS_RSA_WITH_RC4_128_SHA",
        "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
        "TLS_RSA_WITH_AES_128_CBC_SHA",
        "TLS_RSA_WITH_AES_256_CBC_SHA",
        "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
        "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    }
)
LOGGING_FORMATS = ("text", "json")

UNSUPPORTED_FLAGS: dict[str, str] = {
    "--tls-sni-cert-key": "one serving certificate only: use --tls-cert-file and --tls-private-key-file",
    "--http2-max-streams-per-connection": "the endpoints are served over HTTP/1.1 only",
    "--contention-profiling": "Go's block profile has no Python counterpart (--profiling serves the others)",
    "--pod-max-in-unschedulable-pods-duration": "unschedulable pods are retried after 5 minutes at most",
    "--emulated-version": "it emulates no other Kubernetes version",
    "--allow-metric-labels": "metric label allow-lists are not implemented",
    "--allow-metric-labels-manifest": "metric label allow-lists are not implemented",
    "--disabled-metrics": "metrics cannot be disabled one by one",
    "--show-hidden-metrics-for-version": "no metrics are hidden",
    "--log-text-info-buffer-size": "log lines are written unbuffered",
    "--log-json-info-buffer-size": "log lines are written unbuffered",
    "--vmodule": "per-file verbosity is not implemented: use -v",
}
"""kube-scheduler 1.34's flags this scheduler refuses, and why (docs/scheduler.md's flag table has all)."""


def unsupported_flag_message(flag: str) -> str:
    return (
        f"{flag} is a kube-scheduler flag this scheduler does not support ({UNSUPPORTED_FLAGS[flag]}): "
        'remove it (the "kube-scheduler flags" table of docs/scheduler.md lists every flag)'
    )


def check_bind_address(value: str) -> str:
    """An IP address, as pflag's `ip` type requires (no host names)."""
    try:
        ipaddress.ip_address(value)
    except ValueError as error:
        raise ValueError(f"{value!r} is not an IP address (e.g. 0.0.0.0, 127.0.0.1 or ::)") from error
    return value


def check_cipher_suites(names: list[str]) -> list[str]:
    unknown = [name for name in names if name not in TLS_CIPHER_SUITES]
    if unknown:
        raise ValueError(
            f"unknown cipher suite {unknown[0]!r}: use Go's names, e.g. "
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        )
    return names


def check_qps(value: float) -> float:
    if value != value or not 0 <= value <= FLOAT32_MAX:
        raise ValueError(f"{value} must be a number from 0 (the default, 50) up, as client-go's float32 QPS")
    return value


def check_burst(value: int) -> int:
    if not 0 <= value <= INT32_MAX:
        raise ValueError(
            f"{value} must be from 0 (the default, 100) to {INT32_MAX} (component-base: non-negative int32)"
        )
    return value


@dataclass
class LeaderElectionFlags:
    """Only the flags given on the command line (None = not given)."""

    leader_elect: bool | None = None
    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    resource_lock: str | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None


@dataclass
class SchedulerFlags:
    config: str | None = None
    kubeconfig: str | None = None
    master: str | None = None
    secure_port: int = 10259
    bind_address: str = "0.0.0.0"
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    tls_min_version: str | None = None
    tls_cipher_suites: list[str] = field(default_factory=list)
    verbosity: int = 0
    kube_api_qps: float | None = None
    kube_api_burst: int | None = None
    leader_election: LeaderElectionFlags = field(default_factory=LeaderElectionFlags)
    delegated_auth: DelegatedAuthOptions = field(default_factory=DelegatedAuthOptions)
    """--authentication-*, --authorization-* and --requestheader-* (see `auth_options`)."""
    # Accepted for compatibility; reported at start-up (see `notes`).
    feature_gates: str | None = None
    write_config_to: str | None = None
    cert_dir: str | None = None
    client_ca_file: str | None = None
    permit_port_sharing: bool = False
    permit_address_sharing: bool = False
    profiling: bool | None = None
    """--profiling given (None: the config's enableProfiling decides)."""
    logging_format: str = "text"
    log_split_stream: bool = False

    def auth_options(self) -> DelegatedAuthOptions:
        """The delegated authn/authz settings, with --client-ca-file (which TLS serving uses too)."""
        return replace(self.delegated_auth, client_ca_file=self.client_ca_file)

    def notes(self) -> list[str]:
        """What we accepted but handle differently from kube-scheduler, said once at start-up."""
        notes = []
        if self.feature_gates:
            notes.append(f"--feature-gates={self.feature_gates}: no feature gates apply to this scheduler")
        return notes


def normalise_argv(argv: list[str]) -> list[str]:
    """Go's pflag takes `-v=4` and `--v=4`; click needs the long form for the `=` spelling."""
    result = []
    for arg in argv:
        if arg.startswith("-v=") and not arg.startswith("--"):
            result.append("--v=" + arg[3:])
        else:
            result.append(arg)
    return result
