"""NodeAffinity: nodeSelector and node affinity, required (Filter) and preferred (Score)."""

from secondary_scheduler.plugins.nodeaffinity.args import NodeAffinityArgs
from secondary_scheduler.plugins.nodeaffinity.node_affinity import NodeAffinity

__all__ = ["NodeAffinity", "NodeAffinityArgs"]
