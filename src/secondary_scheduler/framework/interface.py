"""Plugin base classes, one per extension point, and the per-cycle state they share.

A plugin is a small class with a ``name`` and the methods of the extension points it
implements; it is built once per profile with ``(args, handle)``. Filter and Score work
on many nodes per call: they get the candidate node slots and answer with arrays aligned
with them, so a plugin can use numpy over the NodeTable's columns. A plugin subclasses the
bases of its extension points and overrides their methods (the bases' raise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar

from secondary_scheduler.config.base import ConfigModel
from secondary_scheduler.config.model import ExtensionPoint
from secondary_scheduler.framework.aliases import BoolArray, IntArray, Slots
from secondary_scheduler.framework.args import validated_args
from secondary_scheduler.framework.diagnosis import Diagnosis
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.status import Status

_Data = TypeVar("_Data")
_PluginT = TypeVar("_PluginT", bound="Plugin")


class Note(Protocol):
    """What a plugin's decision in one cycle was based on, for ``secsched score`` to print."""

    @property
    def plugin(self) -> str: ...

    def lines(self) -> list[str]: ...


class CycleState:
    """Data plugins pass from one extension point to the next within one pod's scheduling cycle."""

    def __init__(self) -> None:
        self._data: dict[str, object] = {}
        self.notes: dict[str, Note] = {}
        """Plugin -> what its decision was based on (explanations; never read by other plugins)."""
        self.skip_filter_plugins: set[str] = set()
        """Plugins whose PreFilter returned Skip: their Filter is not called."""
        self.pre_filter_nodes: frozenset[str] | None = None
        """The only nodes PreFilter allows (the intersection of the plugins' ``PreFilterResult``s);
        None: every node. The others are not filtered and count as rejected unresolvably."""
        self.pre_filter_narrowed_by: frozenset[str] = frozenset()
        """The plugins whose PreFilter returned node names (upstream's pluginsWithNodes)."""
        self.skip_score_plugins: set[str] = set()
        """Plugins whose PreScore returned Skip: their Score is not called."""

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def add_note(self, note: Note) -> None:
        """Explain this cycle's decision of ``note.plugin`` (``secsched score`` prints the lines)."""
        self.notes[note.plugin] = note

    def read(self, key: str, kind: type[_Data]) -> _Data | None:
        """The value under ``key`` if it is a ``kind`` (None when a Pre* step did not run)."""
        value = self._data.get(key)
        return value if isinstance(value, kind) else None


class QueuedPodInfo(Protocol):
    """What QueueSort compares: the pod and when it entered the queue (the runtime's queue entry)."""

    @property
    def pod(self) -> PodInfo: ...

    @property
    def timestamp(self) -> float: ...


class FilterError(Exception):
    """Raised by a Filter that cannot decide (an object it needs is gone, not a rejection).

    The cycle ends with an Error status whose message is the exception's text, as
    kube-scheduler's ``running "X" filter plugin: ...``; the pod is retried with backoff.
    """


class Rejection(NamedTuple):
    """The candidates a Filter rejects for one reason: ``mask`` is aligned with the candidates."""

    mask: BoolArray
    reason: str
    unresolvable: bool = False
    """UnschedulableAndUnresolvable: removing pods from the node would not help."""


class Plugin:
    """A plugin: its ``name`` and ``args_model`` are all the registry and the config loader need.

    The extension points it runs at follow from the bases it subclasses; the config loader
    validates its ``pluginConfig`` args with ``args_model`` (defaults live there, and only
    there) and the framework builds it with that validated model (``args_model()`` when the
    profile gives none; None when it takes no args).
    """

    name: ClassVar[str]
    args_model: ClassVar[type[ConfigModel] | None] = None
    enabled_warning: ClassVar[str | None] = None
    """Said by ``config validate`` when a profile enables the plugin by name (a known limitation)."""

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    @classmethod
    def build(cls: type[_PluginT], args: object, handle: Handle) -> _PluginT:
        """The plugin as the framework builds it: ``args`` validated by ``args_model`` (None: defaults)."""
        return cls(validated_args(cls, args), handle)

    def events_to_register(self) -> Sequence[ClusterEventWithHint] | None:
        """The cluster events that can undo this plugin's rejections (None: any event can).

        A pod this plugin found unschedulable waits until one of these happens (and its
        hint, if any, says the change may help), as kube-scheduler's EnqueueExtensions.
        """
        return None

    @classmethod
    def extension_points(cls) -> frozenset[ExtensionPoint]:
        """Where this plugin can be enabled, from its bases."""
        return frozenset(point for base, point in _POINT_OF_BASE.items() if issubclass(cls, base))


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether ``a`` should be scheduled before ``b``."""
        raise NotImplementedError


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Success lets the pod into the active queue; anything else parks it."""
        raise NotImplementedError


