"""Building blocks shared by every model of the configuration file.

`ConfigModel` decodes the way kube-scheduler does: camelCase field names, unknown fields
rejected, no type coercion (a quoted "70" is not an int), and `key:` with no value meaning
"unset" (Go's JSON decoder leaves the default in place for null).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel

from secondary_scheduler.config.errors import YamlPath
from secondary_scheduler.config.versions import ApiVersion
from secondary_scheduler.kube.quantity import parse_quantity


class ConfigModel(BaseModel):
    """A strictly decoded part of the configuration file (also used in the effective config)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        serialize_by_alias=True,
        allow_inf_nan=False,
    )

    @model_validator(mode="before")
    @classmethod
    def _null_means_unset(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = {info.alias or name for name, info in cls.model_fields.items()}
        return {key: value for key, value in data.items() if value is not None or key not in known}


@dataclass
class ArgsContext:
    """Passed as pydantic's validation context: the file's version, and warnings to report.

    Defaulting rules silently replace some values upstream (a negative margin becomes 1);
    we apply the same rules but say so, through `warn`.
    """

    api_version: ApiVersion = ApiVersion.V1
    warnings: list[tuple[YamlPath, str]] = field(default_factory=list)


def warn(info: ValidationInfo, path: YamlPath, message: str) -> None:
    """Record a warning at `path` (relative to the model being validated), if anyone listens."""
    if isinstance(info.context, ArgsContext):
        info.context.warnings.append((path, message))


def api_version(info: ValidationInfo) -> ApiVersion:
    return info.context.api_version if isinstance(info.context, ArgsContext) else ApiVersion.V1


_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_NANOS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string ("1m30s", "500ms", "-1.5h"), as Go's ParseDuration reads it."""
    body = text[1:] if text[:1] in "+-" else text
    sign = -1 if text.startswith("-") else 1
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"{text!r} is not a duration")
    nanos = Decimal(0)
    position = 0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            raise ValueError(f"{text!r} is not a Go duration (examples: '15s', '1m30s', '500ms', '2h')")
        nanos += Decimal(match.group(1)) * _NANOS[match.group(2)]
        position = match.end()
    return sign * float(int(nanos) / Decimal(10**9))


def format_go_duration(seconds: float) -> str:
    """The string Go prints for a duration ("1m30s", "500ms", "1h0m0s"), so dumps read back."""
    nanos = int((Decimal(repr(seconds)) * 10**9).to_integral_value())
    if nanos == 0:
        return "0s"
    sign, nanos = ("-" if nanos < 0 else ""), abs(nanos)
    if nanos < 10**3:
        return f"{sign}{nanos}ns"
    if nanos < 10**6:
        return f"{sign}{_plain(Decimal(nanos) / 10**3)}µs"
    if nanos < 10**9:
        return f"{sign}{_plain(Decimal(nanos) / 10**6)}ms"
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    secs = _plain(Decimal(rest) / 10**9)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def _plain(number: Decimal) -> str:
    return format(number.normalize(), "f")


def _duration_field(value: object) -> object:
    if isinstance(value, str):
        return parse_go_duration(value)
    raise ValueError(f"expected a duration string such as '15s' or '1m30s', got {value!r}")


def _quantity_field(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a quantity such as '500m', '2' or '1Gi', got {value!r}")
    parse_quantity(value)
    return value if isinstance(value, str) else str(value)


GoDuration = Annotated[
    float, BeforeValidator(_duration_field), PlainSerializer(format_go_duration, when_used="json")
]
"""Seconds; written in YAML as a Go duration string."""

Quantity = Annotated[str, BeforeValidator(_quantity_field)]
"""A Kubernetes quantity, kept as written ("2000m"); parse with secondary_scheduler.kube.quantity."""

ResourceList = dict[str, Quantity]
"""Resource name -> quantity, like a container's requests."""

ResourceWeights = dict[str, float]
"""Resource name -> weight."""
