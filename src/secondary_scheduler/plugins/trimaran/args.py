"""What the three Trimaran plugins' args share: the metrics source and how stale metrics are handled.

Each plugin's own model (``<plugin>/args.py``) extends ``TrimaranArgs``. They follow upstream
scheduler-plugins' v1 args (see shared/spec/trimaran.md, "Arguments and defaults") plus our
extensions: token sources other than an inline token, a CA file, a metrics staleness limit,
falling back to requests, and a strict parity mode.

Upstream silently replaces out-of-range values with defaults; we apply the same rules and
warn, so nobody is surprised by a target of 40 they did not write.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secondary_scheduler.config.base import ConfigModel, GoDuration, warn
from secondary_scheduler.config.placeholders import find_placeholders

KUBERNETES_METRICS_SERVER = "KubernetesMetricsServer"
PROMETHEUS = "Prometheus"
SIGNALFX = "SignalFx"
MetricProviderType = Literal["KubernetesMetricsServer", "Prometheus", "SignalFx"]
_NEEDS_ADDRESS = (PROMETHEUS, SIGNALFX)


def check_url(value: str, what: str) -> str:
    """An http(s) URL with a host: what load-watcher's clients (and ours) can connect to.

    Upstream passes a scheme-less address through and fails on the first fetch, with every node
    scoring 0 meanwhile; here the config says so before the scheduler starts.
    """
    if any(True for _ in find_placeholders(value)):
        return value  # reported as an unfilled placeholder, which says more
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as error:
        raise ValueError(f"{what} {value!r} is not a URL ({error})") from error
    if parts.scheme not in ("http", "https") or not parts.hostname:
        guess = f"https://{value}" if "://" not in value else "https://HOST:PORT"
        raise ValueError(
            f"{what} {value!r} is not an http(s) URL with a host: write the scheme, e.g. {guess}"
        )
    return value


class SecretKeyRef(ConfigModel):
    """A key of a Secret holding the provider's bearer token."""

    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    key: str = Field(min_length=1)


class MetricProvider(ConfigModel):
    """Where node utilisation comes from. At most one of token, tokenFile, tokenSecretRef."""

    type: MetricProviderType = "KubernetesMetricsServer"
    address: str = ""
    token: str = ""
    insecure_skip_verify: bool = False
    token_file: str = ""
    token_secret_ref: SecretKeyRef | None = None
    ca_file: str = ""

    @model_validator(mode="after")
    def _one_token_source(self) -> MetricProvider:
        given = [
            name
            for name, value in (
                ("token", self.token),
                ("tokenFile", self.token_file),
                ("tokenSecretRef", self.token_secret_ref),
            )
            if value
        ]
        if len(given) > 1:
            raise ValueError(f"set only one of {', '.join(given)}: they are alternative token sources")
        if self.address:
            check_url(self.address, "metricProvider.address")
        return self


class TrimaranArgs(ConfigModel):
    """What the three plugins share: the metrics source and how stale metrics are handled."""

    metric_provider: MetricProvider = Field(default_factory=MetricProvider)
    watcher_address: str | None = None
    """A load-watcher service to read metrics from; None (unset) means the provider, as upstream."""
    metrics_staleness_limit: GoDuration = Field(300.0, gt=0)
    fallback_to_requests: bool = True
    parity_mode: bool = False

    @model_validator(mode="before")
    @classmethod
    def _provider_defaults(cls, data: Any, info: ValidationInfo) -> Any:
        """Empty type means the metrics server; Prometheus skips TLS verification unless told not to."""
        if not isinstance(data, dict) or not isinstance(data.get("metricProvider", {}), dict | None):
            return data
        provider = {k: v for k, v in (data.get("metricProvider") or {}).items() if v is not None}
        if provider.get("type") == "":
            del provider["type"]
        if provider.get("type") == "Prometheus" and "insecureSkipVerify" not in provider:
            provider["insecureSkipVerify"] = True
            # Only worth saying where there is TLS to skip: a plain-http address has none.
            if str(provider.get("address", "")).startswith("https:"):
                warn(
                    info,
                    ("metricProvider", "insecureSkipVerify"),
                    "unset, so it defaults to true for Prometheus (as upstream): the server's TLS "
                    "certificate is not verified. Set insecureSkipVerify: false (with caFile for a "
                    "private CA) to verify it",
                )
        return {**data, "metricProvider": provider}

    @field_validator("watcher_address")
    @classmethod
    def _watcher_url(cls, value: str | None) -> str | None:
        return check_url(value, "watcherAddress") if value else value

    @property
    def uses_watcher(self) -> bool:
        """Metrics come from a load-watcher service (as upstream, an empty watcherAddress means not)."""
        return bool(self.watcher_address)

    @model_validator(mode="after")
    def _provider_usable(self, info: ValidationInfo) -> TrimaranArgs:
        provider = self.metric_provider
        if not self.uses_watcher and provider.type == SIGNALFX:
            raise ValueError(
                "metricProvider.type SignalFx is not supported by this scheduler: use type Prometheus "
                "(with address), type KubernetesMetricsServer, or set watcherAddress to a load-watcher "
                "service that reads SignalFx"
            )
        if not self.uses_watcher and provider.type in _NEEDS_ADDRESS and not provider.address:
            raise ValueError(
                f"metricProvider.address is required for {provider.type} "
                "(or set watcherAddress to use a load-watcher)"
            )

        if provider.token:
            warn(
                info,
                ("metricProvider", "token"),
                "the token is stored in plain text in this file (and its ConfigMap): "
                "prefer tokenFile or tokenSecretRef",
            )
        return self
