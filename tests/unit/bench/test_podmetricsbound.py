"""The per-pod metrics bound of replay (bench/podmetricsbound.py): what it forecasts from each
running pod's samples so far, and that a replay runs with it as the only Score plugin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bench.hindsight import FutureUse
from bench.podmetricsbound import PastForecasts, PodMetricsArgs
from tests.unit.bench.replaybound import replay_alone
from tests.unit.plugins.loadawarepacking.world import vm

from secondary_scheduler.framework import PodInfo
from secondary_scheduler.replay.trace import PodArrival, TraceHeader, UsageSample, write_trace

REQUESTS = {"cpu": "100m", "memory": "1Gi"}
STEP = 300.0
DAY_STEPS = 4
"""A 'day' of four samples keeps the trace small; the forecasts only see it as a period."""


def forecasts_of(tmp_path: Path) -> tuple[PastForecasts, FutureUse]:
    # a: two days of the same day 1, 2, 3, 4; b: arrives at step 6 and runs at 6 then 8; c: arrives
    # at step 8, of a's class
    records: list[PodArrival | UsageSample] = [PodArrival(0.0, "ns", "a", None, REQUESTS, instance_type="m")]
    for step in range(8):
        if step == 6:
            records.append(PodArrival(step * STEP, "ns", "b", None, REQUESTS, instance_type="l"))
        if step >= 6:
            records.append(UsageSample(step * STEP, "ns", "b", 6.0 + 2 * (step - 6), 0.0))
        records.append(UsageSample(step * STEP, "ns", "a", float(step % DAY_STEPS + 1), 0.0))
    records.append(PodArrival(8 * STEP, "ns", "c", None, REQUESTS, instance_type="m"))
    records.append(UsageSample(8 * STEP, "ns", "c", 1.0, 0.0))
    trace = tmp_path / "t.jsonl"
    write_trace(trace, TraceHeader(), records)
    args = PodMetricsArgs.model_validate(
        {
            "trace": str(trace),
            "horizonSeconds": 8 * STEP,
            "daySeconds": DAY_STEPS * STEP,
            "profileDays": 1,
            "smoothingSteps": 1,
            "metricProvider": {"type": "Prometheus", "address": "http://prometheus:9090"},
        }
    )
    future = FutureUse(trace, "secsched", STEP)
    return PastForecasts(future, args), future


def test_a_pod_that_ran_a_day_repeats_its_own_day(tmp_path: Path) -> None:
    forecasts, future = forecasts_of(tmp_path)
    forecasts.refresh(8)
    pod = PodInfo.from_pod(vm("a"))
    assert forecasts.of(future.columns["ns/a"], pod).tolist() == [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]


def test_a_young_pod_keeps_its_mean_so_far_on_the_fleets_daily_wave(tmp_path: Path) -> None:
    forecasts, future = forecasts_of(tmp_path)
    forecasts.refresh(8)
    b = forecasts.of(future.columns["ns/b"], PodInfo.from_pod(vm("b")))
    # the mean pod's last day (steps 4-7): 1, 2, (3 + 6) / 2, (4 + 8) / 2, as a share of its mean
    wave = np.array([1.0, 2.0, 4.5, 6.0]) / 3.375
    assert np.allclose(forecasts.wave_ahead, np.tile(wave, 2))
    # b ran at steps 6 and 7 (the wave's 3rd and 4th): its mean there, 7, is its mean so far
    assert np.allclose(b, np.tile(wave, 2) * 7.0 / wave[2:].mean())


def test_a_pod_not_measured_is_its_class_mean_on_the_wave_and_before_any_its_limit(tmp_path: Path) -> None:
    forecasts, future = forecasts_of(tmp_path)
    c = PodInfo.from_pod(vm("c", limit="3"))
    forecasts.refresh(0)
    assert forecasts.of(future.columns["ns/c"], c).tolist() == [3.0] * 8
    forecasts.refresh(8)
    # a, the only measured pod of c's class, ran at 2.5 on average
    assert np.allclose(forecasts.of(future.columns["ns/c"], c), 2.5 * forecasts.wave_ahead)


def test_a_replay_places_every_pod_with_the_bound_alone(tmp_path: Path) -> None:
    profile = replay_alone(
        tmp_path, "bench.podmetricsbound:PodMetricsBalance", "podmetricsbound.yaml", days=1.5
    )
    assert profile["decisions"] == 30 and profile["unschedulablePods"] == 0
