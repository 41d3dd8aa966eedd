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

from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.plugins.loadawarepacking.args import LoadAwarePackingArgs
from secondary_scheduler.plugins.trimaran.resourcestats import pod_limits

NO_CLASS = 0
"""Class id of pods with no comparable peers (they use the average over every class)."""
_SINGLE_POD_OWNERS = frozenset({"VirtualMachineInstance"})
_MIN_RATIO, _MAX_RATIO = 0.01, 100.0
"""Bounds of a learned use per request: a noisy step must not teach an absurd factor."""
MIN_STEADY_READINGS = 10
"""Readings (settled lessons, or open groups' latest readings) a class needs before its spread
means anything. With 3, a generated week's classes (each VM's level its own) read as steady by
chance in their first lessons (spread 7-9 %) and were packed: seed 1's node-minutes over target
went from 20,531 to 36,046. With 10 (or 20) none is steady on either 200-node week, the 1,000-node
week or the Azure sample; with independent readings whose true spread is 30 %, ten reading under
10 % is a chance of ~2 in 10,000 (three: ~1 in 10). The live bench's classes are read by ~50 open
groups at the first snapshot after a burst."""


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
        self._seen_squares: FloatArray = np.zeros(8)
        self._lessons: FloatArray = np.zeros(8)
        """Class id -> decayed sum of each lesson's requests x its use per request squared (the
        second moment, for the spread), and how many settled lessons it had."""
        self._steady: BoolArray = np.zeros(8, dtype=np.bool_)
        self._spread: FloatArray = np.full(8, np.nan)
        """Class id -> whether its readings agree within ``steadySpread`` (and their spread)."""
        self._drafts: dict[int, tuple[FloatArray, FloatArray]] = {}
        """Open group (by node slot) -> its latest reading, as per-class use seen and requests seen
        for (``draft``): a class without a settled lesson is predicted from these."""
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
        self._ratio, self._spread = self._settled_or_drafted()
        self._steady = self._spread <= self.args.steady_spread
        self._steady[NO_CLASS] = False  # pods without peers are no class: nothing to agree on
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
        self._refresh()
        return not math.isnan(self._ratio[shape.class_id])

    def steady(self, shape: PodShape) -> bool:
        """Whether the pod's class uses alike group after group (``steady_classes``)."""
        self._refresh()
        return bool(self._steady[shape.class_id])

    def spreads(self) -> FloatArray:
        """Class id -> the spread of its readings (``steady_classes``); NaN below
        ``MIN_STEADY_READINGS`` readings."""
        self._refresh()
        return self._spread

    def steady_classes(self) -> BoolArray:
        """Class id -> its readings' spread (standard deviation over mean of the use per request,
        weighted by requests) is at most ``steadySpread`` over at least ``MIN_STEADY_READINGS``.

        Such a class's next pod will use what the estimate says: it can be packed to the target
        and needs no burst margin. A class whose pods use anything from idle to flat out (a VM's
        level is its own) spreads its readings, and only headroom on every node absorbs that.
        """
        self._refresh()
        return self._steady

    def settled(self, shape: PodShape) -> bool:
        """Whether the pod's class has a settled lesson (a group wholly inside the window)."""
        return bool(self._seen_requests[shape.class_id] > 0)

    def draft(self, group: int, members: Sequence[PodShape], observed_millis: float) -> None:
        """An open group's latest reading of what ``members`` use, replacing its previous one.

        A first reading comes while the group's pods have shown for seconds: a noisy share of a
        short window (live bench: the first snapshot's readings were ~10 % high at the median,
        later ones 1-2 %). So no single reading is kept: each group's newest one replaces its
        last, and a class with no settled lesson is predicted from every open group's latest
        reading of it (pooled by requests). A settled lesson (``learn``) supersedes them.
        """
        seen, asked = self._split(members, observed_millis)
        self._drafts[group] = (seen, asked)
        self.observations += 1

    def drop_draft(self, group: int) -> None:
        """The group closed or can no longer be read (a pod left its node): forget its reading."""
        if self._drafts.pop(group, None) is not None:
            self.observations += 1

    def _settled_or_drafted(self) -> tuple[FloatArray, FloatArray]:
        """Per class: the settled pooled ratio, else the open groups' latest readings pooled, else
        NaN; and the spread of those readings (NaN with fewer than ``MIN_STEADY_READINGS``)."""
        size = len(self._seen_requests)
        seen, asked, squares, count = np.zeros(size), np.zeros(size), np.zeros(size), np.zeros(size)
        for drafted_seen, drafted_asked in self._drafts.values():  # insertion order: deterministic sums
            end = len(drafted_asked)
            read = drafted_asked > 0
            seen[:end] += drafted_seen
            asked[:end] += drafted_asked
            squares[:end] += np.where(read, drafted_seen**2 / np.where(read, drafted_asked, 1.0), 0.0)
            count[:end] += read
        settled = self._seen_requests > 0
        seen[settled], asked[settled] = self._seen_millis[settled], self._seen_requests[settled]
        squares[settled], count[settled] = self._seen_squares[settled], self._lessons[settled]
        ratio, spread = np.full(size, np.nan), np.full(size, np.nan)
        known = asked > 0
        ratio[known] = seen[known] / asked[known]
        enough = known & (count >= MIN_STEADY_READINGS) & (ratio > 0)
        variance = squares[enough] / asked[enough] - ratio[enough] ** 2
        spread[enough] = np.sqrt(np.maximum(variance, 0.0)) / ratio[enough]
        return np.clip(ratio, _MIN_RATIO, _MAX_RATIO), spread

    def _split(self, members: Sequence[PodShape], observed_millis: float) -> tuple[FloatArray, FloatArray]:
        """Per class id, the share of ``observed_millis`` each class gets (in proportion to the
        current estimates) and the requests it was seen for."""
        size = len(self._seen_requests)
        seen, asked = np.zeros(size), np.zeros(size)
        shapes = list(members)
        if not shapes:
            return seen, asked
        ids = np.array([s.class_id for s in shapes], dtype=np.int64)
        requests = np.array([s.request_millis for s in shapes], dtype=np.float64)
        limits = np.array([s.limit_millis for s in shapes], dtype=np.float64)
        predicted = self.estimate(ids, requests, limits)
        total = float(predicted.sum())
        if total <= 0:
            return seen, asked
        scale = max(observed_millis, 0.0) / total
        np.add.at(seen, ids, scale * predicted)
        np.add.at(asked, ids, requests)
        return seen, asked

    def learn(self, members: Sequence[PodShape], observed_millis: float) -> None:
        """A node rose by ``observed_millis`` once ``members`` were fully measured: share it out.

        The rise is split in proportion to the current estimates (so a group of one class
        teaches that class exactly; a mixed group scales every class by the same factor). A
        class's ratio is pooled: the use seen over the requests it was seen for, both sums
        decayed by (1 - learningRate) at each lesson. One step is noisy (other pods move the
        node too); pooling weighs a lesson by the CPU it is about, so a big group teaches more
        than a small one, where an average of per-lesson ratios swung with every small VM.
        """
        seen, asked = self._split(members, observed_millis)
        if not asked.any():
            return
        rate = self.args.learning_rate
        for class_id in np.flatnonzero(asked).tolist():
            keep = 1.0 - rate if self._seen_requests[class_id] > 0 else 0.0
            self._seen_millis[class_id] = keep * self._seen_millis[class_id] + seen[class_id]
            self._seen_requests[class_id] = keep * self._seen_requests[class_id] + asked[class_id]
            square = seen[class_id] ** 2 / asked[class_id]
            self._seen_squares[class_id] = keep * self._seen_squares[class_id] + square
            self._lessons[class_id] = self._lessons[class_id] + 1 if keep else 1
        self.observations += 1

    def describe(self, shape: PodShape) -> str:
        """How the pod's estimate was made, for the score note."""
        name = self._names[shape.class_id]
        self._refresh()
        own = self._ratio[shape.class_id]
        if not math.isnan(own):
            how = "learned" if self.settled(shape) else "read from its open groups"
            spread = self._spread[shape.class_id]
            if self._steady[shape.class_id]:
                how += f"; steady, spread {spread:.0%}"
            elif not math.isnan(spread):
                how += f"; spread {spread:.0%}"
            return f"class {name}: {own:.2f} x request ({how})"
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
                self._seen_squares = np.concatenate([self._seen_squares, np.zeros(extra)])
                self._lessons = np.concatenate([self._lessons, np.zeros(extra)])
        return class_id
