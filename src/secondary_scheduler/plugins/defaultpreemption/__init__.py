"""DefaultPreemption: when no node fits, evict lower-priority pods where that makes room."""

from secondary_scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs
from secondary_scheduler.plugins.defaultpreemption.plugin import DefaultPreemption

__all__ = ["DefaultPreemption", "DefaultPreemptionArgs"]
