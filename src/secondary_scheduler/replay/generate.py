"""A VM fleet's week, generated: KubeVirt-sized VMs arriving in deploys, each with its own daily rhythm.

What a load-aware scheduler is judged on is there by construction, each part a stated, settable
statistic (FleetOptions): VM sizes drawn from KubeVirt instance types; deploys that create many VMs
at once; heavy-tailed lifetimes (many short, some living the whole trace); usage with a daily
peak shared by the VMs of one deploy, quieter weekends, and noise; and use above requests, which is
what KubeVirt's CPU allocation ratio makes of every busy VM (replay/kubevirt.py).

The fleet's VMs (10,000 is a few hundred kilobytes of arrays) are drawn up front; the usage samples
(~20 million for 10,000 VMs over a week at 5 minutes) are made interval by interval as the records
are consumed, never held. Every draw comes from one numpy Generator seeded with ``seed``, in a
fixed order: a seed reproduces the trace exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from secondary_scheduler.replay.kubevirt import (
    INSTANCE_TYPES,
    KUBEVIRT_CPU_ALLOCATION_RATIO,
    LAUNCHER_PROCESSES_OVERHEAD,
    launcher_resources,
)
from secondary_scheduler.replay.trace import (
    PodArrival,
    ReplayRecord,
    TraceHeader,
    TraceRecord,
    UsageBatch,
)

DAY = 86400.0
HOUR = 3600.0
DEFAULT_INSTANCE_TYPES = {
    "u1.small": 0.15,
    "u1.medium": 0.25,
    "u1.large": 0.25,
    "u1.xlarge": 0.12,
    "u1.2xlarge": 0.05,
    "cx1.large": 0.04,
    "cx1.xlarge": 0.03,
    "m1.large": 0.07,
    "m1.xlarge": 0.04,
}


class FleetOptions(BaseModel):
    """The statistics of a generated fleet; every default is stated in docs/replay-inputs.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vms: int = Field(
        default=1000, ge=1, description="VMs created over the trace, those running at t=0 included."
    )
    days: float = Field(default=7.0, gt=0, description="Length of the trace; day 0 is a Monday, 00:00.")
    seed: int = Field(default=0, description="Seeds numpy's Generator: the same seed, the same trace.")
    sample_interval: float = Field(
        default=300.0, ge=1, description="Seconds between a VM's usage samples (the Azure trace's 5 minutes)."
    )
    namespace: str = Field(default="default", description="The namespace of every VM's pod.")
    instance_types: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_INSTANCE_TYPES),
        description="KubeVirt instance type -> relative weight; one type per deploy.",
    )
    cpu_allocation_ratio: float = Field(
        default=KUBEVIRT_CPU_ALLOCATION_RATIO,
        gt=0,
        description="KubeVirt's cpuAllocationRatio: a VM without dedicated CPUs requests vCPUs / ratio "
        "cores (1 makes requests equal vCPUs). cx1 types are Guaranteed whatever it is.",
    )
    initial_fraction: float = Field(
        default=0.5, ge=0, le=1, description="Share of the VMs already running at t=0 (arrive at t=0)."
    )
    mean_deploy_size: float = Field(
        default=8.0, ge=1, description="Mean VMs per deploy (geometric: most deploys small, a few large)."
    )
    deploy_spread: float = Field(
        default=60.0, ge=0, description="Seconds over which a deploy's VMs are created (uniformly)."
    )
    long_lived_fraction: float = Field(
        default=0.3, ge=0, le=1, description="Share of deploys whose VMs live past the trace's end."
    )
    lifetime_median: float = Field(
        default=4 * HOUR, gt=0, description="Median lifetime, seconds, of the other deploys (log-normal)."
    )
    lifetime_sigma: float = Field(
        default=1.5, ge=0, description="Log-normal sigma of those lifetimes (heavy tail)."
    )
    mean_cpu_utilization: float = Field(
        default=0.3,
        gt=0,
        lt=1,
        description="Mean over the trace of a VM's CPU use as a share of its vCPUs (before the cap at "
        "100 %); per VM a Beta draw of this mean.",
    )
    cpu_utilization_concentration: float = Field(
        default=2.0,
        gt=0,
        description="Beta concentration (a + b) of the per-VM levels: lower is more spread.",
    )
    diurnal_amplitude: float = Field(
        default=0.5, ge=0, le=1, description="Daily swing: use is level x (1 + A cos(time from the peak))."
    )
    peak_hour: float = Field(default=14.0, ge=0, lt=24, description="Mean hour of the daily peak.")
    peak_spread_hours: float = Field(
        default=3.0,
        ge=0,
        description="Standard deviation of a deploy's peak hour (all its VMs peak together).",
    )
    weekend_factor: float = Field(
        default=0.6, ge=0, description="Use on days 5 and 6 (Saturday, Sunday) x this."
    )
    cpu_noise: float = Field(
        default=0.2, ge=0, description="Sigma of the mean-one log-normal noise on each CPU sample."
    )
    memory_utilization: float = Field(
        default=0.7,
        gt=0,
        le=1,
        description="Mean share of a VM's guest memory in its working set (per VM Beta).",
    )
    memory_noise: float = Field(default=0.02, ge=0, description="Relative noise of each memory sample.")

    @field_validator("instance_types")
    @classmethod
    def _known_types(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError("give at least one instance type, e.g. {'u1.medium': 1}")
        for name, weight in value.items():
            if name not in INSTANCE_TYPES:
                raise ValueError(f"{name!r} is not a known instance type: one of {', '.join(INSTANCE_TYPES)}")
            if not weight > 0 or math.isinf(weight):
                raise ValueError(f"the weight of {name!r} is {weight}: give a finite number > 0")
        return value

    @model_validator(mode="after")
    def _interval_fits(self) -> FleetOptions:
        if self.sample_interval > self.days * DAY:
            raise ValueError(
                f"sample_interval={self.sample_interval:g}s is longer than the trace ({self.days:g} days)"
            )
        return self

    @property
    def duration(self) -> float:
        return self.days * DAY


@dataclass(frozen=True)
class Fleet:
    """The VMs, drawn up front, as arrays indexed by VM (in arrival order)."""

    arrival: np.ndarray
    end: np.ndarray
    """Deletion time; inf: past the trace's end."""
    deploy: np.ndarray
    instance_type: list[str]
    vcpus: np.ndarray
    guest_memory: np.ndarray
    cpu_level: np.ndarray
    memory_level: np.ndarray
    peak: np.ndarray
    """Hour of the daily peak (the deploy's)."""
    requests: list[dict[str, str]]
    limits: list[dict[str, str]]


def draw_fleet(options: FleetOptions, rng: np.random.Generator) -> Fleet:
    """The VMs: deploys (size, type, time, lifetime, peak) first, then each VM's own levels."""
    sizes: list[int] = []
    total = 0
    while total < options.vms:
        sizes.append(int(rng.geometric(1.0 / options.mean_deploy_size)))
        total += sizes[-1]
    sizes[-1] -= total - options.vms
    deploys = len(sizes)
    names = list(options.instance_types)
    weights = np.array([options.instance_types[name] for name in names], dtype=float)
    deploy_type = rng.choice(len(names), size=deploys, p=weights / weights.sum())
    initial = np.cumsum(sizes) - np.array(sizes) < options.initial_fraction * options.vms
    deploy_time = np.where(initial, 0.0, rng.uniform(0.0, options.duration, size=deploys))
    long_lived = rng.random(deploys) < options.long_lived_fraction
    lifetime = np.where(
        long_lived,
        math.inf,
        options.lifetime_median * np.exp(options.lifetime_sigma * rng.standard_normal(deploys)),
    )
    peak = np.mod(options.peak_hour + options.peak_spread_hours * rng.standard_normal(deploys), 24.0)

    deploy = np.repeat(np.arange(deploys), sizes)
    offset = np.where(initial[deploy], 0.0, rng.uniform(0.0, options.deploy_spread, size=options.vms))
    arrival = np.round(deploy_time[deploy] + offset, 3)
    end = np.round(arrival + lifetime[deploy], 3)
    end[end >= options.duration] = math.inf
    keep = arrival < options.duration
    order = np.argsort(arrival[keep], kind="stable")
    index = np.flatnonzero(keep)[order]

    mean, concentration = options.mean_cpu_utilization, options.cpu_utilization_concentration
    cpu_level = rng.beta(mean * concentration, (1 - mean) * concentration, size=options.vms)
    memory_mean = min(options.memory_utilization, 0.999)
    memory_level = rng.beta(memory_mean * 10.0, (1 - memory_mean) * 10.0, size=options.vms)

    types = [INSTANCE_TYPES[names[deploy_type[deploy[i]]]] for i in index]
    resources_of = {
        name: launcher_resources(
            kind.vcpus,
            kind.memory,
            dedicated=kind.dedicated,
            cpu_allocation_ratio=options.cpu_allocation_ratio,
        )
        for name, kind in INSTANCE_TYPES.items()
        if name in options.instance_types
    }
    sized = [resources_of[kind.name] for kind in types]
    return Fleet(
        arrival=arrival[index],
        end=end[index],
        deploy=deploy[index],
        instance_type=[kind.name for kind in types],
        vcpus=np.array([kind.vcpus for kind in types], dtype=float),
        guest_memory=np.array([kind.memory for kind in types], dtype=float),
        cpu_level=cpu_level[index],
        memory_level=memory_level[index],
        peak=peak[deploy[index]],
        requests=[requests for requests, _ in sized],
        limits=[limits for _, limits in sized],
    )


def week_shape(t: float | np.ndarray, peak: np.ndarray, options: FleetOptions) -> np.ndarray:
    """Each VM's use at ``t`` relative to its level: the daily wave around its peak hour times the
    weekend factor, normalised so that its mean over whole weeks is 1."""
    hours = np.asarray(t) / HOUR
    daily = 1.0 + options.diurnal_amplitude * np.cos(2 * math.pi * (hours - peak) / 24.0)
    weekday = np.floor(np.asarray(t) / DAY) % 7
    weekly = np.where(weekday >= 5, options.weekend_factor, 1.0)
    return np.asarray(daily * weekly / ((5 + 2 * options.weekend_factor) / 7))


class FleetTrace:
    """A generated fleet as a Trace: ``records()`` draws it again from the seed on every call."""

    def __init__(self, options: FleetOptions) -> None:
        self.options = options
        self.header = TraceHeader(
            start=0.0,
            source="generated",
            description=(
                f"{options.vms} VMs over {options.days:g} days, {options.sample_interval:g}s samples "
                f"(secsched trace generate; options: {options.model_dump_json(exclude={'seed'})})"
            ),
            seed=options.seed,
        )

    def records(self) -> Iterator[TraceRecord]:
        return generate_records(self.options)

    def stream(self) -> Iterator[ReplayRecord]:
        return generate_stream(self.options)


def generate_records(options: FleetOptions) -> Iterator[TraceRecord]:
    """The fleet's records in time order: at each sample time, the usage of every VM alive then;
    between two, the arrivals, each followed by its first sample (at its arrival)."""
    for record in generate_stream(options):
        if type(record) is UsageBatch:
            yield from record.samples()
        else:
            assert type(record) is PodArrival
            yield record


def generate_stream(options: FleetOptions) -> Iterator[PodArrival | UsageBatch]:
    """``generate_records`` with each instant's samples as one UsageBatch (drawn as one array)."""
    rng = np.random.default_rng(options.seed)
    fleet = draw_fleet(options, rng)
    names = [f"vm-{i:05d}" for i in range(len(fleet.arrival))]
    namespace = options.namespace
    keys = np.array([f"{namespace}/{name}" for name in names], dtype=object)
    interval, duration = options.sample_interval, options.duration
    next_arrival = 0
    step = 0
    while True:
        now = step * interval
        if now >= duration:
            break
        while next_arrival < len(names) and fleet.arrival[next_arrival] <= now:
            yield _arrival(fleet, next_arrival, names[next_arrival], namespace, options)
            next_arrival += 1
        alive = np.flatnonzero((fleet.arrival <= now) & (fleet.end > now))
        if len(alive):
            yield _usage(fleet, alive, now, keys, options, rng)
        upto = min(now + interval, duration)
        while next_arrival < len(names) and fleet.arrival[next_arrival] < upto:
            i = next_arrival
            t = float(fleet.arrival[i])
            yield _arrival(fleet, i, names[i], namespace, options)
            yield _usage(fleet, np.array([i]), t, keys, options, rng)
            next_arrival += 1
        step += 1


def _arrival(fleet: Fleet, i: int, name: str, namespace: str, options: FleetOptions) -> PodArrival:
    end = float(fleet.end[i])
    pool = f"pool-{int(fleet.deploy[i]):04d}"
    return PodArrival(
        t=float(fleet.arrival[i]),
        namespace=namespace,
        name=name,
        end=None if math.isinf(end) else end,
        requests=fleet.requests[i],
        limits=fleet.limits[i],
        labels={"app": pool},
        owner=f"vmpool/{pool}",
        instance_type=fleet.instance_type[i],
    )


def _usage(
    fleet: Fleet,
    alive: np.ndarray,
    t: float,
    keys: np.ndarray,
    options: FleetOptions,
    rng: np.random.Generator,
) -> UsageBatch:
    """The usage of the VMs ``alive`` at ``t`` (cores to 4 decimals, whole bytes)."""
    sigma = options.cpu_noise
    noise = np.exp(sigma * rng.standard_normal(len(alive)) - sigma * sigma / 2)
    vcpus = fleet.vcpus[alive]
    cpu = np.minimum(
        vcpus * fleet.cpu_level[alive] * week_shape(t, fleet.peak[alive], options) * noise, vcpus
    )
    guest = fleet.guest_memory[alive]
    jitter = 1.0 + options.memory_noise * rng.standard_normal(len(alive))
    memory = np.clip(guest * fleet.memory_level[alive] * jitter, 0.0, guest) + LAUNCHER_PROCESSES_OVERHEAD
    return UsageBatch(float(t), keys[alive].tolist(), np.round(cpu, 4), np.rint(memory))
