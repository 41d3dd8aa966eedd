"""Placement quality of the load-aware profiles, LoadAwarePacking against its anchors (issue 38).

Every run is one profile on one scheduler, on a fresh cluster (with Prometheus) of the same
nodes and starting load, placing the same VMs arriving in the same bursts; what the nodes' real
load looks like afterwards is compared. The runs: ours' LoadAwarePacking
(examples/replay/ours.yaml, the recommended profile); the three Trimaran plugins, each alone at
score, on upstream scheduler-plugins' binary and on ours; the Koordinator-like profile
(bench/koordinatorlike.py) on ours; kube-scheduler's default profile (the cluster's own
upstream kube-scheduler). This section brings its own clusters, so it runs once, at the first
cluster size of the run; its size is ``--placement-nodes``, ``--placement-vms`` and
``--placement-bursts``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench import report
from bench.context import BenchContext, BenchOptions
from bench.placement_report import HEADER, Outcome, agreement, busy_share, table, targets
from bench.runinfo import RunInfo
from secondary_scheduler.kube.quantity import milli_value
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import plan_nodes
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, single_plugin_config, start_scheduler
from secsched_devtools.demo.run import RunResult, run_workload
from secsched_devtools.demo.scenario import Scenario
from secsched_devtools.demo.workload import vm_fleet
from secsched_devtools.repo import replay_example

SEED = 11
TARGET = 70
"""The count's target, in percent: LoadAwarePacking's and TargetLoadPacking's targetUtilization."""
KUBE_DEFAULT = "kube-scheduler"
"""The default profile's scheduler: the cluster's upstream kube-scheduler (`default-scheduler`)."""
LOAD_AWARE_PACKING = "LoadAwarePacking"
TRIMARAN_ARGS = {
    "TargetLoadPacking": f'          targetUtilization: {TARGET}\n          defaultRequestsMultiplier: "1"\n',
    "LoadVariationRiskBalancing": "",
    "LowRiskOverCommitment": "",
}
METRICS_LAG = "2s"
"""LoadAwarePacking's metricsLag on these clusters: their Prometheus scrapes and evaluates its
rules every 2 s (the example's 30s is a 30-s scrape's). The Trimaran plugins have no such knob."""


@dataclass(frozen=True)
class Run:
    """One profile on one scheduler: ``config`` makes its KubeSchedulerConfiguration from the
    cluster's Prometheus address (None: the cluster's default scheduler places the VMs)."""

    profile: str
    scheduler: str
    config: Callable[[str], str] | None
    extra_args: tuple[str, ...] = ()


def example_config(name: str, **set_args: Any) -> Callable[[str], str]:
    """An example profile of examples/replay/ with its metricProvider pointed at the run's Prometheus
    (and ``set_args`` set in the args of every plugin that reads metrics)."""
    return functools.partial(replay_example, name, **set_args)


def trimaran_config(plugin: str) -> Callable[[str], str]:
    return lambda prometheus: single_plugin_config(plugin, prometheus, TRIMARAN_ARGS[plugin])


RUNS = (
    Run(LOAD_AWARE_PACKING, OURS, example_config("ours.yaml", metricsLag=METRICS_LAG)),
    *(Run(plugin, kind, trimaran_config(plugin)) for plugin in TRIMARAN_ARGS for kind in (UPSTREAM, OURS)),
    Run(
        "Koordinator-like",
        OURS,
        example_config("koordinator-like.yaml"),
        ("--plugin", "bench.koordinatorlike:LoadAwareScheduling"),
    ),
    Run("default", KUBE_DEFAULT, None),
)


def bursts(vms: list[dict[str, Any]], count: int) -> list[list[dict[str, Any]]]:
    """``vms`` in ``count`` bursts of nearly equal size, in order (the first ones one larger)."""
    if count <= 0 or count > len(vms):
        raise ValueError(f"placement bursts={count}: give 1 to the number of VMs ({len(vms)})")
    size, extra = divmod(len(vms), count)
    result, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        result.append(vms[start:end])
        start = end
    return result


