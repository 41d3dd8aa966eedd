"""The sections of a benchmark run, in the order docs/benchmarks.md shows them.

A section measures something at every cluster size and renders Markdown. To add one
(placement quality, say): write a class with ``name``, ``title``, ``async measure(context)``
(called once per cluster size, in increasing order, on the same cluster) and
``render(run) -> str`` (the section's Markdown body; ``bench.runinfo.Section``), then add it
to ``SECTIONS``. `python -m bench --only <name>` runs just it and replaces just its part of
docs/benchmarks.md, between ``<!-- section: <name> -->`` and ``<!-- /section: <name> -->``.

This table is the top of the section modules: it imports them, none imports it.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.context import BenchOptions
from bench.gang import GangSection
from bench.placement import PlacementSection
from bench.runinfo import Section
from bench.throughput import ThroughputSection
from bench.volumes import VolumesSection
from bench.workloads import WorkloadsSection

SECTIONS: dict[str, Callable[[BenchOptions], Section]] = {
    "throughput": ThroughputSection,
    "workloads": WorkloadsSection,
    "volumes": VolumesSection,
    "gang": GangSection,
    "placement": PlacementSection,
}
