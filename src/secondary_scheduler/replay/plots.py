"""The report directory: plots of every profile side by side, and one index.html showing them.

matplotlib is the ``demo`` extra: this module is imported only when ``--report`` is given (the
command says which extra to install when it is missing). Plots are written as PNG files beside
index.html, so the page can be opened from disk or served as is.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server or in CI
import matplotlib.pyplot as plt
import numpy as np

from secondary_scheduler.replay.report import BIN_WIDTH, ProfileResult

HOUR = 3600.0
COLOURS = ("#1f6feb", "#8c959f", "#d4a72c", "#1a7f37", "#cf222e", "#8250df")


def _save(figure: plt.Figure, path: Path) -> str:
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path.name


def _label(result: ProfileResult) -> str:
    return f"{result.name} ({result.config})" if result.config else result.name


def heat_maps(results: Sequence[ProfileResult], target: float, directory: Path) -> str:
    """Node CPU over time, one panel per profile; nodes sorted by their mean CPU (busiest on top)."""
    figure, axes = plt.subplots(
        1, len(results), figsize=(5.5 * len(results), 4.5), squeeze=False, sharey=True
    )
    image = None
    for axis, result in zip(axes[0], results, strict=True):
        heat = result.heat
        if heat.size:
            order = np.argsort(heat.mean(axis=1))
            hours = heat.shape[1] * result.heat_width / HOUR
            image = axis.imshow(
                heat[order] * 100,
                aspect="auto",
                origin="lower",
                extent=(0, hours, 0, heat.shape[0]),
                cmap="magma",
                vmin=0,
                vmax=max(100, target * 100 * 1.3),
                interpolation="nearest",
            )
        axis.set_title(_label(result), fontsize=9)
        axis.set_xlabel("hours")
    axes[0][0].set_ylabel("nodes (sorted by mean CPU)")
    if image is not None:
        figure.colorbar(image, ax=list(axes[0]), label="node CPU (% of capacity)")
    return _save(figure, directory / "heatmap.png")


def distribution(results: Sequence[ProfileResult], target: float, directory: Path) -> str:
    """The share of node-minutes (nodes in use) at each CPU level, one line per profile."""
    figure, axis = plt.subplots(figsize=(8, 4))
    for index, result in enumerate(results):
        total = result.histogram.sum()
        if total <= 0:
            continue
        bins = result.histogram.reshape(-1, 10).sum(axis=1)  # 1 % steps
        centres = (np.arange(len(bins)) + 0.5) * BIN_WIDTH * 10 * 100
        shown = centres <= max(110, result.max_node_cpu * 100 + 5)
        colour = COLOURS[index % len(COLOURS)]
        axis.plot(centres[shown], (bins / total * 100)[shown], label=_label(result), color=colour)
    axis.axvline(target * 100, color="red", linestyle="--", linewidth=1, label=f"target {target:.0%}")
    axis.set_xlabel("node CPU (% of capacity)")
    axis.set_ylabel("% of node-minutes")
    axis.legend(fontsize=8)
    return _save(figure, directory / "cpu-distribution.png")


def over_target(results: Sequence[ProfileResult], target: float, directory: Path) -> str:
    """Nodes over the target at each minute, and cumulated node-minutes over it."""
    figure, (now, total) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    for index, result in enumerate(results):
        colour = COLOURS[index % len(COLOURS)]
        hours = np.array(result.timeline.times) / HOUR
        over = np.array(result.timeline.nodes_over_target, dtype=np.float64)
        now.plot(hours, over, color=colour, linewidth=0.8, label=_label(result))
        steps = np.diff(np.array(result.timeline.times), append=result.timeline.times[-1]) / 60
        total.plot(hours, np.cumsum(over * steps), color=colour, label=_label(result))
    now.set_ylabel(f"nodes over {target:.0%}")
    total.set_ylabel("node-minutes over target\n(cumulated)")
    total.set_xlabel("hours")
    now.legend(fontsize=8)
    return _save(figure, directory / "over-target.png")


def nodes_in_use(results: Sequence[ProfileResult], directory: Path) -> str:
    figure, axis = plt.subplots(figsize=(9, 3.5))
    for index, result in enumerate(results):
        hours = np.array(result.timeline.times) / HOUR
        colour = COLOURS[index % len(COLOURS)]
        axis.plot(hours, result.timeline.nodes_in_use, color=colour, linewidth=0.9, label=_label(result))
    axis.set_xlabel("hours")
    axis.set_ylabel("nodes with a pod")
    axis.legend(fontsize=8)
    return _save(figure, directory / "nodes-in-use.png")


def write_report(
    directory: Path, target: float, results: Sequence[ProfileResult], facts: dict[str, str]
) -> Path:
    """Write the plots and index.html into ``directory`` (created if needed); the page's path."""
    directory.mkdir(parents=True, exist_ok=True)
    figures = [
        ("Node CPU over time", heat_maps(results, target, directory)),
        ("How busy the nodes were", distribution(results, target, directory)),
        ("Nodes over the target", over_target(results, target, directory)),
        ("Nodes in use (the cost side)", nodes_in_use(results, directory)),
    ]
    rows = [result.as_json() for result in results]
    measures = [key for key in rows[0] if key not in ("name", "config")] if rows else []
    header = "".join(f"<th>{html.escape(_label(result))}</th>" for result in results)
    body = "".join(
        f"<tr><td>{html.escape(key)}</td>"
        + "".join(f"<td>{html.escape(_cell(row[key]))}</td>" for row in rows)
        + "</tr>"
        for key in measures
    )
    about = "".join(
        f"<tr><td>{html.escape(key)}</td><td>{html.escape(value)}</td></tr>" for key, value in facts.items()
    )
    images = "".join(
        f'<h2>{html.escape(title)}</h2><img src="{html.escape(name)}" alt="{html.escape(title)}">'
        for title, name in figures
    )
    page = directory / "index.html"
    page.write_text(
        f"""<!doctype html>
<html><head><meta charset="utf-8"><title>secsched replay</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 1500px; color: #1f2328; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #d0d7de; padding: 4px 10px; text-align: right; }}
th {{ background: #f6f8fa; }} td:first-child {{ text-align: left; font-weight: 600; }}
img {{ max-width: 100%; }} .note {{ color: #57606a; }}
</style></head><body>
<h1>Replay: the profiles side by side</h1>
<p class="note">Each profile scheduled the same trace, from the same starting cluster, with the
scheduler's own framework and plugins; the load-aware plugins read simulated metrics. Node CPU is use
over capacity (target {target:.0%}), measured every simulated minute. docs/replay.md explains each
measure and the limits of a replay.</p>
<table><thead><tr><th>measure</th>{header}</tr></thead><tbody>{body}</tbody></table>
{images}
<h2>About this replay</h2>
<table><tbody>{about}</tbody></table>
</body></html>
"""
    )
    return page


def _cell(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, float):
        return f"{value:,.4g}"
    return str(value)
