"""DynamicResources (DRA): refused loudly until ResourceClaim allocation is implemented."""

from secondary_scheduler.plugins.dynamicresources.dynamic_resources import DynamicResources

__all__ = ["DynamicResources"]
