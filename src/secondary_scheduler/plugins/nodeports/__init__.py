"""NodePorts: a host port can be taken by one pod per node."""

from secondary_scheduler.plugins.nodeports.node_ports import NodePorts

__all__ = ["NodePorts"]
