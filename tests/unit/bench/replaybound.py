"""Running a replay bound of bench/ (a Score plugin that reads the replayed trace) alone on a small
generated fleet, as its example config describes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from secondary_scheduler.cli.main import cli
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.trace import write_trace

REPO = Path(__file__).resolve().parents[3]


def replay_alone(tmp_path: Path, plugin: str, example: str, days: float) -> dict[str, Any]:
    """Replay 30 generated VMs over ``days`` on 4 nodes with ``example`` (its ``trace`` pointed at
    them) and ``plugin`` loaded; the profile's result."""
    trace = tmp_path / "trace.jsonl.gz"
    fleet = FleetTrace(FleetOptions(vms=30, days=days, seed=3))
    write_trace(trace, fleet.header, fleet.records())
    config = yaml.safe_load((REPO / "examples/replay" / example).read_text())
    config["profiles"][0]["pluginConfig"][0]["args"]["trace"] = str(trace)
    path = tmp_path / example
    path.write_text(yaml.safe_dump(config))
    arguments = ["replay", "--plugin", plugin, "--trace", str(trace)]
    arguments += ["--nodes", "4", "--node-shape", "16,64Gi", "--config", str(path), "--output", "json"]
    outcome = CliRunner().invoke(cli, arguments)
    assert outcome.exit_code == 0, outcome.output
    (profile,) = json.loads(outcome.stdout)["profiles"]
    return dict(profile)
