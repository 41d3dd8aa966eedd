"""DefaultBinder: posts the pod's Binding through the framework handle's API client."""

from secondary_scheduler.plugins.defaultbinder.default_binder import DefaultBinder

__all__ = ["DefaultBinder"]
