"""A pod's phase as the API defines it: Succeeded and Failed end a pod's life for good.

A pod in a terminal phase holds no resources on its node and never runs again, so the
scheduler's caches, the nominator and the local cluster's load model all skip it
(upstream's ``podutil.IsPodPhaseTerminal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's ``status.phase`` is terminal."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES
