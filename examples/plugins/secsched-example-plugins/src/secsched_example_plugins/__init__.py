"""Example scheduling plugins for secondary-scheduler, written against its public plugin API only.

- ``NodeLabelPreference`` (PreScore, Score): prefers nodes whose value of one label comes
  early in a configured list (``gold`` before ``silver``...), vectorised over the nodes.
- ``AvoidNodeLabel`` (PreFilter, Filter): keeps pods off nodes that carry a label, unless
  the pod opts out with a label of its own.

The scheduler finds them through this package's entry points (group
``secondary_scheduler.plugins``); a profile enables them by name, and their args are
validated by ``secsched config validate`` like the in-tree plugins' args.
"""

from __future__ import annotations

from secsched_example_plugins.avoidlabel import AvoidNodeLabel, AvoidNodeLabelArgs
from secsched_example_plugins.labelpreference import NodeLabelPreference, NodeLabelPreferenceArgs

__all__ = ["AvoidNodeLabel", "AvoidNodeLabelArgs", "NodeLabelPreference", "NodeLabelPreferenceArgs"]
