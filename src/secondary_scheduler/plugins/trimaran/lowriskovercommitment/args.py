"""LowRiskOverCommitmentArgs: upstream's v1 args, its defaults, and our checks of them."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from secondary_scheduler.config.base import ResourceWeights, warn
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs

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
