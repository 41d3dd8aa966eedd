"""Coscheduling: gang scheduling with PodGroups, as scheduler-plugins v0.34.7 does it."""

from secondary_scheduler.plugins.coscheduling.args import CoschedulingArgs
from secondary_scheduler.plugins.coscheduling.plugin import Coscheduling

__all__ = ["Coscheduling", "CoschedulingArgs"]
