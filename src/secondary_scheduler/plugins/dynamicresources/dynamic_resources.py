"""DynamicResources: a pod with ``spec.resourceClaims`` is never bound as if it had none.

kube-scheduler 1.34 allocates such claims from ResourceSlices (structured parameters).
This scheduler does not allocate claims yet, so rather than place the pod where its
devices may not exist, PreFilter rejects it (UnschedulableAndUnresolvable: no preemption
can help) with a message that says so and what to do. Pods without claims are skipped,
as upstream's PreFilter skips them; its PostFilter, which runs before preemption, has no
claims to free and says so, as upstream's does. ``secsched config validate`` warns when a profile
enables the plugin explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import (
    CycleState,
    PodPredicate,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    reads_no_pod,
)
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import SKIP, Status
from secondary_scheduler.plugins.dynamicresources.limitation import ENABLED_WARNING

UNSUPPORTED = (
    "pod has resourceClaims, and this scheduler does not allocate ResourceClaims (DynamicResources) yet: "
    "schedule this pod with the cluster's default scheduler"
)


NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
"""Upstream's PostFilter answer for a pod whose claims it cannot free: part of every FailedScheduling text."""


class DynamicResources(PreFilterPlugin, PostFilterPlugin):
    name: ClassVar[str] = "DynamicResources"
    enabled_warning: ClassVar[str | None] = ENABLED_WARNING

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """Before preemption, upstream tries to deallocate claims: with none to free, it says so."""
        return PostFilterResult(Status.unschedulable(NO_CLAIMS_TO_DEALLOCATE))

    def pods_read(self, pod: PodInfo) -> PodPredicate:
        return reads_no_pod  # its PreFilter reads the pod and objects, never other pods

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        if not (pod.obj.get("spec") or {}).get("resourceClaims"):
            return SKIP
        return Status.unschedulable(UNSUPPORTED, unresolvable=True)
