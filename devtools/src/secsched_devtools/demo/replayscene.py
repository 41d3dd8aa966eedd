"""The demo's replay scene: a generated week of VMs, replayed for each example profile in minutes.

The other scenes show a minute of a live cluster; this one shows what a profile does over a week,
which no live run of the demo can: ``secsched replay`` (docs/replay.md) schedules a generated fleet
with the scheduler's own framework and plugins on the simulated clock, once per profile, seed 000's
TargetLoadPacking against kube-scheduler's default profile (and LoadAwarePacking, ours, when its
example config loads). No cluster is needed; the plots and the measures join the demo's report.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from secondary_scheduler.config import ConfigError, load_config
from secondary_scheduler.config.model import SchedulerConfiguration
from secondary_scheduler.plugins.registry import Registry, catalog_of, load_registry
from secondary_scheduler.replay.cluster import NodeShape, StartingCluster
from secondary_scheduler.replay.engine import ProfileReplay, ReplayOptions
from secondary_scheduler.replay.generate import FleetOptions, FleetTrace
from secondary_scheduler.replay.report import ProfileResult
from secsched_devtools.repo import REPO

EXAMPLES = REPO / "examples" / "replay"
REQUIRED_CONFIGS = ("targetloadpacking.yaml", "default.yaml")
"""Seed 000's profile and kube-scheduler's default: the scene's comparison."""
OPTIONAL_CONFIGS = ("ours.yaml",)
"""Replayed too when they load (the scene says why one was left out)."""
FIGURES = (
    ("Node CPU over time (one row per node, busiest on top)", "heatmap.png"),
    ("How busy the nodes were", "cpu-distribution.png"),
    ("Nodes over the target", "over-target.png"),
    ("Nodes in use (the cost side)", "nodes-in-use.png"),
)
"""The plots ``replay.plots.write_report`` writes, by file name, with the report's captions."""
_PLUGINS_LOGGER = "secondary_scheduler.plugins"

Progress = Callable[[str], None]


class ReplaySceneError(RuntimeError):
    """The scene cannot run: a required example config is missing or does not load."""


@dataclass(frozen=True)
class ReplayScene:
    """What is replayed: a generated week of ``vms`` VMs over ``nodes`` nodes of ``node_shape``.

    The nodes have 8 GiB per core (as VM hosts bought for memory do): with KubeVirt's requests (a
    tenth of a core per vCPU, the guest's memory in full) memory decides how many VMs a node takes,
    and at 4 GiB per core the nodes would fill up long before their CPUs are busy enough for load
    to matter.
    """

    vms: int = 2000
    nodes: int = 50
    node_shape: str = "32,256Gi"
    days: float = 7.0
    seed: int = 0
    target: float = 0.7
    """seed 000's targetUtilization, as a fraction: the measures count nodes over it."""

    def trace(self) -> FleetTrace:
        return FleetTrace(FleetOptions(vms=self.vms, days=self.days, seed=self.seed))

    def cluster(self) -> StartingCluster:
        return StartingCluster.generated(self.nodes, NodeShape.parse(self.node_shape))

    def command(self) -> str:
        """The same replay from a shell."""
        configs = " ".join(
            f"--config examples/replay/{name}" for name in (*REQUIRED_CONFIGS, *OPTIONAL_CONFIGS)
        )
        return (
            f"secsched trace generate --vms {self.vms} --days {self.days:g} --seed {self.seed} "
            f"--output week.jsonl.gz && secsched replay --trace week.jsonl.gz --nodes {self.nodes} "
            f"--node-shape {self.node_shape} {configs} --target {self.target:g} --report replay-report"
        )


@dataclass
class ReplaySceneResult:
    scene: ReplayScene
    results: list[ProfileResult]
    page: Path
    """The replay's own report page (index.html), beside its plots."""
    seconds: float
    """Wall time of the whole scene."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Optional config -> why it was not replayed."""

    @property
    def directory(self) -> Path:
        return self.page.parent

    def facts(self) -> dict[str, str]:
        trace = self.scene.trace()
        return {
            "trace": f"generated, seed {self.scene.seed}: {trace.header.description}",
            "cluster": self.scene.cluster().source,
            "profiles": ", ".join(f"{result.name} ({result.config})" for result in self.results)
            + "".join(f"; {name} not replayed: {why}" for name, why in self.skipped.items()),
            "metrics": "simulated Prometheus: scrape every 30 s, 15-minute windows, collector every 30 s",
            "the same from a shell": self.scene.command(),
        }


def example_configs(
    registry: Registry, examples: Path = EXAMPLES
) -> tuple[list[tuple[str, SchedulerConfiguration]], dict[str, str]]:
    """(file name, config) of the scene's example configs, and the optional ones left out (with why)."""
    catalog = catalog_of(registry)
    loaded: list[tuple[str, SchedulerConfiguration]] = []
    skipped: dict[str, str] = {}
    for name in (*REQUIRED_CONFIGS, *OPTIONAL_CONFIGS):
        path = examples / name
        try:
            loaded.append((name, load_config(path.read_text(), str(path), catalog=catalog).config))
        except (OSError, ConfigError) as error:
            if name in REQUIRED_CONFIGS:
                raise ReplaySceneError(f"the replay scene needs {path}: {error}") from error
            skipped[name] = _why(error)
    return loaded, skipped


def _why(error: OSError | ConfigError) -> str:
    """The first problem of a config that does not load, with its file and line."""
    if isinstance(error, ConfigError) and error.problems:
        return error.problems[0].render(error.source)
    return str(error)


def run_replay_scene(output: Path, progress: Progress, scene: ReplayScene | None = None) -> ReplaySceneResult:
    """Replay the scene's week once per profile; write the replay's report (plots, index.html) in
    ``output``. ``progress`` hears which profile and simulated day the replay is at."""
    from secondary_scheduler.replay import plots  # matplotlib: the demo extra, as the demo's report

    scene = scene or ReplayScene()
    started = time.monotonic()
    registry = load_registry()
    configs, skipped = example_configs(registry)
    trace, cluster = scene.trace(), scene.cluster()
    options = ReplayOptions(target=scene.target, seed=scene.seed)
    plugin_logs = logging.getLogger(_PLUGINS_LOGGER)
    level = plugin_logs.level
    plugin_logs.setLevel(logging.ERROR)  # the metrics notes would repeat for every profile
    results: list[ProfileResult] = []
    try:
        for name, config in configs:
            for profile in config.profiles:
                engine = ProfileReplay(profile, config, registry, cluster, options, config_label=name)
                label = f"{profile.scheduler_name} ({name})"

                results.append(asyncio.run(engine.run(trace.stream(), _hourly(progress, label, scene.days))))
    finally:
        plugin_logs.setLevel(level)
    result = ReplaySceneResult(scene, results, output / "index.html", 0.0, skipped)
    plots.write_report(output, scene.target, results, result.facts())
    result.seconds = time.monotonic() - started
    return result


def _hourly(progress: Progress, label: str, days: float) -> Callable[[float], None]:
    """The engine's progress hook (called at every simulated instant), passed on once per simulated hour."""
    last = -1

    def heard(now: float) -> None:
        nonlocal last
        hour = int(now // 3600)
        if hour != last:
            last = hour
            progress(f"{label}: day {now / 86400:.1f} of {days:g}")

    return heard
