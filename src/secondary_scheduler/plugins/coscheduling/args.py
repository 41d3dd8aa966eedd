"""CoschedulingArgs (scheduler-plugins' ``config/v1``): its fields, defaults and validation."""

from __future__ import annotations

from pydantic import field_validator

from secondary_scheduler.config.base import ConfigModel

INT64_MAX = 2**63 - 1


class CoschedulingArgs(ConfigModel):
    """How long a gang's placed pods wait for the rest, and how a failed gang steps back."""

    permit_waiting_time_seconds: int = 60
    """How long Permit holds a gang's pods when its PodGroup sets no scheduleTimeoutSeconds."""
    pod_group_backoff_seconds: int = 0
    """After a gang fails in PostFilter, refuse it in PreFilter this long (0: no backoff)."""
    pod_group_reject_percentage: int = 10
    """PostFilter rejects the whole gang only when more than this percentage of minMember is unplaced."""

    @field_validator("permit_waiting_time_seconds", "pod_group_backoff_seconds")
    @classmethod
    def _seconds(cls, value: int) -> int:
        # Upstream's message, word for word (0 is allowed although it says "greater than 0").
        if value < 0:
            raise ValueError(f"Invalid value: {value}: must be greater than 0")
        if value > INT64_MAX:
            raise ValueError(f"Invalid value: {value}: must fit in an int64 (seconds)")
        return value

    @field_validator("pod_group_reject_percentage")
    @classmethod
    def _percentage(cls, value: int) -> int:
        if not 0 <= value <= 100:
            raise ValueError(f"Invalid value: {value}: must be between 0 and 100")
        return value
