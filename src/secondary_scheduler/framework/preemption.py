"""``DefaultPreemption`` without preemption: kube-scheduler's PostFilter message, no evictions.

This scheduler never evicts pods to make room. Keeping a PostFilter named
DefaultPreemption lets a kube-scheduler profile run unchanged and puts the same
"preemption: ..." part in the FailedScheduling message, worded as kube-scheduler words it
when it finds nothing to evict: nodes rejected for resolvable reasons (resources, ports,
anti-affinity) read "No preemption victims found for incoming pod", the others "Preemption
is not helpful for scheduling". Args (candidate node percentages) are accepted and unused.
"""

from __future__ import annotations

from typing import ClassVar

from secondary_scheduler.config.plugin_args import DefaultPreemptionArgs
from secondary_scheduler.framework.diagnosis import Diagnosis, fit_error_message
from secondary_scheduler.framework.interface import CycleState, PostFilterPlugin, PostFilterResult
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import Code, Status

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


class DefaultPreemption(PostFilterPlugin):
    name: ClassVar[str] = "DefaultPreemption"
    args_model = DefaultPreemptionArgs

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        if pod.preemption_policy == "Never":
            return PostFilterResult(
                Status.unschedulable("preemption: not eligible due to preemptionPolicy=Never.")
            )
        nodes = [table.names[slot] for slot in table.active_slots()]
        might_help = sum(diagnosis.status_of(name).code == Code.UNSCHEDULABLE for name in nodes)
        counts = {NO_VICTIMS: might_help, NOT_HELPFUL: len(nodes) - might_help}
        message = fit_error_message(len(nodes), {reason: count for reason, count in counts.items() if count})
        return PostFilterResult(Status.unschedulable(f"preemption: {message}"))
