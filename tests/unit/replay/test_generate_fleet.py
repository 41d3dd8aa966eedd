"""The VM-fleet generator: a seed reproduces it, and its stated statistics hold (within tolerance)."""

from __future__ import annotations

import itertools
import math
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pydantic
import pytest

from secondary_scheduler.kube.quantity import milli_value
from secondary_scheduler.replay.generate import (
    DAY,
    HOUR,
    FleetOptions,
    FleetTrace,
    draw_fleet,
    generate_records,
    week_shape,
)
from secondary_scheduler.replay.kubevirt import INSTANCE_TYPES
from secondary_scheduler.replay.trace import PodArrival, UsageSample, open_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "replay" / "traces" / "week-small.jsonl.gz"


def test_a_seed_reproduces_the_trace_exactly() -> None:
    options = FleetOptions(vms=150, days=1, seed=7)
    first = list(generate_records(options))
    assert first == list(generate_records(options))
    assert first == list(FleetTrace(options).records())
    assert first != list(generate_records(options.model_copy(update={"seed": 8})))


def test_records_are_in_time_order_and_samples_within_each_vms_life() -> None:
    records = list(generate_records(FleetOptions(vms=200, days=2, seed=1)))
    assert [record.t for record in records] == sorted(record.t for record in records)
    lives: dict[str, tuple[float, float]] = {}
    for record in records:
        if isinstance(record, PodArrival):
            lives[record.name] = (record.t, math.inf if record.end is None else record.end)
        else:
            start, end = lives[record.name]
            assert start <= record.t < end
    first_sample = {}
    for record in records:
        if isinstance(record, UsageSample):
            first_sample.setdefault(record.name, record.t)
    assert all(first_sample[name] == start for name, (start, _) in lives.items() if name in first_sample)
    assert len(lives) == 200


def test_sizes_follow_the_instance_type_weights() -> None:
    weights = {"u1.small": 1.0, "u1.large": 2.0, "cx1.xlarge": 1.0}
    options = FleetOptions(vms=40000, instance_types=weights, mean_deploy_size=4)
    fleet = draw_fleet(options, np.random.default_rng(0))
    first_of_deploy = np.unique(fleet.deploy, return_index=True)[1]
    counts = Counter(fleet.instance_type[i] for i in first_of_deploy)
    for name, weight in weights.items():
        assert counts[name] / len(first_of_deploy) == pytest.approx(weight / 4, abs=0.02)
    by_deploy: dict[int, set[str]] = {}
    for deploy, kind in zip(fleet.deploy.tolist(), fleet.instance_type, strict=True):
        by_deploy.setdefault(deploy, set()).add(kind)
    assert all(len(kinds) == 1 for kinds in by_deploy.values()), "one instance type per deploy"


def test_requests_are_virt_launchers() -> None:
    records = generate_records(
        FleetOptions(vms=400, days=0.1, instance_types={"u1.large": 1, "cx1.large": 1})
    )
    pods = [record for record in records if isinstance(record, PodArrival)]
    u1 = next(pod for pod in pods if pod.instance_type == "u1.large")
    cx1 = next(pod for pod in pods if pod.instance_type == "cx1.large")
    assert u1.requests["cpu"] == "200m" and u1.limits == {}, "2 vCPUs / cpuAllocationRatio 10, no limit"
    assert cx1.requests["cpu"] == "3" and cx1.limits == cx1.requests, "dedicated 2 vCPUs + emulator thread"


def test_deploys_arrive_together_and_the_initial_share_at_t0() -> None:
    options = FleetOptions(vms=5000, mean_deploy_size=10, deploy_spread=120, initial_fraction=0.4)
    fleet = draw_fleet(options, np.random.default_rng(3))
    assert np.mean(fleet.arrival == 0.0) == pytest.approx(0.4, abs=0.02)
    spans = [np.ptp(fleet.arrival[fleet.deploy == deploy]) for deploy in np.unique(fleet.deploy)]
    assert max(spans) <= 120
    sizes = np.bincount(fleet.deploy)
    assert sizes.mean() == pytest.approx(10, rel=0.1)
    assert sizes.max() >= 30, "geometric: a few large deploys"


def test_lifetimes_are_heavy_tailed_with_the_stated_median_and_long_lived_share() -> None:
    options = FleetOptions(
        vms=30000,
        days=60,
        mean_deploy_size=1,
        lifetime_median=HOUR,
        lifetime_sigma=1.2,
        long_lived_fraction=0.25,
    )
    fleet = draw_fleet(options, np.random.default_rng(5))
    finite = fleet.end[np.isfinite(fleet.end)] - fleet.arrival[np.isfinite(fleet.end)]
    assert np.mean(np.isinf(fleet.end)) == pytest.approx(0.25, abs=0.02)
    assert np.median(finite) == pytest.approx(HOUR, rel=0.1)
    assert np.mean(finite < HOUR / 4) > 0.05 and np.mean(finite > 8 * HOUR) > 0.02, "many short, a long tail"


