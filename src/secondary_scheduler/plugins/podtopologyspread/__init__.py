"""PodTopologySpread: spread matching pods evenly over topology domains (zones, nodes...)."""

from secondary_scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs
from secondary_scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "PodTopologySpreadArgs"]
