"""VolumeRestrictions: the same disk twice on a node, and ReadWriteOncePod claims in use."""

from secondary_scheduler.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions

__all__ = ["VolumeRestrictions"]