def test_the_week_shape_averages_one_peaks_at_the_peak_hour_and_rests_at_weekends() -> None:
    options = FleetOptions(diurnal_amplitude=0.6, weekend_factor=0.5)
    peak = np.array([14.0])
    times = np.arange(0, 7 * DAY, 60.0)
    shapes = np.array([week_shape(t, peak, options)[0] for t in times])
    assert shapes.mean() == pytest.approx(1.0, rel=1e-3)
    monday = shapes[: int(DAY / 60)]
    assert np.argmax(monday) * 60 / HOUR == pytest.approx(14.0, abs=0.02)
    assert monday.max() / monday.min() == pytest.approx(1.6 / 0.4, rel=1e-3)
    saturday = shapes[int(5 * DAY / 60) : int(6 * DAY / 60)]
    assert saturday.mean() / monday.mean() == pytest.approx(0.5, rel=1e-3)


def test_use_has_the_stated_mean_and_a_deploys_vms_peak_together() -> None:
    options = FleetOptions(
        vms=300,
        days=7,
        seed=2,
        long_lived_fraction=1.0,
        initial_fraction=1.0,
        mean_cpu_utilization=0.25,
        peak_spread_hours=4.0,
    )
    fleet = draw_fleet(options, np.random.default_rng(options.seed))
    vcpus = {f"vm-{i:05d}": fleet.vcpus[i] for i in range(len(fleet.vcpus))}
    samples = [record for record in generate_records(options) if isinstance(record, UsageSample)]
    shares = np.array([sample.cpu / vcpus[sample.name] for sample in samples])
    assert shares.mean() == pytest.approx(0.25, rel=0.15), "the cap at 100 % of the vCPUs trims a little"
    assert shares.max() <= 1.0
    deploy_peaks = {int(fleet.deploy[i]): fleet.peak[i] for i in range(len(fleet.peak))}
    assert all(fleet.peak[i] == deploy_peaks[int(fleet.deploy[i])] for i in range(len(fleet.peak)))
    assert len(set(deploy_peaks.values())) > 1


def test_use_above_requests_follows_the_cpu_allocation_ratio() -> None:
    def above(ratio: float) -> float:
        options = FleetOptions(vms=200, days=1, cpu_allocation_ratio=ratio, instance_types={"u1.large": 1})
        requested: dict[str, float] = {}
        over = total = 0
        for record in generate_records(options):
            if isinstance(record, PodArrival):
                requested[record.name] = milli_value(record.requests["cpu"]) / 1000
            else:
                total += 1
                over += record.cpu > requested[record.name]
        return over / total

    assert above(10.0) > 0.6, "at KubeVirt's default ratio most busy VMs use more than they request"
    assert above(1.0) == 0.0, "a VM never uses more than its vCPUs"


def test_memory_use_is_the_stated_share_of_the_guest() -> None:
    options = FleetOptions(vms=300, days=0.5, memory_utilization=0.5, instance_types={"u1.xlarge": 1})
    guest = INSTANCE_TYPES["u1.xlarge"].memory
    memory = [record.memory for record in generate_records(options) if isinstance(record, UsageSample)]
    assert np.mean(memory) == pytest.approx(0.5 * guest + 220 * 2**20, rel=0.05)
    assert max(memory) <= guest + 220 * 2**20


def test_records_are_made_as_they_are_consumed() -> None:
    records = generate_records(FleetOptions(vms=10000, days=7))
    tracemalloc.start()
    try:
        first = list(itertools.islice(records, 20000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(first) == 20000
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.1f} MiB: the week (~20M records) is not built up front"


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"instance_types": {"u9.huge": 1}}, "instance_types"),
        ({"instance_types": {"u1.small": 0}}, "instance_types"),
        ({"vms": 0}, "vms"),
        ({"diurnal_amplitude": 1.5}, "diurnal_amplitude"),
        ({"burst": 3}, "burst"),
        ({"days": 0.001, "sample_interval": 300}, "sample_interval"),
    ],
)
def test_bad_options_are_refused_naming_the_field(values: dict[str, object], field: str) -> None:
    with pytest.raises(pydantic.ValidationError) as raised:
        FleetOptions(**values)  # type: ignore[arg-type]
    assert field in str(raised.value)


def test_the_example_week_is_the_generators_and_small() -> None:
    assert EXAMPLE.stat().st_size < 2**20
    trace = open_trace(EXAMPLE)
    assert trace.header.seed == 0 and trace.header.source == "generated"
    assert list(trace.records()) == list(generate_records(FleetOptions(vms=100, days=7, seed=0)))


def test_the_cli_writes_the_generators_trace(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from secondary_scheduler.cli.main import cli

    output = tmp_path / "fleet.jsonl.gz"
    argv = ["trace", "generate", "--vms", "40", "--days", "1", "--seed", "3", "--set", "weekend_factor=0.5"]
    result = CliRunner().invoke(cli, [*argv, "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert "40 pods" in result.output
    expected = FleetOptions(vms=40, days=1, seed=3, weekend_factor=0.5)
    assert list(open_trace(output).records()) == list(generate_records(expected))
    refused = CliRunner().invoke(cli, [*argv[:-2], "--set", "weekend=1", "--output", str(output)])
    assert refused.exit_code == 1
    assert "weekend=1: Extra inputs are not permitted" in refused.output
