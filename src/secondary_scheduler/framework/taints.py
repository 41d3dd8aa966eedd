"""Node taints, pod tolerations, and the rule that matches them.

A toleration with an effect only tolerates taints of that effect; with a key, only that
key; operator Exists ignores the value, Equal (the default) requires the same value. An
empty key with Exists tolerates every taint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
"""Effects that keep a pod off a node at scheduling time (PreferNoSchedule only lowers the score)."""

UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Taint:
        return cls(str(raw.get("key", "")), str(raw.get("value", "")), str(raw.get("effect", "")))


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Toleration:
        return cls(
            str(raw.get("key", "")),
            str(raw.get("operator", "")),
            str(raw.get("value", "")),
            str(raw.get("effect", "")),
        )

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


def tolerated(taint: Taint, tolerations: Iterable[Toleration]) -> bool:
    return any(toleration.tolerates(taint) for toleration in tolerations)


def has_untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> bool:
    """Whether some taint with one of ``effects`` is not tolerated."""
    return any(taint.effect in effects and not tolerated(taint, tolerations) for taint in taints)
