"""NodeVolumeLimits: CSINode volume limits per driver."""

from secondary_scheduler.plugins.nodevolumelimits.csi import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
