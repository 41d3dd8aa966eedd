"""The plugin API: everything a scheduling plugin written outside this package may use.

Import from here, not from ``secondary_scheduler.framework.*``: the names below are the
public, documented surface (see docs/plugins.md), and they keep their meaning within a
major version: a name is only removed or changed incompatibly in a new major release,
after a release that warns. Everything else in the package may change at any time.

A plugin is a class that subclasses the bases of the extension points it implements,
sets ``name`` (the name profiles enable it by) and, if it takes args, ``args_model`` (a
``PluginArgs`` subclass: camelCase YAML keys, defaults and validation in one place). It is
built once per profile as ``Plugin(args, handle)``. Filter and Score see many nodes per
call (numpy arrays of node slots of the ``NodeTable``) and answer with arrays aligned with
them. Installed packages announce plugins with an entry point in the group
``secondary_scheduler.plugins`` (``Name = "package.module:Class"``).
"""

from __future__ import annotations

from secondary_scheduler.config.base import ConfigModel as PluginArgs
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.framework.aliases import BoolArray, FloatArray, IntArray, KubeObject, Slots
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from secondary_scheduler.framework.handle import Handle, Service, Snapshot
from secondary_scheduler.framework.informers import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    Informer,
    Resource,
)
from secondary_scheduler.framework.interface import (
    BindPlugin,
    CycleState,
    FilterError,
    FilterPlugin,
    Note,
    PermitPlugin,
    Plugin,
    PodPredicate,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    Rejection,
    ReservePlugin,
    ScorePlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.labelcolumn import MISSING as LABEL_MISSING
from secondary_scheduler.framework.labelcolumn import LabelColumn
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import MAX_NODE_SCORE, MIN_NODE_SCORE, default_normalize_score
from secondary_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from secondary_scheduler.framework.waiting import WaitingPod, WaitingPods

API_VERSION = 1
"""The plugin API's major version; a plugin may check it to refuse a scheduler it was not built for."""

__all__ = [
    "API_VERSION",
    "CSI_DRIVERS",
    "CSI_NODES",
    "CSI_STORAGE_CAPACITIES",
    "LABEL_MISSING",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NAMESPACES",
    "NODE",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "POD",
    "POD_DISRUPTION_BUDGETS",
    "PRIORITY_CLASSES",
    "REPLICATION_CONTROLLERS",
    "REPLICA_SETS",
    "SERVICES",
    "SKIP",
    "STATEFUL_SETS",
    "STORAGE_CLASSES",
    "SUCCESS",
    "VOLUME_ATTACHMENTS",
    "ActionType",
    "BindPlugin",
    "BoolArray",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "Diagnosis",
    "ExtensionPoint",
    "FilterError",
    "FilterPlugin",
    "FloatArray",
    "Handle",
    "Informer",
    "IntArray",
    "KubeObject",
    "LabelColumn",
    "NodeTable",
    "Note",
    "PermitPlugin",
    "Plugin",
    "PluginArgs",
    "PodInfo",
    "PodPredicate",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "Rejection",
    "ReservePlugin",
    "Resource",
    "ScorePlugin",
    "Service",
    "Slots",
    "Snapshot",
    "Status",
    "WaitingPod",
    "WaitingPods",
    "default_normalize_score",
    "reads_no_pod",
]
