"""Draw docs/architecture.png from the real import graph, and write its edge table into architecture.md.

Run it from the repository root after changing what imports what:

    .venv/bin/python docs/architecture.py

It reads every module under ``src/`` with ``ast`` (nothing is imported or run) through
``secsched_devtools.importgraph``, as ``tests/unit/test_import_graph.py`` does: every import
counts, those inside functions too (they run when the function does), except those under
``if TYPE_CHECKING:``. A module belongs
to a *part*: its sub-package (``config``, ``framework``, ...) or, at the top of a package, the
module itself (``pluginapi``, ``safeyaml``, ...). Parts are drawn in layers by the longest
chain of imports below them, so every arrow points down; only the arrows no longer chain
implies are drawn (the transitive reduction), and the table written between the
``<!-- import-graph -->`` markers of architecture.md lists every edge with its import count.
The test forbids cycles between parts, so the layering always exists; a cycle stops the script.
"""

from __future__ import annotations

import argparse
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after matplotlib.use: the backend must be chosen first
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from secsched_devtools.importgraph import ModuleFile, imports_of, module_files

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "src"
PICTURE = REPO / "docs" / "architecture.png"
DOCUMENT = REPO / "docs" / "architecture.md"
MARKERS = ("<!-- import-graph -->", "<!-- /import-graph -->")

ROLES: dict[str, tuple[str, str]] = {
    # part -> (role shown in the legend, colour)
    "cli": ("commands", "#f6d7a7"),
    "kube": ("Kubernetes API layer", "#c9e4f6"),
    "config": ("configuration", "#d9ead3"),
    "apischema": ("configuration", "#d9ead3"),
    "framework": ("scheduling framework", "#e5d4ef"),
    "pluginapi": ("scheduling framework", "#e5d4ef"),
    "plugins": ("plugins", "#f4cccc"),
    "scheduler": ("scheduler and operator (what the images run)", "#fff2cc"),
    "operator": ("scheduler and operator (what the images run)", "#fff2cc"),
    "replay": ("replay", "#d0e0e3"),
}
SHARED = ("shared modules", "#ffffff")


def modules() -> dict[str, ModuleFile]:
    """Every module of every package under src/, by dotted name."""
    found: dict[str, ModuleFile] = {}
    for init in sorted(SOURCES.glob("*/__init__.py")):
        found.update(module_files(init.parent))
    return found


def part(name: str) -> str | None:
    """``secondary_scheduler.framework.runtime`` -> ``framework``; a package's own __init__ -> None."""
    pieces = name.split(".")
    return pieces[1] if len(pieces) > 1 else None


@dataclass
class Graph:
    edges: dict[tuple[str, str], int]
    """(importing part, imported part) -> how many module imports make the edge."""
    sizes: dict[str, tuple[int, int]]
    """part -> (modules, lines)."""


def read_graph() -> Graph:
    known = modules()
    edges: dict[tuple[str, str], int] = defaultdict(int)
    sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    ours = {name.split(".")[0] for name in known}
    for module_name, module in known.items():
        source = part(module_name)
        if source is None:
            continue
        sizes[source][0] += 1
        sizes[source][1] += len(module.path.read_text().splitlines())
        for name in imports_of(module_name, module, known):
            if name.split(".")[0] not in ours:
                continue  # the standard library or a third party
            target = part(name)
            if target is not None and target != source:
                edges[(source, target)] += 1
    return Graph(dict(edges), {name: (count, lines) for name, (count, lines) in sizes.items()})


