"""ImageLocality: prefer nodes that already have the pod's images."""

from secondary_scheduler.plugins.imagelocality.image_locality import ImageLocality

__all__ = ["ImageLocality"]
