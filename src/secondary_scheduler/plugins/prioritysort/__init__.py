"""PrioritySort: the queue order of kube-scheduler."""

from secondary_scheduler.plugins.prioritysort.priority_sort import PrioritySort

__all__ = ["PrioritySort"]
