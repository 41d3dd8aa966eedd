"""Write this directory's sample traces again (the same bytes: everything is seeded).

    .venv/bin/python examples/replay/traces/make_samples.py

* ``week-small.jsonl.gz``: a generated week (secsched format) of 100 VMs, the generator's
  statistics at their defaults (5-minute samples): what ``secsched trace generate`` writes.
* ``azure-sample/``: 40 VMs over one day in the Azure Public Dataset V2 layout (no headers):
  ``vmtable.csv`` and two readings files, ``vm_cpu_readings-file-{1,2}-of-2.csv.gz``, twelve hours
  each. The values are made up (the real ids are hashes too); the columns, units, buckets and
  5-minute timestamps are the dataset's, so ``--trace-format azure`` reads it as it reads the real
  thing.
"""

from __future__ import annotations

import base64
import gzip
import math
from pathlib import Path

import numpy as np

from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.trace import write_trace

HERE = Path(__file__).resolve().parent
DAY = 86400
READING = 300
CORE_BUCKETS = ("2", "4", "8", "24", ">24")
MEMORY_OF_CORES = {"2": "4", "4": "8", "8": "32", "24": "64", ">24": ">64"}
CATEGORIES = ("Interactive", "Delay-insensitive", "Unknown")


def write_week_small() -> Path:
    path = HERE / "week-small.jsonl.gz"
    trace = FleetTrace(FleetOptions(vms=100, days=7, seed=0))
    write_trace(path, trace.header, trace.records())
    return path


def _hash_id(rng: np.random.Generator) -> str:
    return base64.b64encode(rng.bytes(33)).decode()


def write_azure_sample(vms: int = 40, seed: int = 0) -> Path:
    """The vmtable and readings of ``vms`` VMs over a day, in deploys of a few VMs each."""
    rng = np.random.default_rng(seed)
    directory = HERE / "azure-sample"
    directory.mkdir(exist_ok=True)
    rows = []
    subscription = _hash_id(rng)
    while len(rows) < vms:
        deployment = _hash_id(rng)
        size = min(int(rng.integers(1, 6)), vms - len(rows))
        created = 0 if len(rows) < vms // 2 else int(rng.integers(1, DAY // READING)) * READING
        lives = rng.random() < 0.5
        deleted = DAY if lives else min(DAY, created + int(rng.integers(2, 60)) * READING)
        cores = CORE_BUCKETS[int(rng.choice(len(CORE_BUCKETS), p=[0.4, 0.3, 0.2, 0.07, 0.03]))]
        category = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
        level = float(rng.beta(2, 4)) * 100
        peak = float(rng.normal(14, 2))
        for _ in range(size):
            rows.append(
                (_hash_id(rng), subscription, deployment, created, deleted, cores, category, level, peak)
            )
    readings: list[list[str]] = [[], []]
    lifetimes: dict[str, tuple[float, float]] = {}
    for timestamp in range(0, DAY, READING):
        hours = timestamp / 3600
        for vmid, _, _, created, deleted, _, _, level, peak in rows:
            if not created <= timestamp < deleted:
                continue
            wave = 1 + 0.5 * math.cos(2 * math.pi * (hours - peak) / 24)
            average = min(100.0, level * wave * float(rng.lognormal(0, 0.2)))
            low = average * float(rng.uniform(0.3, 0.9))
            high = min(100.0, average * float(rng.uniform(1.1, 2.0)))
            readings[timestamp >= DAY // 2].append(f"{timestamp},{vmid},{low:.6f},{high:.6f},{average:.6f}")
            seen = lifetimes.get(vmid, (high, 0.0))
            lifetimes[vmid] = (max(seen[0], high), seen[1] + average)
    table = []
    for vmid, subscription_id, deployment, created, deleted, cores, category, _, _ in rows:
        peak_cpu, total = lifetimes.get(vmid, (0.0, 0.0))
        count = max(1, (deleted - created) // READING)
        table.append(
            f"{vmid},{subscription_id},{deployment},{created},{deleted},{peak_cpu:.6f},{total / count:.6f},"
            f"{peak_cpu * 0.95:.6f},{category},{cores},{MEMORY_OF_CORES[cores]}"
        )
    (directory / "vmtable.csv").write_text("\n".join(table) + "\n")
    for number, lines in enumerate(readings, start=1):
        data = ("\n".join(lines) + "\n").encode()
        (directory / f"vm_cpu_readings-file-{number}-of-2.csv.gz").write_bytes(gzip.compress(data, mtime=0))
    return directory


if __name__ == "__main__":
    for written in (write_week_small(), write_azure_sample()):
        print(written)
