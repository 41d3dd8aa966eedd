"""The scheduling framework: node state, pod parsing, plugin interfaces and the plugin runtime.

The scheduling cycle that runs the plugins (from the queue to the Binding) is
``secondary_scheduler.scheduler.schedule_one``.

The plugin registry is ``secondary_scheduler.plugins.registry``: it imports the plugins,
which import this package, and the framework names no plugin. Plugins written outside
this package import ``secondary_scheduler.pluginapi`` instead of this package.
"""

from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, Plugin, QueuedPodInfo, Rejection
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.profile import ExtensionPoint, ProfileLike, ProfileSpec
from secondary_scheduler.framework.result import Explanation, ScheduleResult
from secondary_scheduler.framework.runtime import Framework, PermitResult
from secondary_scheduler.framework.status import Code, Status

__all__ = [
    "Code",
    "CycleState",
    "Diagnosis",
    "Explanation",
    "ExtensionPoint",
    "Framework",
    "Handle",
    "NodeTable",
    "PermitResult",
    "Plugin",
    "PodInfo",
    "ProfileLike",
    "ProfileSpec",
    "QueuedPodInfo",
    "Rejection",
    "ScheduleResult",
    "Status",
]
