"""Host ports a pod asks for, and when two uses of a host port collide.

A port bound on 0.0.0.0 (the default) collides with the same protocol and port on any
address; a port bound on a specific address collides with that address and with 0.0.0.0.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ALL_ADDRESSES = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


def pod_host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """hostPorts of the containers and of restartable init containers (sidecars keep theirs open)."""
    containers = [
        container
        for container in spec.get("initContainers") or ()
        if container.get("restartPolicy") == "Always"
    ]
    containers += list(spec.get("containers") or ())
    return tuple(
        HostPort(
            str(port.get("hostIP") or ALL_ADDRESSES),
            str(port.get("protocol") or "TCP"),
            int(port["hostPort"]),
        )
        for container in containers
        for port in container.get("ports") or ()
        if int(port.get("hostPort") or 0) > 0
    )


def conflicts(wanted: Iterable[HostPort], in_use: Collection[HostPort]) -> bool:
    """Whether any wanted port collides with a port already in use on the node."""
    for port in wanted:
        if port.ip == ALL_ADDRESSES:
            if any(used.protocol == port.protocol and used.port == port.port for used in in_use):
                return True
        elif port in in_use or HostPort(ALL_ADDRESSES, port.protocol, port.port) in in_use:
            return True
    return False
