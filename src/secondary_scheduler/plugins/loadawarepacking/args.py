"""LoadAwarePackingArgs: the metric source (shared with Trimaran) and what the plugin adds.

Defaults are the ones the design argues for in docs/loadaware.md; every knob that would
make a prediction meaningless is refused at load with the field named, not clamped.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secondary_scheduler.config.base import GoDuration, ResourceList
from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs

DEFAULT_COMPARABLE_BY = (
    "instancetype.kubevirt.io/instancetype",
    "vm.kubevirt.io/flavor",
    "kubevirt.io/size",
    "kubevirt.io/cluster-instancetype-name",
    "kubevirt.io/instancetype-name",
)
"""Labels, then annotations, naming a VM's instance type or flavour (KubeVirt's and common
templates'); pods without them are compared by their controller (ReplicaSet, StatefulSet...)."""


class LoadAwarePackingArgs(TrimaranArgs):
    target_utilization: int = Field(70, gt=0, le=100)
    """Percent of a node's CPU, counting its predicted peak, that no node should cross: nodes that
    would cross it come after every node that would not."""
    scoring_strategy: Literal["Adaptive", "Balance", "PackToTarget"] = "Adaptive"
    """Balance: among the nodes that stay under the target, the lowest predicted peak wins (VMs
    with daily waves and unknown levels: packing to the target at placement time left nodes over it
    at every daily peak in replay, docs/loadaware.md). PackToTarget: the highest predicted peak that
    stays under the target wins (fewer nodes in use; for steady loads). Adaptive (the default): a
    pod of a steady class (``steadySpread``) is packed, every other pod balanced: packing is safe
    only where the estimate is known to hold (live bench: balancing steady VMs left the last room
    in holes too small for the largest, and nodes crossed the target)."""
    steady_spread: float = Field(0.1, gt=0, lt=1)
    """A class is steady when its readings (per-group use per request, weighted by requests) have a
    standard deviation of at most this share of their mean, over at least 10 readings: its pods get
    no burst margin and Adaptive packs them. Live bench (identical VMs per flavour): 2-7 %;
    the generated weeks of docs/benchmarks.md (each VM's level its own): never steady."""
    spill_ceiling: float = Field(88.0, gt=0, le=100)
    """Packed pods (PackToTarget, Adaptive's steady classes) that fit under the target on no node:
    a node already over the target takes the pod (the least loaded of them) while its predicted
    peak with it stays at or under this percent, rather than a node the pod would push over; past
    it, the node it crosses least, as before. 88: under the 90 % the live bench counts as
    saturated, with the peak's margin over the load (~1.6 points there), and room for a large VM
    on the nodes that start at 80 %. Set it to the target to never load a node already over it
    (docs/loadaware.md, "Third round")."""
    opening_cost: float = Field(10.0, ge=0, lt=100)
    """Balance: a node without workload pods (DaemonSet and static pods aside) is scored as if this
    many percent points busier, so nodes in use take pods until they are that much busier than an
    empty one, and fewer nodes are opened (replay: -18 nodes of 200 on the first day, and fewer
    node-minutes over target, docs/loadaware.md). 0 opens an empty node whenever it is the least loaded."""
    hard_threshold: int | None = Field(None, gt=0, le=100)
    """Filter: keep pods off nodes whose predicted peak with the pod exceeds this percent.
    Unset (the default, as Koordinator's usageThresholds): the Filter rejects nothing."""
    peak_percentile: float = Field(95.0, ge=50.0, lt=100.0)
    """The percentile of a node's CPU use that is scored: mean + z * stddev of the window, and
    the same percentile of the readings kept over peakWindow."""
    peak_window: GoDuration = Field(900.0, gt=0)
    """How long each node's readings are kept for the percentile (default 15m)."""
    metrics_lag: GoDuration = Field(30.0, ge=0)
    """How long after binding a pod's use starts to show in the source (scrape + rule interval)."""
    comparable_by: list[str] = Field(default_factory=lambda: list(DEFAULT_COMPARABLE_BY))
    """Label or annotation keys whose value names a pod's class (instance type, flavour); pods of
    one class are expected to use alike. The controller owner is tried after them."""
    default_usage_factor: float = Field(1.5, gt=0)
    """CPU use per requested CPU before anything is learned (TargetLoadPacking's default
    multiplier); a pod with a CPU limit is predicted at most its limit."""
    default_requests: ResourceList = Field(default_factory=lambda: {"cpu": "1000m"})
    """The CPU predicted for a pod that requests none (only cpu is read)."""
    learning_rate: float = Field(0.1, gt=0, le=1)
    """How fast a class forgets: at each lesson its pooled sums of use seen and of requests are
    multiplied by (1 - learningRate) before the lesson is added."""
    burst_window: GoDuration = Field(30.0, ge=0)
    """Pods placed this recently get burstMargin on top of their estimate: the queue is placing
    their like right now and nothing about them has been measured."""
    burst_margin: float = Field(0.2, ge=0, le=5)
    inflight_uncertainty: float = Field(2.0, ge=0, le=5)
    """Standard deviations of headroom for what in-flight pods of unsteady classes may use beyond
    their estimate: each adds its unseen share x its class's spread (0.6 before its class has 10
    readings), never past its CPU limit, summed as independent draws (root of the sum of squares).
    A VM's level is its own and unknown until it runs (replay, with the seasonal fit checked
    against its own pods: 2-8 % fewer node-minutes over target on three of four weeks than
    without either, docs/benchmarks.md). 0: none."""
    seasonal: bool = True
    """Remember each node's hourly use by hour of day and of week, and add the rise the next
    seasonalHorizon held in the previous days (weeks)."""
    seasonal_horizon: GoDuration = Field(86400.0, gt=0, le=86400.0)
    """How far ahead the seasonal rise looks: a day (the default) scores each node by its daily peak,
    which a long-lived VM placed at night will meet."""

    @model_validator(mode="before")
    @classmethod
    def _no_parity(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("parityMode") is True:
            raise ValueError(
                "parityMode: true has no meaning for LoadAwarePacking (it has no upstream to match): "
                "remove it, or use TargetLoadPacking for upstream's behaviour"
            )
        return data

    @field_validator("comparable_by")
    @classmethod
    def _keys(cls, value: list[str], info: ValidationInfo) -> list[str]:
        empty = [key for key in value if not key.strip()]
        if empty:
            raise ValueError(
                "comparableBy has an empty key: list label or annotation keys, e.g. kubevirt.io/size"
            )
        return value

    @field_validator("default_requests")
    @classmethod
    def _cpu(cls, value: dict[str, str]) -> dict[str, str]:
        if set(value) - {"cpu"}:
            raise ValueError(
                f"only cpu is read from defaultRequests, got {sorted(value)}: remove the other resources"
            )
        return value

    @model_validator(mode="after")
    def _threshold_above_target(self) -> LoadAwarePackingArgs:
        if self.hard_threshold is not None and self.hard_threshold < self.target_utilization:
            raise ValueError(
                f"hardThreshold {self.hard_threshold} is below targetUtilization {self.target_utilization}: "
                "the Filter would reject nodes the score packs towards; set it at or above the target"
            )
        return self

    @model_validator(mode="after")
    def _ceiling_above_target(self) -> LoadAwarePackingArgs:
        if self.spill_ceiling < self.target_utilization:
            raise ValueError(
                f"spillCeiling {self.spill_ceiling} is below targetUtilization {self.target_utilization}: "
                "it bounds nodes already over the target; set it at or above the target"
            )
        return self

    @property
    def default_cpu_millis(self) -> int:
        return milli_value(self.default_requests.get("cpu", 0))
