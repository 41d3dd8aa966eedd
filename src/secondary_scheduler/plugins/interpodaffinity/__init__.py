"""InterPodAffinity: place pods near (affinity) or away from (anti-affinity) other pods."""

from secondary_scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs
from secondary_scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity", "InterPodAffinityArgs"]
