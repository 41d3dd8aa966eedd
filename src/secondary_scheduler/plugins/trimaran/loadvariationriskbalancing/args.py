"""LoadVariationRiskBalancingArgs: upstream's v1 args, its defaults, and our checks of them."""

from __future__ import annotations

from pydantic import ValidationInfo, field_validator

from secondary_scheduler.config.base import warn
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs


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
