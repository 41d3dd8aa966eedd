"""VolumeBindingArgs (kubescheduler.config.k8s.io/v1), with kube-scheduler 1.34's defaults and rules."""

from __future__ import annotations

from pydantic import Field, field_validator

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.scoring import UtilizationShapePoint


class VolumeBindingArgs(ConfigModel):
    """How long PreBind waits for the volumes to bind; ``shape`` belongs to a feature that is off.

    ``shape`` scores nodes by how full their storage would be (StorageCapacityScoring).
    That feature gate is alpha and off in kube-scheduler 1.34, so upstream refuses the field
    rather than let it take effect unnoticed when the feature turns on; so do we.
    """

    bind_timeout_seconds: int = Field(600, ge=0)
    shape: list[UtilizationShapePoint] | None = None

    @field_validator("shape")
    @classmethod
    def _feature_off(cls, value: list[UtilizationShapePoint] | None) -> list[UtilizationShapePoint] | None:
        if value is not None:
            raise ValueError(
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
            )
        return value
