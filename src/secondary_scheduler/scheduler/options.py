"""kube-scheduler's command-line flags, and how they combine with the config file.

The operator's Deployment (ours and OpenShift's) runs the scheduler with kube-scheduler's
flags, so we accept the same ones. A flag given explicitly overrides the matching config
field, as in kube-scheduler; every accepted flag either takes effect or is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
    # Accepted for compatibility; reported at start-up (see `notes`).
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    authorization_always_allow_paths: list[str] = field(default_factory=list)
    feature_gates: str | None = None

    def notes(self) -> list[str]:
        """What we accepted but handle differently from kube-scheduler, said once at start-up."""
        notes = []
        if self.authentication_kubeconfig or self.authorization_kubeconfig:
            notes.append(
                "--authentication-kubeconfig/--authorization-kubeconfig: delegated authn/authz is not used; "
                "/healthz, /readyz, /livez and /metrics are served to anyone who can reach the port"
            )
        if self.feature_gates:
            notes.append(f"--feature-gates={self.feature_gates}: no feature gates apply to this scheduler")
        if self.leader_election.resource_lock not in (None, "leases"):
            notes.append(
                f"--leader-elect-resource-lock={self.leader_election.resource_lock}: only 'leases' exists "
                "since Kubernetes 1.24; using leases"
            )
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
