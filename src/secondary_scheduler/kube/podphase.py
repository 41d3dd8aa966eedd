"""A pod's phase as the API defines it, and when it was bound.

A pod in a terminal phase (Succeeded, Failed) holds no resources on its node and never runs
again, so the scheduler's caches, the nominator and the local cluster's load model all skip it
(upstream's ``podutil.IsPodPhaseTerminal``). When a pod was bound is its PodScheduled=True
condition's lastTransitionTime, which the API server's Binding stamps: what Trimaran counts as
recently scheduled, what `snapshot` records, and how the next leader finds the pods whose
Scheduled Event a killed one left unwritten.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's ``status.phase`` is terminal."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def scheduled_at(pod: Mapping[str, Any]) -> float | None:
    """Unix seconds of the pod's PodScheduled=True condition's lastTransitionTime; None when it
    has none, or an unreadable one."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
            stamp = condition.get("lastTransitionTime")
            if not isinstance(stamp, str) or not stamp:
                return None
            try:
                return datetime.datetime.fromisoformat(stamp).timestamp()
            except ValueError:
                return None
    return None
