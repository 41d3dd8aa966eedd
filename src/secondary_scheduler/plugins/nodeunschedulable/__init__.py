"""NodeUnschedulable: cordoned nodes take only pods that tolerate being cordoned."""

from secondary_scheduler.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
