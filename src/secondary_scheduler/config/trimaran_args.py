"""Args of the three Trimaran plugins: the one model per plugin that the config loader validates
and the plugins (and their scoring functions) read.

They follow upstream scheduler-plugins' v1 args (see shared/spec/trimaran.md, "Arguments and
defaults") plus our extensions: token sources other than an inline token, a CA file, a
metrics staleness limit, falling back to requests, and a strict parity mode.

Upstream silently replaces out-of-range values with defaults; we apply the same rules and
warn, so nobody is surprised by a target of 40 they did not write.
"""

from __future__ import annotations

import math
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secondary_scheduler.config.base import ConfigModel, GoDuration, ResourceList, ResourceWeights, warn
from secondary_scheduler.config.placeholders import find_placeholders
from secondary_scheduler.kube.quantity import milli_value

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


def parse_multiplier(text: str) -> float:
    """defaultRequestsMultiplier as a number, read like Go's strconv.ParseFloat (no spaces, no ``_``)."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if text != text.strip() or "_" in text or math.isnan(number):
        raise ValueError(f'{text!r} is not a number: write it as a quoted number, e.g. "1.5"')
    if math.isinf(number) or number < 0:
        raise ValueError(f'{text!r} must be a finite number of 0 or more, e.g. "1.5"')
    return number


class TargetLoadPackingArgs(TrimaranArgs):
    target_utilization: int = 40
    default_requests: ResourceList = Field(default_factory=lambda: {"cpu": "1000m"})
    default_requests_multiplier: str = "1.5"

    @field_validator("target_utilization")
    @classmethod
    def _target(cls, value: int, info: ValidationInfo) -> int:
        if value <= 0:
            warn(info, ("targetUtilization",), f"{value} is not a percentage above 0: using the default, 40")
            return 40
        if value > 100:
            # Upstream defaults only values <= 0. Above 100 its formula scores nodes outside 0-100,
            # and the framework then fails every pod this plugin scores.
            raise ValueError(
                f"{value} is not a CPU utilisation target (a percentage): use one from 1 to 100 "
                "(the default is 40; TargetLoadPacking packs nodes up to it, then spreads)"
            )
        return value

    @field_validator("default_requests")
    @classmethod
    def _cpu_only(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        if "cpu" not in value:
            warn(
                info,
                ("defaultRequests",),
                "only cpu is used, and it is missing: containers without requests count as 0",
            )
        return value

    @field_validator("default_requests_multiplier")
    @classmethod
    def _multiplier(cls, value: str) -> str:
        parse_multiplier(value)
        return value

    @property
    def requests_multiplier(self) -> float:
        """The multiplier as a number (the config keeps upstream's string)."""
        return parse_multiplier(self.default_requests_multiplier)

    @property
    def default_cpu_millis(self) -> int:
        """Predicted CPU of a container with neither a cpu limit nor a cpu request (0 if no cpu default)."""
        return milli_value(self.default_requests.get("cpu", 0))


class LoadVariationRiskBalancingArgs(TrimaranArgs):
    safe_variance_margin: float = 1.0
    safe_variance_sensitivity: float = 1.0

    @field_validator("safe_variance_margin", "safe_variance_sensitivity")
    @classmethod
    def _not_negative(cls, value: float, info: ValidationInfo) -> float:
        if value < 0:
            alias = (
                "safeVarianceMargin"
                if info.field_name == "safe_variance_margin"
                else "safeVarianceSensitivity"
            )
            warn(info, (alias,), f"{value} is negative: using the default, 1")
            return 1.0
        return value


_DEFAULT_RISK_LIMIT_WEIGHTS = {"cpu": 0.5, "memory": 0.5}


class LowRiskOverCommitmentArgs(TrimaranArgs):
    smoothing_window_size: int = 5
    risk_limit_weights: ResourceWeights = Field(default_factory=lambda: dict(_DEFAULT_RISK_LIMIT_WEIGHTS))

    @field_validator("smoothing_window_size")
    @classmethod
    def _window(cls, value: int, info: ValidationInfo) -> int:
        if value <= 0:
            warn(info, ("smoothingWindowSize",), f"{value} is not above 0: using the default, 5")
            return 5
        return value

    @field_validator("risk_limit_weights")
    @classmethod
    def _weights(cls, value: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        """The given weights overlay the defaults; a weight outside [0, 1] becomes 0.5."""
        weights = dict(_DEFAULT_RISK_LIMIT_WEIGHTS)
        for resource, weight in value.items():
            if 0 <= weight <= 1:
                weights[resource] = weight
            else:
                warn(info, ("riskLimitWeights", resource), f"{weight} is outside [0, 1]: using 0.5")
                weights[resource] = 0.5
        return weights
