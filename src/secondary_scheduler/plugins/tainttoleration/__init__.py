"""TaintToleration: taints keep pods off nodes (Filter) or make nodes less attractive (Score)."""

from secondary_scheduler.plugins.tainttoleration.taint_toleration import TaintToleration

__all__ = ["TaintToleration"]
