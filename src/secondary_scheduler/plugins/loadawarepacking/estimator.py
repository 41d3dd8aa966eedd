"""How much CPU a pod will use: learned from what comparable pods use, not taken from its requests.

VM launcher pods request a tenth of their vCPUs (KubeVirt's CPU allocation ratio) and use
far more, so any request-based guess (TargetLoadPacking's requests x multiplier, Koordinator's
estimatedScalingFactors) is off by a factor the scheduler cannot know in advance. The metric
sources report nodes, not pods, so a class's use is learned from node steps instead: when
all the pods placed on a node since a baseline reading are fully inside the metrics window,
the node's mean rose by what they use (``learn``). Each class keeps an exponential average
of its use per requested CPU; pods of an unseen class take the average over every class,
and before anything is learned their CPU limit (a VM cannot use more than its vCPUs) or
requests x defaultUsageFactor.

A pod's class is the value of the first ``comparableBy`` key found in its labels, then
annotations (instance type, flavour), else its controller owner, except a
VirtualMachineInstance, which owns a single pod and so is no class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from secondary_scheduler.framework.aliases import FloatArray, IntArray
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.loadawarepacking.args import LoadAwarePackingArgs
from secondary_scheduler.plugins.trimaran.resourcestats import pod_limits

NO_CLASS = 0
"""Class id of pods with no comparable peers (they use the average over every class)."""
_SINGLE_POD_OWNERS = frozenset({"VirtualMachineInstance"})
_MIN_RATIO, _MAX_RATIO = 0.01, 100.0
"""Bounds of a learned use per request: a noisy step must not teach an absurd factor."""


@dataclass(frozen=True)
class PodShape:
    """What the estimate needs of a pod, read once per pod."""

    class_id: int
    request_millis: int
    """Effective CPU request, or defaultRequests' cpu for a pod requesting none."""
    limit_millis: float
    """Effective CPU limit; inf when some container has none (the pod is not capped)."""


def class_key(pod: PodInfo, keys: Sequence[str]) -> str | None:
    """The pod's class: ``key=value`` of the first comparable key it carries, else its owner."""
    metadata = pod.obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    for key in keys:
        value = pod.labels.get(key) or annotations.get(key)
        if value:
            return f"{key}={value}"
    for owner in metadata.get("ownerReferences") or ():
        if owner.get("controller") and owner.get("kind") not in _SINGLE_POD_OWNERS:
            return f"{pod.namespace}/{owner.get('kind')}/{owner.get('name')}"
    return None


def cpu_limit(pod: PodInfo) -> float:
    """The pod's CPU limit in millicores, inf unless every regular container sets one."""
    containers = (pod.obj.get("spec") or {}).get("containers") or ()
    limited = all("cpu" in ((c.get("resources") or {}).get("limits") or {}) for c in containers)
    return float(pod_limits(pod.obj).milli_cpu) if containers and limited else math.inf


