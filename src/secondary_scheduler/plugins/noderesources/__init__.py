"""NodeResourcesFit and NodeResourcesBalancedAllocation: requests against allocatable."""

from secondary_scheduler.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from secondary_scheduler.plugins.noderesources.balanced_allocation import BalancedAllocation
from secondary_scheduler.plugins.noderesources.fit import Fit

__all__ = ["BalancedAllocation", "Fit", "NodeResourcesBalancedAllocationArgs", "NodeResourcesFitArgs"]
