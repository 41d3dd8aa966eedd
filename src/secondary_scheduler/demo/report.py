"""The demo's report: one HTML file with plots, every number from the runs just made."""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server or in CI
import matplotlib.pyplot as plt

from .run import RunResult

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


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_report(path: Path, runs: list[RunResult], target: int, facts: dict[str, str]) -> Path:
    summary_headers = ["scheduler", *next(iter(runs)).quality.as_row().keys(), "time to place (s)"]  # type: ignore[union-attr]
    summary_rows = [
        [run.label, *run.quality.as_row().values(), f"{run.seconds:.0f}"] for run in runs if run.quality
    ]
    nodes = sorted(runs[0].after, key=lambda name: int(name.rsplit("-", 1)[-1]))
    per_node_rows = []
    for node in nodes:
        row = [node, f"{runs[0].before[node][0] * 100:.0f} %"]
        for run in runs:
            vms = Counter(run.placements.values())[node]
            row.append(f"{run.after[node][0] * 100:.0f} % ({vms} VMs)")
        per_node_rows.append(row)
    fact_rows = [[key, value] for key, value in facts.items()]
    document = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>secondary-scheduler demo report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 1400px; color: #1f2328; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #d0d7de; padding: 4px 10px; }}
th {{ background: #f6f8fa; }} td:first-child {{ font-weight: 600; }} img {{ max-width: 100%; }}
.note {{ color: #57606a; }}
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
(above 90 %). The requests-only default profile spreads by requests and cannot tell a busy node
from an idle one.</p>
<h2>CPU utilisation of every node over time</h2>
<img src="data:image/png;base64,{timeline_plot(runs, target)}" alt="utilisation over time">
<h2>CPU utilisation at the end, per node</h2>
<img src="data:image/png;base64,{final_plot(runs, target)}" alt="final utilisation">
{_table(["node", "starting CPU", *[run.label for run in runs]], per_node_rows)}
<h2>About this run</h2>
{_table(["", ""], fact_rows)}
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document)
    return path
