"""The demo's report: one HTML file with plots, every number from the runs just made."""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server or in CI
import matplotlib.pyplot as plt

from secondary_scheduler.replay.report import ProfileResult
from secsched_devtools.demo.preemption import PreemptionResult
from secsched_devtools.demo.replayscene import FIGURES, ReplaySceneResult
from secsched_devtools.demo.run import RunResult

COLOURS = ("#1f6feb", "#8c959f", "#d4a72c")


def _png(figure: plt.Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def timeline_plot(runs: list[RunResult], target: int) -> str:
    figure, axes = plt.subplots(1, len(runs), figsize=(5.2 * len(runs), 3.8), sharey=True)
    for axis, run in zip(list(axes) if len(runs) > 1 else [axes], runs, strict=True):
        nodes = sorted(run.before, key=lambda name: int(name.rsplit("-", 1)[-1]))
        times = [t for t, _ in run.timeline]
        for node in nodes:
            axis.plot(times, [sample.get(node, 0) * 100 for _, sample in run.timeline], linewidth=1)
        axis.axhline(target, color="red", linestyle="--", linewidth=1)
        axis.set_title(run.label, fontsize=10)
        axis.set_xlabel("seconds since the first pod")
        axis.set_ylim(0, 105)
    (list(axes) if len(runs) > 1 else [axes])[0].set_ylabel("node CPU utilisation (%)")
    return _png(figure)


def final_plot(runs: list[RunResult], target: int) -> str:
    nodes = sorted(runs[0].after, key=lambda name: int(name.rsplit("-", 1)[-1]))
    figure, axis = plt.subplots(figsize=(max(8, len(nodes) * 0.7), 4))
    width = 0.8 / (len(runs) + 1)
    positions = range(len(nodes))
    axis.bar(
        [p - 0.4 + width / 2 for p in positions],
        [runs[0].before[n][0] * 100 for n in nodes],
        width,
        color="#d0d7de",
        label="starting load",
    )
    for index, run in enumerate(runs, start=1):
        axis.bar(
            [p - 0.4 + width * (index + 0.5) for p in positions],
            [run.after[n][0] * 100 for n in nodes],
            width,
            color=COLOURS[(index - 1) % len(COLOURS)],
            label=run.label,
        )
    axis.axhline(target, color="red", linestyle="--", linewidth=1, label=f"target {target} %")
    axis.set_xticks(list(positions), [n.removeprefix("kwok-node-") for n in nodes])
    axis.set_xlabel("node (kwok-node-N)")
    axis.set_ylabel("CPU utilisation at the end (%)")
    axis.set_ylim(0, 110)
    axis.legend(fontsize=8, ncol=2)
    return _png(figure)


Cell = str | tuple[str, str]
"""A table cell: text, or (text, CSS class)."""


def _cell(cell: Cell, tag: str = "td") -> str:
    text, css = (cell, "") if isinstance(cell, str) else cell
    attribute = f' class="{css}"' if css else ""
    return f"<{tag}{attribute}>{html.escape(text)}</{tag}>"


def _table(headers: list[str], rows: list[list[Cell]], css: str = "") -> str:
    """A table; headers that are all empty make none."""
    head = "".join(_cell(h, "th") for h in headers)
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    attribute = f' class="{css}"' if css else ""
    return f"<table{attribute}>{thead}<tbody>{body}</tbody></table>"


def _gi(count: int) -> str:
    return f"{count / 1024**3:.1f}Gi"


def _nodes_sorted(names: list[str]) -> list[str]:
    return sorted(
        names, key=lambda name: int(name.rsplit("-", 1)[-1]) if name.rsplit("-", 1)[-1].isdigit() else 0
    )


def disks_section(runs: list[RunResult]) -> str:
    """Per VM and run: the node its disk was provisioned on, checked against the VM pod's node."""
    if not any(run.all_disks for run in runs):
        return ""
    summary: list[list[Cell]] = []
    for run in runs:
        on_node, total = run.disks_on_pod_node
        nodes = len({disk.volume_node for disk in run.all_disks if disk.volume_node})
        summary.append(
            [run.label, (f"{on_node}/{total}", "good" if on_node == total and total else "bad"), str(nodes)]
        )
    by_run = [{disk.vm_pod: disk for disk in run.all_disks} for run in runs]
    first = runs[0].all_disks
    rows: list[list[Cell]] = []
    for disk in first:
        row: list[Cell] = [disk.vm_pod.removeprefix("virt-launcher-"), disk.size]
        for disks in by_run:
            other = disks.get(disk.vm_pod)
            if other is None:
                row.append(("-", ""))
            elif other.on_pod_node:
                row.append((f"{other.volume_node} ✓", "good"))
            else:
                row.append((f"disk {other.volume_node or other.phase}, VM {other.pod_node or '-'} ✗", "bad"))
        rows.append(row)
    return f"""<h2>VM disks: provisioned where the VM runs</h2>
<p class="note">Each VM has a root disk, the PersistentVolumeClaim KubeVirt's <code>dataVolumeTemplates</code>
make (StorageClass <code>local-wffc</code>, WaitForFirstConsumer, node-local volumes). The claim waits
until the scheduler has chosen the VM's node and written <code>volume.kubernetes.io/selected-node</code>;
the provisioner then makes a volume pinned to that node (PV node affinity
<code>kubernetes.io/hostname</code>), and the scheduler binds the pod once the claim is Bound. A disk
anywhere else would keep the VM from starting.</p>
{_table(["scheduler", "disks on the VM's node", "nodes with disks"], summary)}
<details open><summary>Every disk: the node its PV is pinned to (✓ = the VM's node)</summary>
{_table(["VM", "disk", *[run.label for run in runs]], rows, "small")}
</details>"""


def _seconds(value: float | None) -> str:
    return f"{value:.2f}s" if value is not None else "-"


def _scene_rows(scene: PreemptionResult) -> dict[str, Cell]:
    victims = scene.victims
    bound = scene.node and not scene.error
    return {
        "most free memory when it arrived": f"{_gi(scene.largest_free[1])} on {scene.largest_free[0]}",
        "victims (deleted)": "; ".join(
            f"{v.pod} on {v.node} ({_gi(v.memory)}, priority {v.priority:,})" for v in victims
        )
        or "none",
        "their DisruptionTarget condition": "; ".join(v.condition or "not seen" for v in victims) or "-",
        "status.nominatedNodeName": scene.nominated_node or "-",
        "bound to": (scene.node or "not bound", "good" if bound else "bad"),
        "its disk": (
            f"{scene.disk.volume_node} ✓" if scene.disk and scene.disk.on_pod_node else "not on its node ✗",
            "good" if scene.disk and scene.disk.on_pod_node else "bad",
        ),
        "nominated after": _seconds(scene.nominated_after),
        "victims deleted after": ", ".join(_seconds(v.deleted_after) for v in victims) or "-",
        "bound after (time to bind)": _seconds(scene.bound_after),
    }


def preemption_section(runs: list[RunResult]) -> str:
    """The scene, side by side: victims, nomination, final node, times; then each run's events."""
    scenes = [(run, run.preemption) for run in runs if run.preemption]
    if not scenes:
        return ""
    first = scenes[0][1]
    rows_by_run = [_scene_rows(scene) for _, scene in scenes]
    rows: list[list[Cell]] = [[key, *(row[key] for row in rows_by_run)] for key in rows_by_run[0]]
    rows.append(["PostFilter plugins", *(run.postfilter for run, _ in scenes)])
    errors = "".join(
        f'<p class="bad">{html.escape(run.label)}: {html.escape(scene.error)}</p>'
        for run, scene in scenes
        if scene.error
    )
    events = "".join(
        f"<h3>{html.escape(run.label)}</h3><pre>{html.escape(chr(10).join(scene.events) or 'none')}</pre>"
        for run, scene in scenes
    )
    return f"""<h2>Preemption: a business-critical VM arrives when no node has room</h2>
<p class="note">After the fleet is placed, <b>{html.escape(first.preemptor)}</b> (priority {first.priority:,},
{_gi(first.memory_request)} of memory) arrives. Its size comes from the node sizes: more memory than any
node but the largest can give, and each of those already runs one memory-heavy VM of the fleet,
so no node has room unless a lower-priority VM goes. DefaultPreemption picks the node and the fewest,
least important victims, sets the VM's <code>status.nominatedNodeName</code>, gives each victim the
<code>DisruptionTarget</code> condition and deletes it; the VM is bound once the room is free and its disk
made on that node. Every largest node offers the same choice, its one memory-heavy VM (its smaller VMs
together cannot free enough), so kube-scheduler's order for candidates (fewest PodDisruptionBudget
violations, lowest victim priority, smallest priority sum, fewest victims, then the node whose victims
started last) comes down to start times: the node of the memory-heavy VM that started last. (The evicted
VM's disk stays on its node; KubeVirt would restart that VM, and it would wait there for room.)</p>
{_table(["", *[run.label for run, _ in scenes]], rows)}
{errors}
<details><summary>The scene's events (the preemptor's scheduling events, the victims' Preempted)</summary>
{events}
</details>"""


REPLAY_ROWS: tuple[tuple[str, Callable[[ProfileResult], str]], ...] = (
    ("node-minutes over target", lambda r: f"{r.node_minutes_over_target:,.0f}"),
    ("VM-minutes on nodes over target", lambda r: f"{r.vm_minutes_over_target:,.0f}"),
    ("VM-minutes on nodes over 90 %", lambda r: f"{r.vm_minutes_over_saturation:,.0f}"),
    (
        "node CPU p50 / p95 / p99",
        lambda r: f"{r.p50_node_cpu:.0%} / {r.p95_node_cpu:.0%} / {r.p99_node_cpu:.0%}",
    ),
    ("node CPU max", lambda r: f"{r.max_node_cpu:.0%}"),
    ("CPU spread across nodes (std)", lambda r: f"{r.cpu_spread:.1%}"),
    ("nodes in use (mean)", lambda r: f"{r.mean_nodes_in_use:,.1f}"),
    ("pods that waited", lambda r: str(r.waited_pods)),
    ("unschedulable pods", lambda r: str(r.unschedulable_pods)),
    ("decisions (per wall second)", lambda r: f"{r.decisions:,} ({r.decisions_per_second:,.0f}/s)"),
)
"""The replay's measures as the scene's table shows them (docs/replay.md says what each means)."""


def _png_file(path: Path) -> str:
    """A PNG file, base64, for a data: URL (the report is one self-contained file)."""
    return base64.b64encode(path.read_bytes()).decode()


def replay_section(scene: ReplaySceneResult | None) -> str:
    """The replay scene: the measures side by side and the replay's plots, embedded."""
    if scene is None or not scene.results:
        return ""
    week = scene.scene
    headers = ["", *[f"{result.name} ({result.config})" for result in scene.results]]
    rows: list[list[Cell]] = [
        [label, *(show(result) for result in scene.results)] for label, show in REPLAY_ROWS
    ]
    images = "".join(
        f"<h3>{html.escape(title)}</h3>"
        f'<img src="data:image/png;base64,{_png_file(scene.directory / name)}" alt="{html.escape(title)}">'
        for title, name in FIGURES
    )
    skipped = "".join(
        f'<p class="note">{html.escape(name)} was not replayed: {html.escape(why)}</p>'
        for name, why in scene.skipped.items()
    )
    facts: list[list[Cell]] = [[key, value] for key, value in scene.facts().items()]
    return f"""<h2>Replay: a week of {week.vms:,} VMs over {week.nodes} nodes, in {scene.seconds:.0f} s</h2>
<p class="note">The runs above show a minute of a live cluster; <code>secsched replay</code> shows what a
profile does over a week. A generated fleet (KubeVirt instance types, deploys arriving in bursts, daily
and weekly usage patterns, use above requests) is scheduled by the scheduler's own framework and plugins
on a simulated clock, once per profile, from the same {week.nodes} empty nodes
({html.escape(week.node_shape)}); the load-aware plugins read a simulated Prometheus. Node CPU is use
over capacity, measured every simulated minute; the target is {week.target:.0%}. docs/replay.md
explains each measure and the limits of a replay (how close it comes to a live cluster is measured by
<code>tests/cluster/test_replay_agreement.py</code>). The replay's own page:
<code>{html.escape(str(scene.page))}</code>.</p>
{_table(headers, rows)}
{skipped}
{images}
<details><summary>About this replay</summary>
{_table(["", ""], facts)}
</details>"""


def write_report(
    path: Path,
    runs: list[RunResult],
    target: int,
    facts: dict[str, str],
    replay: ReplaySceneResult | None = None,
) -> Path:
    summary_headers = [
        "scheduler",
        *next(iter(runs)).quality.as_row().keys(),  # type: ignore[union-attr]
        "time to place (s)",
        "disks on the VM's node",
        "preemption",
    ]
    summary_rows: list[list[Cell]] = []
    for run in runs:
        if run.quality is None:
            continue
        on_node, total = run.disks_on_pod_node
        scene = run.preemption
        if scene is None:
            preempted = "-"
        elif scene.error or not scene.node:
            preempted = "failed"
        else:
            preempted = f"{len(scene.victims)} evicted, bound to {scene.node}"
        summary_rows.append(
            [
                run.label,
                *run.quality.as_row().values(),
                f"{run.seconds:.0f}",
                (f"{on_node}/{total}", "good" if on_node == total else "bad"),
                preempted,
            ]
        )
    nodes = _nodes_sorted(list(runs[0].after))
    per_node_rows: list[list[Cell]] = []
    for node in nodes:
        row: list[Cell] = [node, f"{runs[0].before[node][0] * 100:.0f} %"]
        for run in runs:
            vms = Counter(run.placements.values())[node]
            row.append(f"{run.after[node][0] * 100:.0f} % ({vms} VMs)")
        per_node_rows.append(row)
    fact_rows: list[list[Cell]] = [[key, value] for key, value in facts.items()]
    document = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>secondary-scheduler demo report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 1400px; color: #1f2328; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #d0d7de; padding: 4px 10px; vertical-align: top; }}
th {{ background: #f6f8fa; }} td:first-child {{ font-weight: 600; }} img {{ max-width: 100%; }}
table.small td {{ font-size: 0.85em; padding: 2px 8px; }}
.note {{ color: #57606a; }} .good {{ color: #1a7f37; }} .bad {{ color: #cf222e; font-weight: 600; }}
pre {{ background: #f6f8fa; padding: 8px; font-size: 0.8em; white-space: pre-wrap; }}
summary {{ cursor: pointer; color: #0969da; margin: 0.5em 0; }}
</style></head><body>
<h1>Load-aware scheduling of VMs: our scheduler next to upstream</h1>
<p class="note">Every number below comes from this run. Each scheduler placed the same VMs, arriving in
the same order, on a fresh local cluster with the same nodes and the same starting load. A VM's real CPU
use is several times its request (KubeVirt requests 1/10 of a core per vCPU), which is what a
requests-only scheduler cannot see.</p>
<h2>Summary</h2>
{_table(summary_headers, summary_rows)}
<p class="note">How to read it: TargetLoadPacking (target {target} %) should leave
<b>no node over the target</b> while cooler nodes have room, and keep nodes out of saturation
(above 90 %). LoadAwarePacking, ours (examples/replay/ours.yaml, the same target), predicts what
each VM will use from what its like already use and counts the VMs the metrics do not show yet,
where TargetLoadPacking takes a VM's limits and forgets it after a minute. The requests-only
default profile spreads by requests and cannot tell a busy node
from an idle one. The load figures are taken once the fleet is placed, before the preemption scene.</p>
<h2>CPU utilisation of every node over time</h2>
<img src="data:image/png;base64,{timeline_plot(runs, target)}" alt="utilisation over time">
<h2>CPU utilisation at the end, per node</h2>
<img src="data:image/png;base64,{final_plot(runs, target)}" alt="final utilisation">
{_table(["node", "starting CPU", *[run.label for run in runs]], per_node_rows)}
{disks_section(runs)}
{preemption_section(runs)}
{replay_section(replay)}
<h2>About this run</h2>
{_table(["", ""], fact_rows)}
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document)
    return path
