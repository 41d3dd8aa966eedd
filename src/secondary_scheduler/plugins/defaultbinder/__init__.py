"""DefaultBinder: binds the pod through the runtime's API client."""

from secondary_scheduler.plugins.defaultbinder.default_binder import DefaultBinder

__all__ = ["DefaultBinder"]