PodPredicate = Callable[[PodInfo], bool]


class PreFilterResult(NamedTuple):
    """A PreFilter's success that allows only these nodes (upstream's ``PreFilterResult.NodeNames``).

    The framework intersects the sets of every plugin that returns one and filters only the
    nodes left; a name no node has is ignored. Return plain ``SUCCESS`` to allow every node.
    """

    node_names: frozenset[str]


def reads_no_pod(other: PodInfo) -> bool:
    """``PreFilterPlugin.pods_read`` of a plugin whose PreFilter depends on no other pod."""
    return False


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status | PreFilterResult:
        """Precompute for Filter; Skip means this plugin's Filter has nothing to check; a
        ``PreFilterResult`` is a success that narrows the nodes to filter."""
        raise NotImplementedError

    def pods_read(self, pod: PodInfo) -> PodPredicate | None:
        """Which other pods PreFilter's output for ``pod`` depends on; None (the default): maybe any.

        What kube-scheduler's PreFilterExtensions (AddPod, RemovePod) are for: when a what-if
        adds or removes pods (nominated pods counted on a node, preemption's dry run), the
        runtime runs PreFilter again only if a plugin reads one of them, else reuses its output.
        """
        return None


class FilterPlugin(Plugin):
    reads_node_pods: ClassVar[bool] = True
    """Whether Filter reads which pods are on a node (``table.pods``, ``pods_in_namespace``, a pod
    index), not only the node's totals (``requested``, ``non_zero_requested``, ``pod_count``,
    ``used_ports``), its own fields and PreFilter's output. When no Filter that runs for a pod
    reads them, pods moved for a moment (nominated pods counted, preemption's dry run) move in
    the totals alone, which is much cheaper; True (the default) is always safe."""

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, candidates: Slots) -> list[Rejection]:
        """The rejected candidates, grouped by reason; a candidate in no group passes."""
        raise NotImplementedError


class PostFilterResult(NamedTuple):
    status: Status
    """Success: room was made (the pod is requeued to take it); else why nothing could be done."""
    nominated_node: str | None = None
    """Where the pod should go once the room is free, "" to take back an earlier nomination, None
    to leave it as it is. The framework keeps it in memory at once (nominated pods' room is kept
    for them) and writes it to ``status.nominatedNodeName`` with the PodScheduled condition."""


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Diagnosis
    ) -> PostFilterResult:
        """Called when no node fits: make the pod fit somewhere (preemption) or say why not."""
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> Status:
        """Precompute for Score over the feasible ``nodes``; Skip means nothing to score."""
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        """Raw scores of the feasible ``nodes``."""
        raise NotImplementedError

    def normalize(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """Scores brought into [0, 100]; raw scores already in range are kept as they are."""
        return scores


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Claim plugin-side resources for the pod on the node, before binding."""
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Undo ``reserve``: called when a later step fails; must not fail itself."""
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Allow (Success), deny (Unschedulable) or hold (Wait, with a timeout in seconds).

        A held pod waits in ``handle.waiting_pods`` until this plugin allows it (or rejects
        it, or the timeout passes); it keeps its room on the node meanwhile.
        """
        raise NotImplementedError


class PreBindPlugin(Plugin):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Prepare the node for the pod (e.g. attach volumes); a failure aborts binding."""
        raise NotImplementedError


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind the pod, or return Skip to let the next bind plugin do it."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Informational: the pod is bound."""
        raise NotImplementedError


_POINT_OF_BASE: dict[type[Plugin], ExtensionPoint] = {
    QueueSortPlugin: ExtensionPoint.QUEUE_SORT,
    PreEnqueuePlugin: ExtensionPoint.PRE_ENQUEUE,
    PreFilterPlugin: ExtensionPoint.PRE_FILTER,
    FilterPlugin: ExtensionPoint.FILTER,
    PostFilterPlugin: ExtensionPoint.POST_FILTER,
    PreScorePlugin: ExtensionPoint.PRE_SCORE,
    ScorePlugin: ExtensionPoint.SCORE,
    ReservePlugin: ExtensionPoint.RESERVE,
    PermitPlugin: ExtensionPoint.PERMIT,
    PreBindPlugin: ExtensionPoint.PRE_BIND,
    BindPlugin: ExtensionPoint.BIND,
    PostBindPlugin: ExtensionPoint.POST_BIND,
}