@dataclass
class PlacementSection:
    options: BenchOptions
    name: str = "placement"
    title: str = "Placement quality of the load-aware profiles"
    results: list[Outcome] = field(default_factory=list)

    @property
    def scenario(self) -> Scenario:
        return Scenario(
            nodes=self.options.placement_nodes,
            vms=self.options.placement_vms,
            web_pods=0,
            arrival_seconds=self.options.placement_burst_seconds,
            seed=SEED,
            target=TARGET,
        )

    async def measure(self, context: BenchContext) -> None:
        if self.results:
            return  # measured once, on clusters of its own
        scenario = self.scenario
        waves = bursts(vm_fleet(scenario.vms, scenario.seed), self.options.placement_bursts)
        for run in RUNS:
            context.log(f"placement: {run.profile}, {run.scheduler}")
            directory = self.options.workdir / "placement" / f"{run.profile}-{run.scheduler}"
            self.results.append(await self._one(run, scenario, waves, directory, context.log))
            raw = [asdict(outcome) for outcome in self.results]
            (self.options.workdir / "placement.json").write_text(json.dumps(raw, indent=1))

    async def _one(
        self,
        run: Run,
        scenario: Scenario,
        waves: list[list[dict[str, Any]]],
        directory: Path,
        log: Callable[[str], None],
    ) -> Outcome:
        cluster = LocalCluster(scenario.cluster_options(f"bench-placement-{run.scheduler}"))
        await asyncio.to_thread(cluster.up)
        try:
            scheduler = None
            if run.config is not None:
                config = run.config(cluster.prometheus_url)
                scheduler = await asyncio.to_thread(
                    start_scheduler,
                    run.scheduler,
                    config,
                    cluster.kubeconfig,
                    directory,
                    None,
                    run.extra_args,
                )
            else:
                waves = [[_to_default_scheduler(vm) for vm in wave] for wave in waves]
            try:
                results = await self._waves(cluster, run, scenario, waves, log)
            finally:
                if scheduler is not None:
                    await asyncio.to_thread(scheduler.stop)
        finally:
            await asyncio.to_thread(cluster.down, True)
        first, last = results[0], results[-1]
        return Outcome(
            profile=run.profile,
            scheduler=run.scheduler,
            before={node: cpu for node, (cpu, _) in first.before.items()},
            after={node: cpu for node, (cpu, _) in last.after.items()},
            placements=last.placements,
            seconds=sum(result.seconds for result in results),
        )

    async def _waves(
        self,
        cluster: LocalCluster,
        run: Run,
        scenario: Scenario,
        waves: list[list[dict[str, Any]]],
        log: Callable[[str], None],
    ) -> list[RunResult]:
        """Each burst over ``arrival_seconds``, bound, then the pause before the next one."""
        results = []
        label = f"{run.profile}/{run.scheduler}"
        for index, wave in enumerate(waves):
            if index:
                await asyncio.sleep(self.options.placement_burst_pause)  # the arrival schedule
            results.append(
                await run_workload(
                    cluster, label, wave, [], scenario.arrival_seconds, scenario.target, lambda _: None
                )
            )
            log(f"  {label}: burst {index + 1}/{len(waves)} bound")
        return results

    def render(self, run: RunInfo) -> str:
        scenario = self.scenario
        options = self.options
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            f"{scenario.nodes} KWOK nodes (8, 16 and 32 cores) with uneven starting load "
            f"(seed {scenario.seed}: each node's CPU one of 5-90 %, so some start above the target), "
            f"{scenario.vms} KubeVirt-style VM launcher pods (seed {scenario.seed}) arriving in "
            f"{options.placement_bursts} bursts, each over {scenario.arrival_seconds:.0f} s, the next "
            f"{options.placement_burst_pause:.0f} s after the previous one was all bound (and 6 s of "
            "scrapes); each VM's real CPU use is above its request (see "
            "[the load model](local-cluster.md#the-load-model)). Every run is a fresh cluster whose "
            "Prometheus scrapes every 2 s. Profiles: LoadAwarePacking is `examples/replay/ours.yaml` with "
            f"`metricsLag: {METRICS_LAG}` (that Prometheus' scrape and rule interval; the example's 30s is "
            "for 30-s scrapes); "
            "each Trimaran plugin is the only score plugin of its profile (TargetLoadPacking with "
            f"targetUtilization {TARGET}, defaultRequestsMultiplier 1; the others upstream's default "
            "args), on upstream scheduler-plugins' binary and on ours; Koordinator-like is "
            "`examples/replay/koordinator-like.yaml` with bench/koordinatorlike.py on ours; *default* is "
            "the cluster's upstream kube-scheduler with its default profile. Target for the counts: "
            f"{TARGET} %.",
            "",
            report.table(HEADER, table(self.results, TARGET)),
        ]
        lines += self._fill(scenario) + self._agreement() + self._targets()
        lines.append("Raw numbers: `placement.json` in the run's working directory.")
        return "\n".join(lines)

    def _fill(self, scenario: Scenario) -> list[str]:
        """How full the VMs leave the cluster: near the target, no placement keeps every node under it."""
        if not self.results:
            return []
        cores = {
            node["metadata"]["name"]: milli_value(node["status"]["capacity"]["cpu"]) / 1000
            for node in plan_nodes(scenario.nodes, None, scenario.zones)
        }
        before = busy_share(self.results[0].before, cores)
        after = [busy_share(outcome.after, cores) for outcome in self.results]
        low, high = (f"{100 * share:.0f}" for share in (min(after), max(after)))
        span = low if low == high else f"{low}-{high}"
        return [
            f"The cluster's CPU (every node's load weighted by its cores) is {100 * before:.0f} % busy "
            f"before the VMs and {span} % after them, by run; the target is {TARGET} %.",
            "",
        ]

    def _agreement(self) -> list[str]:
        lines = ["Ours against upstream's binary, per Trimaran plugin:", ""]
        for plugin in TRIMARAN_ARGS:
            pair = {o.scheduler: o for o in self.results if o.profile == plugin}
            if UPSTREAM in pair and OURS in pair:
                lines.append(f"- {plugin}: {agreement(pair[UPSTREAM], pair[OURS], TARGET)}.")
        return [*lines, ""]

    def _targets(self) -> list[str]:
        ours = next((o for o in self.results if o.profile == LOAD_AWARE_PACKING), None)
        if ours is None:
            return []
        anchors = [o for o in self.results if o.profile != LOAD_AWARE_PACKING]
        lines = ["Issue 38's targets for LoadAwarePacking:", ""]
        for verdict in targets(ours, anchors, TARGET):
            lines.append(f"- {verdict.name}: {'met' if verdict.met else 'not met'}, {verdict.detail}.")
        return [*lines, ""]