class UsageEstimator:
    """Per class, the CPU use per requested CPU, learned from node steps; vectorised lookups."""

    def __init__(self, args: LoadAwarePackingArgs) -> None:
        self.args = args
        self._ids: dict[str, int] = {}
        self._names: list[str] = ["(none)"]
        self._ratio: FloatArray = np.full(8, np.nan)
        """Class id -> learned use per request; NaN while unlearned."""
        self._seen_millis: FloatArray = np.zeros(8)
        self._seen_requests: FloatArray = np.zeros(8)
        """Class id -> decayed sums of the use seen and of the requests it was seen for."""
        self._shapes: dict[str, tuple[PodInfo, PodShape]] = {}
        self.observations = 0
        """Lessons learned so far (also the version of the lookups below)."""
        self._global: float | None = None
        self._effective: FloatArray = self._ratio.copy()
        self._effective_version = 0

    def shape(self, pod: PodInfo) -> PodShape:
        """The pod's class and CPU request and limit (cached while the PodInfo is the same object)."""
        cached = self._shapes.get(pod.key)
        if cached is not None and cached[0] is pod:
            return cached[1]
        key = class_key(pod, self.args.comparable_by)
        class_id = NO_CLASS if key is None else self._class_id(key)
        request = int(pod.requests.get("cpu", 0)) or self.args.default_cpu_millis
        shape = PodShape(class_id, request, cpu_limit(pod))
        if len(self._shapes) > 100_000:  # pods come and go; do not grow without bound
            self._shapes.clear()
        self._shapes[pod.key] = (pod, shape)
        return shape

    def forget(self, pod_key: str) -> None:
        self._shapes.pop(pod_key, None)

    @property
    def global_ratio(self) -> float | None:
        """The mean learned use per request over every class; None before any was learned."""
        self._refresh()
        return self._global

    def ratios(self) -> FloatArray:
        """Class id -> use per request to predict with: learned, else the global mean, else NaN."""
        self._refresh()
        return self._effective

    def _refresh(self) -> None:
        """Recompute the lookups after a lesson (once, not per cycle)."""
        if self._effective_version == self.observations and len(self._effective) == len(self._ratio):
            return
        learned = self._ratio[~np.isnan(self._ratio)]
        self._global = float(learned.mean()) if learned.size else None
        fallback = np.nan if self._global is None else self._global
        self._effective = np.where(np.isnan(self._ratio), fallback, self._ratio)
        self._effective_version = self.observations

    def estimate(self, class_ids: IntArray, requests: FloatArray, limits: FloatArray) -> FloatArray:
        """Predicted CPU millicores of pods (arrays aligned), capped at their limits."""
        ratio = self.ratios()[class_ids]
        prior = np.where(np.isinf(limits), requests * self.args.default_usage_factor, limits)
        return np.minimum(np.where(np.isnan(ratio), prior, requests * ratio), limits)

    def estimate_one(self, shape: PodShape) -> float:
        """``estimate`` of one pod, without arrays."""
        ratio = float(self.ratios()[shape.class_id])
        if math.isnan(ratio):
            if math.isinf(shape.limit_millis):
                return shape.request_millis * self.args.default_usage_factor
            return shape.limit_millis
        return min(shape.request_millis * ratio, shape.limit_millis)

    def learned(self, shape: PodShape) -> bool:
        """Whether the pod's own class was learned (the mean of the others does not count)."""
        return not math.isnan(self._ratio[shape.class_id])

    def learn(self, members: Sequence[PodShape], observed_millis: float) -> None:
        """A node rose by ``observed_millis`` once ``members`` were fully measured: share it out.

        The rise is split in proportion to the current estimates (so a group of one class
        teaches that class exactly; a mixed group scales every class by the same factor). A
        class's ratio is pooled: the use seen over the requests it was seen for, both sums
        decayed by (1 - learningRate) at each lesson. One step is noisy (other pods move the
        node too); pooling weighs a lesson by the CPU it is about, so a big group teaches more
        than a small one, where an average of per-lesson ratios swung with every small VM.
        """
        shapes = list(members)
        if not shapes:
            return
        ids = np.array([s.class_id for s in shapes], dtype=np.int64)
        requests = np.array([s.request_millis for s in shapes], dtype=np.float64)
        limits = np.array([s.limit_millis for s in shapes], dtype=np.float64)
        predicted = self.estimate(ids, requests, limits)
        total = float(predicted.sum())
        if total <= 0:
            return
        scale = max(observed_millis, 0.0) / total
        rate = self.args.learning_rate
        for class_id in set(ids.tolist()):
            mine = ids == class_id
            keep = 0.0 if math.isnan(self._ratio[class_id]) else 1.0 - rate
            seen, asked = scale * float(predicted[mine].sum()), float(requests[mine].sum())
            self._seen_millis[class_id] = keep * self._seen_millis[class_id] + seen
            self._seen_requests[class_id] = keep * self._seen_requests[class_id] + asked
            pooled = self._seen_millis[class_id] / self._seen_requests[class_id]
            self._ratio[class_id] = min(max(pooled, _MIN_RATIO), _MAX_RATIO)
        self.observations += 1

    def describe(self, shape: PodShape) -> str:
        """How the pod's estimate was made, for the score note."""
        name = self._names[shape.class_id]
        own = self._ratio[shape.class_id]
        if not math.isnan(own):
            return f"class {name}: {own:.2f} x request (learned)"
        fallback = self.global_ratio
        if fallback is not None:
            return f"class {name} unseen: {fallback:.2f} x request (mean of learned classes)"
        if math.isinf(shape.limit_millis):
            return f"nothing learned yet: {self.args.default_usage_factor:g} x request (defaultUsageFactor)"
        return "nothing learned yet: its CPU limit"

    def _class_id(self, key: str) -> int:
        class_id = self._ids.get(key)
        if class_id is None:
            class_id = self._ids[key] = len(self._names)
            self._names.append(key)
            if class_id >= len(self._ratio):
                extra = len(self._ratio)
                self._ratio = np.concatenate([self._ratio, np.full(extra, np.nan)])
                self._seen_millis = np.concatenate([self._seen_millis, np.zeros(extra)])
                self._seen_requests = np.concatenate([self._seen_requests, np.zeros(extra)])
        return class_id
