"""VolumeZone: bound volumes' zone and region labels against the node's."""

from secondary_scheduler.plugins.volumezone.volume_zone import VolumeZone

__all__ = ["VolumeZone"]
