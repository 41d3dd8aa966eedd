"""Placement quality of the three load-aware plugins: ours against upstream scheduler-plugins.

For each plugin, both schedulers run the same profile (that plugin alone at score) on a
fresh cluster with the same nodes and starting load, and place the same VMs arriving in
the same order; what the nodes' real load looks like afterwards is compared. This section
brings its own clusters (with Prometheus), so it runs once, at the first cluster size.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import report
from bench.context import BenchContext, BenchOptions
from bench.runinfo import RunInfo
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import OURS, UPSTREAM, single_plugin_config, start_scheduler
from secsched_devtools.demo.run import run_workload
from secsched_devtools.demo.scenario import Scenario
from secsched_devtools.demo.workload import vm_fleet
from secsched_devtools.quality import Quality

PLUGIN_ARGS = {
    "TargetLoadPacking": '          targetUtilization: 70\n          defaultRequestsMultiplier: "1"\n',
    "LoadVariationRiskBalancing": "",
    "LowRiskOverCommitment": "",
}
SCENARIO = Scenario(nodes=12, vms=30, web_pods=0, arrival_seconds=30.0, seed=11)


@dataclass
class PlacementSection:
    options: BenchOptions
    name: str = "placement"
    title: str = "Placement quality of the load-aware plugins"
    results: dict[str, dict[str, Quality]] = field(default_factory=dict)

    async def measure(self, context: BenchContext) -> None:
        if self.results:
            return  # measured once, on clusters of its own
        vms = vm_fleet(SCENARIO.vms, SCENARIO.seed)
        for plugin in PLUGIN_ARGS:
            for kind in (UPSTREAM, OURS):
                context.log(f"placement: {plugin}, {kind}")
                quality = await self._one(
                    plugin, kind, vms, self.options.workdir / "placement" / plugin / kind
                )
                self.results.setdefault(plugin, {})[kind] = quality
        raw = {plugin: {kind: asdict(q) for kind, q in runs.items()} for plugin, runs in self.results.items()}
        (self.options.workdir / "placement.json").write_text(json.dumps(raw, indent=1))

    async def _one(self, plugin: str, kind: str, vms: list[dict[str, object]], directory: Path) -> Quality:
        cluster = LocalCluster(SCENARIO.cluster_options(f"bench-placement-{kind}"))
        await asyncio.to_thread(cluster.up)
        try:
            config = single_plugin_config(plugin, cluster.prometheus_url, PLUGIN_ARGS[plugin])
            scheduler = await asyncio.to_thread(start_scheduler, kind, config, cluster.kubeconfig, directory)
            try:
                result = await run_workload(
                    cluster, kind, vms, [], SCENARIO.arrival_seconds, SCENARIO.target, lambda _: None
                )
            finally:
                await asyncio.to_thread(scheduler.stop)
        finally:
            await asyncio.to_thread(cluster.down, True)
        assert result.quality is not None
        return result.quality

    def render(self, run: RunInfo) -> str:
        lines = [
            f"## {self.title}",
            "",
            run.measured(),
            "",
            f"{SCENARIO.nodes} KWOK nodes (8, 16 and 32 cores) with uneven starting load "
            f"(seed {SCENARIO.seed}), {SCENARIO.vms} KubeVirt-style VM launcher pods arriving over "
            f"{SCENARIO.arrival_seconds:.0f} s; each VM's real CPU use is above its request (see "
            "[the load model](local-cluster.md#the-load-model)). Each plugin is the only score plugin of "
            "the profile, and both schedulers "
            f"query the same Prometheus. Target for the counts: {SCENARIO.target} %. Every measure is "
            "better lower, except *nodes in use*, which TargetLoadPacking wants low and the other two do "
            "not aim at.",
            "",
        ]
        for plugin, by_kind in self.results.items():
            upstream, ours = by_kind[UPSTREAM], by_kind[OURS]
            theirs, mine = upstream.values(), ours.values()
            shown_theirs, shown_mine = upstream.as_row(), ours.as_row()
            rows = [
                [key, shown_theirs[key], shown_mine[key], _ratio(mine[key], theirs[key])] for key in theirs
            ]
            header = ["measure", "upstream", "ours", "ours / upstream"]
            lines += [f"### {plugin}", "", report.table(header, rows)]
        lines.append("Raw numbers: `placement.json` in the run's working directory.")
        return "\n".join(lines)


def _ratio(ours: float, upstream: float) -> str:
    """ours / upstream; equal values (both 0 too) are 1.00×, and x / 0 has no ratio."""
    if ours == upstream:
        return "1.00×"
    return f"{ours / upstream:.2f}×" if upstream else "–"
