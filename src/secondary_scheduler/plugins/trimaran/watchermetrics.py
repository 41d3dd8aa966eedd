"""The load-watcher ``WatcherMetrics`` document and Trimaran's reading of it.

Field aliases are the JSON keys load-watcher writes, so a ``GET /watcher`` body (or the
library-mode equivalent) parses as is; every part is optional because upstream's decoder
leaves missing parts at their zero value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

CPU = "CPU"
MEMORY = "Memory"
AVERAGE = "AVG"
STD = "STD"
LATEST = "Latest"


class _WatcherModel(BaseModel):
    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """Go encodes nil slices and maps as null; decoding leaves such fields at their zero value."""
        if isinstance(data, Mapping):
            return {key: value for key, value in data.items() if value is not None}
        return data


class Metric(_WatcherModel):
    """One measurement of a node; ``value`` is a percentage of the node's capacity."""

    name: str = ""
    type: str = ""
    operator: str = ""
    rollup: str = ""
    value: float = 0.0


class Metadata(_WatcherModel):
    data_center: str = Field(default="", alias="dataCenter")


class NodeMetrics(_WatcherModel):
    metrics: list[Metric] = Field(default_factory=list)
    tags: dict[str, Any] = Field(default_factory=dict)
    metadata: Metadata = Field(default_factory=Metadata)


class Window(_WatcherModel):
    """The period the metrics cover; ``start`` and ``end`` are Unix seconds."""

    duration: str = ""
    start: int = 0
    end: int = 0


class Data(_WatcherModel):
    node_metrics_map: dict[str, NodeMetrics] = Field(default_factory=dict, alias="NodeMetricsMap")


class WatcherMetrics(_WatcherModel):
    """A whole snapshot: every node's metrics for one window."""

    timestamp: int = 0
    window: Window = Field(default_factory=Window)
    source: str = ""
    data: Data = Field(default_factory=Data)

    @classmethod
    def parse(cls, document: Mapping[str, Any]) -> WatcherMetrics:
        """Validate a decoded JSON document."""
        return cls.model_validate(document)

    def node_metrics(self, node_name: str) -> list[Metric] | None:
        """The node's metrics, or None when it has none (absent or empty, as upstream's decoder sees it)."""
        entry = self.data.node_metrics_map.get(node_name)
        if entry is None or not entry.metrics:
            return None
        return entry.metrics


@dataclass(frozen=True)
class ResourceData:
    """Average and standard deviation of one resource, in percent; ``valid`` if any metric of it exists."""

    avg: float
    stdev: float
    valid: bool


@dataclass(frozen=True)
class ResourceDataArrays:
    """``ResourceData`` for many nodes, one entry per node (0 where not valid)."""

    avg: npt.NDArray[np.float64]
    stdev: npt.NDArray[np.float64]
    valid: npt.NDArray[np.bool_]


def resource_data(metrics: Sequence[Metric], resource_type: str) -> ResourceData:
    """Trimaran's GetResourceData: AVG wins; an operator-less or Latest value stands in until one is seen."""
    avg = 0.0
    stdev = 0.0
    avg_found = False
    valid = False
    for metric in metrics:
        if metric.type != resource_type:
            continue
        valid = True
        if metric.operator == AVERAGE:
            avg = metric.value
            avg_found = True
        elif metric.operator == STD:
            stdev = metric.value
        elif metric.operator in ("", LATEST) and not avg_found:
            avg = metric.value
    return ResourceData(avg=avg, stdev=stdev, valid=valid)


def resource_data_arrays(
    snapshot: WatcherMetrics | None, node_names: Sequence[str], resource_type: str
) -> ResourceDataArrays:
    """``resource_data`` per node; nodes without metrics (or no snapshot yet) are not valid."""
    empty = ResourceData(avg=0.0, stdev=0.0, valid=False)
    rows = [
        resource_data(metrics, resource_type) if metrics is not None else empty
        for metrics in node_metrics_list(snapshot, node_names)
    ]
    return ResourceDataArrays(
        avg=np.array([row.avg for row in rows], dtype=np.float64),
        stdev=np.array([row.stdev for row in rows], dtype=np.float64),
        valid=np.array([row.valid for row in rows], dtype=np.bool_),
    )


def node_metrics_list(
    snapshot: WatcherMetrics | None, node_names: Sequence[str]
) -> list[list[Metric] | None]:
    """Each node's metrics in order, None where there are none (every node before the first fetch)."""
    if snapshot is None:
        return [None] * len(node_names)
    return [snapshot.node_metrics(name) for name in node_names]
