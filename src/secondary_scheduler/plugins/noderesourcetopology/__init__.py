"""NodeResourceTopologyMatch (scheduler-plugins): NUMA-aware Filter and Score."""

from secondary_scheduler.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch

__all__ = ["NodeResourceTopologyMatch"]