def layers(parts: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """part -> the length of the longest chain of imports below it (0: imports no other part)."""
    below: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        below[source].add(target)
    depth: dict[str, int] = {}
    visiting: set[str] = set()

    def of(name: str) -> int:
        if name in depth:
            return depth[name]
        if name in visiting:
            raise SystemExit(f"import cycle through {name}: tests/unit/test_import_graph.py says where")
        visiting.add(name)
        depth[name] = 1 + max((of(target) for target in below[name]), default=-1)
        return depth[name]

    for name in parts:
        of(name)
    return depth


def transitive_reduction(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges not implied by a longer chain (for an acyclic graph)."""
    following: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        following[source].add(target)

    def reachable_without(source: str, target: str) -> bool:
        todo = [step for step in following[source] if step != target]
        seen = set(todo)
        while todo:
            node = todo.pop()
            if node == target:
                return True
            for step in following[node] - seen:
                seen.add(step)
                todo.append(step)
        return False

    return {(source, target) for source, target in edges if not reachable_without(source, target)}


SHARED_LEAVES_MAX_LINES = 400
"""A top-level module this small that imports no other part (certs.py, safeyaml.py...) is drawn in
one strip at the bottom, its importers named in it, instead of with an arrow from each."""


def shared_leaves(graph: Graph) -> list[str]:
    importing = {source for source, _ in graph.edges}
    return sorted(
        name
        for name, (count, lines) in graph.sizes.items()
        if count == 1 and lines <= SHARED_LEAVES_MAX_LINES and name not in importing
    )


@dataclass
class Layout:
    rows: dict[int, list[str]]
    """layer -> its boxes and waypoints, left to right; a waypoint is ``(source, target, layer)``
    spelled ``source>target@layer``, where an arrow crossing several layers passes."""
    segments: dict[tuple[str, str], list[str]]
    """drawn edge -> the boxes and waypoints it passes, top to bottom."""


def layout(parts: list[str], edges: set[tuple[str, str]]) -> Layout:
    """Sugiyama's layering: every box on the layer of its longest chain, each arrow that crosses
    layers given a waypoint on each, so arrows go around boxes; rows ordered to uncross them."""
    depth = layers(parts, edges)
    rows: dict[int, list[str]] = defaultdict(list)
    for name in parts:
        rows[depth[name]].append(name)
    segments: dict[tuple[str, str], list[str]] = {}
    for source, target in sorted(edges):
        chain = [source]
        for level in range(depth[source] - 1, depth[target], -1):
            waypoint = f"{source}>{target}@{level}"
            rows[level].append(waypoint)
            chain.append(waypoint)
        segments[(source, target)] = [*chain, target]
    neighbours: dict[str, set[str]] = defaultdict(set)
    for chain in segments.values():
        for upper, lower in itertools.pairwise(chain):
            neighbours[upper].add(lower)
            neighbours[lower].add(upper)
    ordered = {level: sorted(names) for level, names in rows.items()}
    for _ in range(12):  # barycentre sweeps; ties keep the previous order, so every run draws the same
        position = {
            name: index / max(1, len(names) - 1)
            for names in ordered.values()
            for index, name in enumerate(names)
        }
        for level, names in ordered.items():

            def centre(name: str, current: dict[str, float] = position) -> float:
                near = [current[other] for other in neighbours[name]]
                return sum(near) / len(near) if near else current[name]

            ordered[level] = sorted(
                names, key=lambda name: (round(centre(name), 6), ordered[level].index(name))
            )
    return Layout(ordered, segments)


def smoothed(points: list[tuple[float, float]], rounds: int = 4) -> list[tuple[float, float]]:
    """An arrow through waypoints as a curve (Chaikin's corner cutting); its ends stay put."""
    for _ in range(rounds if len(points) > 2 else 0):
        cut = [points[0]]
        for (x1, y1), (x2, y2) in itertools.pairwise(points):
            cut += [
                (0.75 * x1 + 0.25 * x2, 0.75 * y1 + 0.25 * y2),
                (0.25 * x1 + 0.75 * x2, 0.25 * y1 + 0.75 * y2),
            ]
        points = [*cut, points[-1]]
    return points


def draw(graph: Graph, path: Path) -> None:
    leaves = shared_leaves(graph)
    parts = sorted(name for name in graph.sizes if name not in leaves)
    edges = {(source, target) for source, target in graph.edges if target not in leaves}
    drawn = transitive_reduction(edges)
    plan = layout(parts, drawn)
    top = max(plan.rows)
    width, row_height, box_w, box_h, waypoint_w, gap = 13.0, 1.05, 2.2, 0.6, 0.3, 0.55
    figure, axes = plt.subplots(figsize=(width, row_height * (top + 2) + 1.4))
    axes.set_xlim(0, width)
    axes.set_ylim(-row_height - 0.6, row_height * (top + 1) + 0.5)
    axes.axis("off")
    centre: dict[str, tuple[float, float]] = {}
    for level, names in plan.rows.items():
        widths = [waypoint_w if ">" in name else box_w for name in names]
        x = (width - sum(widths) - gap * (len(names) - 1)) / 2
        for name, box_width in zip(names, widths, strict=True):
            centre[name] = (x + box_width / 2, row_height * level)
            x += box_width + gap
    for chain in plan.segments.values():
        points = []
        for index, name in enumerate(chain):
            x, y = centre[name]
            if ">" in name:
                points.append((x, y))
                continue
            points.append((x, y - box_h / 2) if index == 0 else (x, y + box_h / 2))
        points = smoothed(points)
        xs, ys = zip(*points, strict=True)
        axes.plot(xs[:-1], ys[:-1], color="#555555", linewidth=0.9, zorder=1)
        axes.add_patch(
            FancyArrowPatch(
                points[-2],
                points[-1],
                arrowstyle="-|>",
                mutation_scale=11,
                color="#555555",
                linewidth=0.9,
                zorder=1,
            )
        )

    def box(x: float, y: float, w: float, colour: str, title: str, detail: str) -> None:
        axes.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - box_h / 2),
                w,
                box_h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                facecolor=colour,
                edgecolor="#333333",
                linewidth=1.0,
                zorder=2,
            )
        )
        axes.text(x, y + 0.1, title, ha="center", va="center", fontsize=11, weight="bold", zorder=3)
        axes.text(x, y - 0.15, detail, ha="center", va="center", fontsize=8, zorder=3)

    def size(name: str) -> str:
        count, lines = graph.sizes[name]
        return f"{count} module{'s' if count > 1 else ''}, {lines:,} lines"

    for name, (x, y) in centre.items():
        if ">" not in name:
            count = graph.sizes[name][0]
            box(x, y, box_w, ROLES.get(name, SHARED)[1], name if count > 1 else f"{name}.py", size(name))
    if leaves:
        users = sorted({source for source, target in graph.edges if target in leaves})
        box(
            width / 2,
            -row_height,
            width - 1.0,
            SHARED[1],
            "   ".join(f"{name}.py" for name in leaves),
            "small shared modules, imported by " + ", ".join(users) + " (arrows left out)",
        )
    legend = {role: colour for role, colour in [*ROLES.values(), SHARED]}
    for index, (role, colour) in enumerate(legend.items()):
        x = 0.3 + (index % 4) * 3.2
        y = row_height * (top + 1) + 0.2 - (index // 4) * 0.3
        axes.add_patch(
            FancyBboxPatch(
                (x, y - 0.09), 0.22, 0.18, boxstyle="round,pad=0.01", facecolor=colour, edgecolor="#333333"
            )
        )
        axes.text(x + 0.32, y, role, va="center", fontsize=8.5)
    axes.text(
        width / 2,
        -row_height - 0.5,
        "An arrow: the upper part imports the lower one; arrows implied by a longer chain are left out.\n"
        "Drawn by docs/architecture.py from the source's imports; architecture.md lists every edge.",
        ha="center",
        va="center",
        fontsize=8.5,
        color="#444444",
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)


def edge_table(graph: Graph) -> str:
    """Every edge between parts, highest layer first, as a Markdown table."""
    depth = layers(graph.sizes, graph.edges)
    drawn = transitive_reduction(set(graph.edges))
    by_source: dict[str, list[str]] = defaultdict(list)
    for (source, target), count in sorted(
        graph.edges.items(), key=lambda item: (-depth[item[0][1]], item[0][1])
    ):
        mark = "" if (source, target) in drawn else " (implied)"
        by_source[source].append(f"{target} {count}{mark}")
    lines = ["| part | modules, lines | imports (module imports that make the edge) |", "|---|---|---|"]
    for name in sorted(graph.sizes, key=lambda name: (-depth[name], name)):
        count, size = graph.sizes[name]
        lines.append(f"| `{name}` | {count}, {size:,} | {', '.join(by_source[name]) or 'no other part'} |")
    return "\n".join(lines)


def update_document(graph: Graph, document: Path) -> None:
    text = document.read_text()
    start, end = MARKERS
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{document}: the markers {start} ... {end} are missing")
    document.write_text(pattern.sub(lambda _: f"{start}\n{edge_table(graph)}\n{end}", text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--picture", type=Path, default=PICTURE)
    parser.add_argument("--document", type=Path, default=DOCUMENT)
    args = parser.parse_args()
    graph = read_graph()
    draw(graph, args.picture)
    update_document(graph, args.document)
    print(f"wrote {args.picture} and the import-graph table of {args.document}")


if __name__ == "__main__":
    main()
