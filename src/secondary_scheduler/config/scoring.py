"""Pieces of scoring-function args that several plugins (and v1beta1's legacy plugins) share:
a weighted resource and the points of a utilisation -> score shape.
"""

from __future__ import annotations

import itertools
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator

from secondary_scheduler.config.base import ConfigModel


class ResourceSpec(ConfigModel):
    """A resource and its weight in a score; weight 0 (or unset) means 1."""

    name: str = Field(min_length=1)
    weight: int = Field(1, ge=0, le=100)

    @field_validator("weight")
    @classmethod
    def _zero_means_one(cls, value: int) -> int:
        return value or 1


class UtilizationShapePoint(ConfigModel):
    utilization: int = Field(ge=0, le=100)
    score: int = Field(ge=0, le=10)


def check_shape(points: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
    """The scoring function's points must have strictly increasing utilization."""
    for before, after in itertools.pairwise(points):
        if after.utilization <= before.utilization:
            raise ValueError(
                f"utilization must increase from point to point "
                f"({before.utilization} then {after.utilization})"
            )
    return points


Shape = Annotated[list[UtilizationShapePoint], AfterValidator(check_shape)]
"""A scoring function's points, utilization strictly increasing."""
