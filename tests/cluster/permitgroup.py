"""A Permit plugin of the tests': pods of a group wait for each other and bind together.

Loaded into the scheduler process with ``--plugin tests.cluster.permitgroup:GroupPermit``
(the process runs from the repository root, which is on its ``sys.path``). A pod labelled
``permit.secsched.io/group: NAME`` is held (Permit ``Wait``) until ``quorum`` pods of that
group, in its namespace, have reached Permit; the last one allows all the others, as
scheduler-plugins' Coscheduling does. A group that never completes times out after
``timeoutSeconds``: its pods are unreserved and requeued. Pods without the label pass.
"""

from __future__ import annotations

import logging

from pydantic import Field

from secondary_scheduler.pluginapi import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    PermitPlugin,
    PluginArgs,
    PodInfo,
    Status,
)

GROUP_LABEL = "permit.secsched.io/group"
log = logging.getLogger(__name__)


class GroupPermitArgs(PluginArgs):
    quorum: int = Field(3, ge=1)
    """How many pods of a group must be waiting (this one included) before they all go."""
    timeout_seconds: float = Field(30.0, gt=0)


class GroupPermit(PermitPlugin):
    name = "GroupPermit"
    args_model = GroupPermitArgs

    def __init__(self, args: GroupPermitArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.args = args

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        group = pod.labels.get(GROUP_LABEL)
        if group is None:
            return SUCCESS, 0.0
        waiting = [
            other
            for other in self.handle.waiting_pods
            if other.pod.namespace == pod.namespace and other.pod.labels.get(GROUP_LABEL) == group
        ]
        if len(waiting) + 1 < self.args.quorum:
            # The tests wait for this line: the pod is held on its node, its room taken.
            log.info(
                "GroupPermit holds %s/%s at Permit (%d of %d)",
                pod.namespace,
                pod.name,
                len(waiting) + 1,
                self.args.quorum,
            )
            return Status(Code.WAIT), self.args.timeout_seconds
        for other in waiting:
            other.allow(self.name)
        return SUCCESS, 0.0
