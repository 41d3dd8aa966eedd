"""TargetLoadPackingArgs: upstream's v1 args, its defaults, and our checks of them."""

from __future__ import annotations

import math

from pydantic import Field, ValidationInfo, field_validator

from secondary_scheduler.config.base import ResourceList, warn
from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs


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