def _to_default_scheduler(pod: dict[str, Any]) -> dict[str, Any]:
    copied = copy.deepcopy(pod)
    copied["spec"]["schedulerName"] = "default-scheduler"
    return copied


def ours_overrides(items: Sequence[str]) -> dict[str, Any]:
    """LoadAwarePacking's args over the example's for one run: this section's ``metricsLag``, then
    each ``KEY=VALUE`` (the value read as YAML: ``spillCeiling=88`` is a number)."""
    overrides: dict[str, Any] = {"metricsLag": METRICS_LAG}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {item!r}: expected KEY=VALUE, e.g. --set spillCeiling=88")
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def main(argv: Sequence[str] | None = None) -> None:
    """LoadAwarePacking alone on this section's workload, its measures printed: the loop for tuning
    it (the section runs every profile, 10+ minutes; this one a few). Runs vary a lot with timing
    (docs/loadaware.md): compare settings over several runs each.

        python -m bench.placement --workdir DIR [--set spillCeiling=88 ...]
    """
    parser = argparse.ArgumentParser(prog="python -m bench.placement", description=main.__doc__)
    parser.add_argument("--workdir", type=Path, required=True, help="for the run's files and placement.json")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an arg of LoadAwarePacking (camelCase, a YAML value), over examples/replay/ours.yaml's",
    )
    args = parser.parse_args(argv)
    try:
        overrides = ours_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    options = BenchOptions(
        sizes=(1,),
        pods=(1,),
        qps=50,
        burst=100,
        repeats=1,
        concurrency=1,
        kube_default=False,
        kube_default_pods=0,
        workdir=args.workdir,
    )
    section = PlacementSection(options)
    scenario = section.scenario
    waves = bursts(vm_fleet(scenario.vms, scenario.seed), options.placement_bursts)
    run = Run(LOAD_AWARE_PACKING, OURS, example_config("ours.yaml", **overrides))
    directory = args.workdir / "placement" / f"{run.profile}-{run.scheduler}"
    outcome = asyncio.run(section._one(run, scenario, waves, directory, print))
    (args.workdir / "placement.json").write_text(json.dumps([asdict(outcome)], indent=1))
    print(json.dumps(outcome.measures(TARGET)))


if __name__ == "__main__":
    main()
