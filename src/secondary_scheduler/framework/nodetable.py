"""``NodeTable``: the scheduler's view of every node, kept column-wise for numpy.

Each node lives in a *slot*: a row of the resource arrays and an index into the per-node
lists. The runtime's cache applies watch events incrementally (``add_node``,
``update_node``, ``remove_node``, ``add_pod``, ``remove_pod``); a removed node frees its
slot for the next added one, and the arrays double when full. A scheduling cycle runs
without awaiting, so plugins read the live table as their snapshot: nothing is copied per
cycle.

A pod may be added for a node the table does not know yet (the pod's watch event can come
first), and a node may be removed while pods still point at it: such pods wait, uncounted,
until their node appears, exactly as if they were on a node outside the snapshot.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, KeysView, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from secondary_scheduler.framework.aliases import BoolArray, IntArray, KubeObject, Slots
from secondary_scheduler.framework.hostports import HostPort
from secondary_scheduler.framework.labelcolumn import LabelColumn
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.resources import CPU_COLUMN, MEMORY_COLUMN, ResourceIndex
from secondary_scheduler.framework.taints import Taint
from secondary_scheduler.kube.podphase import is_terminal
from secondary_scheduler.kube.quantity import resource_value

_Scalar = TypeVar("_Scalar", bound=np.generic)


class PodIndex(Protocol):
    """Data a plugin derives from the placed pods and keeps up to date (see ``NodeTable.index``).

    ``labels`` are the labels of the pod's node at that moment: a relabelled node's pods are
    removed with its old labels and placed again with its new ones.
    """

    def pod_placed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None: ...

    def pod_removed(self, slot: int, pod: PodInfo, labels: Mapping[str, str]) -> None: ...


_Index = TypeVar("_Index", bound=PodIndex)


ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
_BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: Mapping[str, str]) -> str:
    """A node's zone identity, region and zone together ("" when it has neither), as upstream's GetZoneKey."""
    zone = labels.get(ZONE_LABEL, labels.get(_BETA_ZONE_LABEL, ""))
    region = labels.get(REGION_LABEL, labels.get(_BETA_REGION_LABEL, ""))
    return f"{region}:\x00:{zone}" if region or zone else ""


class _ZoneTree:
    """Node names per zone, zones in order of first appearance: the filters' visiting order."""

    def __init__(self) -> None:
        self._zone_of: dict[str, str] = {}
        self._nodes: dict[str, list[str]] = {}
        """Zone -> its nodes in the order they were added (dicts keep the zones' order)."""
        self._cached: Slots | None = None

    def add(self, name: str, zone: str) -> None:
        """Add a node, or move it to the end of its new zone if its zone changed."""
        current = self._zone_of.get(name)
        if current == zone:
            return
        if current is not None:
            self.remove(name)
        self._zone_of[name] = zone
        self._nodes.setdefault(zone, []).append(name)
        self._cached = None

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        nodes = self._nodes[zone]
        nodes.remove(name)
        if not nodes:
            del self._nodes[zone]
        self._cached = None

    def order(self, slots: Mapping[str, int]) -> Slots:
        if self._cached is None:
            zones = list(self._nodes.values())
            depth = max((len(nodes) for nodes in zones), default=0)
            names = [nodes[level] for level in range(depth) for nodes in zones if level < len(nodes)]
            self._cached = np.array([slots[name] for name in names], dtype=np.intp)
        return self._cached


def _with_rows(array: npt.NDArray[_Scalar], extra: int) -> npt.NDArray[_Scalar]:
    return np.concatenate([array, np.zeros((extra, *array.shape[1:]), dtype=array.dtype)])


@dataclass(frozen=True, slots=True)
class TotalsChange:
    """Pods counted on or off the node totals by ``NodeTable.count_in_totals``, to be undone."""

    counted: Sequence[tuple[int, PodInfo]]
    sign: int
    rows: IntArray | None
    """Each pod's row as counted (None: no pod); ``uncount`` subtracts them again."""
    ported: Sequence[tuple[int, PodInfo]]
    """The pods among ``counted`` with host ports."""


@dataclass(frozen=True, slots=True)
class SavedTotals:
    """Nodes' totals before ``NodeTable.empty_totals`` zeroed them, to be put back."""

    slots: Slots
    requested: IntArray
    non_zero_requested: IntArray
    pod_count: IntArray
    used_ports: Sequence[Counter[HostPort]]


class NodeTable:
    def __init__(self, capacity: int = 64) -> None:
        self.resources = ResourceIndex()
        width = len(self.resources)
        self.allocatable: IntArray = np.zeros((capacity, width), dtype=np.int64)
        """Per slot and resource column: what pods may request in total."""
        self.requested: IntArray = np.zeros((capacity, width), dtype=np.int64)
        """Per slot and resource column: the sum of the requests of the pods on the node."""
        self.non_zero_requested: IntArray = np.zeros((capacity, 2), dtype=np.int64)
        """Per slot: cpu and memory requested, counting 100m/200Mi for containers that set none (scoring)."""
        self.pod_count: IntArray = np.zeros(capacity, dtype=np.int64)
        self.active: BoolArray = np.zeros(capacity, dtype=np.bool_)
        """Whether the slot holds a node."""
        self.unschedulable: BoolArray = np.zeros(capacity, dtype=np.bool_)
        """``spec.unschedulable`` (cordoned)."""
        self.names: list[str] = [""] * capacity
        self.objects: list[KubeObject | None] = [None] * capacity
        """Per slot: the Node as last added or updated (for callers that show more than the columns)."""
        self.labels: list[Mapping[str, str]] = [{}] * capacity
        self.taints: list[tuple[Taint, ...]] = [()] * capacity
        self.tainted: BoolArray = np.zeros(capacity, dtype=np.bool_)
        """Whether the node has any taint (most have none: taint checks visit only these)."""
        self.used_ports: list[Counter[HostPort]] = [Counter() for _ in range(capacity)]
        self.pods: list[dict[str, PodInfo]] = [{} for _ in range(capacity)]
        """Per slot: pod key -> PodInfo of the pods on the node (bound or assumed)."""
        self.images: list[Mapping[str, int]] = [{}] * capacity
        """Per slot: image name -> size in bytes, from ``status.images``."""
        self.image_node_counts: Counter[str] = Counter()
        """Image name -> how many nodes have it (ImageLocality scales by spread)."""
        self._slots: dict[str, int] = {}
        self._free: list[int] = []
        self._used = 0
        self._pod_nodes: dict[str, str] = {}
        self._waiting: dict[str, dict[str, PodInfo]] = {}
        self._by_namespace: dict[str, dict[str, tuple[PodInfo, int]]] = {}
        self._label_columns: dict[str, LabelColumn] = {}
        self._image_columns: dict[str, IntArray] = {}
        self._request_rows: dict[str, tuple[PodInfo, IntArray, IntArray]] = {}
        self._zones = _ZoneTree()
        self._indexes: dict[str, PodIndex] = {}
        self.slots_version = 0
        """Bumped whenever which node holds which slot changes (a node added or removed, the arrays
        grown): a cache laid out by slot compares it rather than every node's name each cycle."""

    @classmethod
    def from_objects(
        cls, nodes: Iterable[KubeObject], pods: Iterable[KubeObject | PodInfo] = ()
    ) -> NodeTable:
        """A table of these nodes with the pods bound to them (``spec.nodeName``), finished pods left out.

        For tests and for in-memory snapshots (the ``score`` command); the runtime feeds
        watch events to the mutators instead.
        """
        table = cls()
        for node in nodes:
            table.add_node(node)
        for pod in pods:
            info = pod if isinstance(pod, PodInfo) else PodInfo.from_pod(pod)
            if info.node_name and not is_terminal(info.obj):
                table.add_pod(info, info.node_name)
        return table

    @property
    def capacity(self) -> int:
        return len(self.active)

    @property
    def num_nodes(self) -> int:
        return len(self._slots)

    def active_slots(self) -> Slots:
        """Slots holding a node, in slot order (the order filters visit nodes in)."""
        return np.flatnonzero(self.active[: self._used])

    def node_order(self) -> Slots:
        """Slots in the order filters visit them: zone by zone, round robin (kube-scheduler's nodeTree).

        With percentageOfNodesToScore below 100 a cycle stops after enough feasible nodes;
        interleaving zones makes those nodes come from every zone, not from the first one.
        """
        return self._zones.order(self._slots)

    def slot_of(self, node_name: str) -> int | None:
        return self._slots.get(node_name)

    def slots_of(self, node_names: Sequence[str]) -> Slots:
        """The slots of the named nodes that the table knows, in order (unknown names left out)."""
        slots = np.fromiter(
            map(self._slots.get, node_names, itertools.repeat(-1)), dtype=np.intp, count=len(node_names)
        )
        return slots[slots >= 0]

    @property
    def pod_keys(self) -> KeysView[str]:
        """The keys of every pod the table counts or holds for a node it does not know yet."""
        return self._pod_nodes.keys()

    def node_of_pod(self, pod_key: str) -> str | None:
        """The node a pod was added for, whether or not the table knows that node."""
        return self._pod_nodes.get(pod_key)

    def add_node(self, node: KubeObject) -> int:
        """Add a node (or update it if already known); returns its slot."""
        name = str((node.get("metadata") or {}).get("name", ""))
        if name in self._slots:
            return self.update_node(node)
        slot = self._take_slot()
        self._slots[name] = slot
        self.names[slot] = name
        self.slots_version += 1
        self.active[slot] = True
        self._set_node_fields(slot, node)
        self._zones.add(name, zone_key(self.labels[slot]))
        for pod in self._waiting.pop(name, {}).values():
            self._place(slot, pod)
        return slot

    def update_node(self, node: KubeObject) -> int:
        """Refresh a node's allocatable, labels, taints, images and cordon; its pods stay."""
        slot = self._slots.get(str((node.get("metadata") or {}).get("name", "")))
        if slot is None:
            return self.add_node(node)
        self._set_node_fields(slot, node)
        self._zones.add(self.names[slot], zone_key(self.labels[slot]))
        return slot

    def remove_node(self, name: str) -> None:
        slot = self._slots.pop(name, None)
        if slot is None:
            return
        self.slots_version += 1
        self._zones.remove(name)
        waiting = self._waiting.setdefault(name, {})
        for key, pod in list(self.pods[slot].items()):
            self._unplace(slot, pod)
            waiting[key] = pod
        if not waiting:
            del self._waiting[name]
        self._set_labels(slot, {})
        self._set_images(slot, {})
        self.allocatable[slot] = 0
        self.active[slot] = False
        self.unschedulable[slot] = False
        self.names[slot] = ""
        self.objects[slot] = None
        self.taints[slot] = ()
        self.tainted[slot] = False
        self._free.append(slot)

    def add_pod(self, pod: PodInfo, node_name: str) -> None:
        """Count a pod on a node (bound, or assumed by the scheduler); replaces an earlier add of it."""
        self._add(pod, node_name, None)

    def remove_pod(self, pod_key: str) -> PodInfo | None:
        """Stop counting a pod; returns it, or None if the table did not have it."""
        return self._remove(pod_key, None)

    def add_pods(self, placements: Iterable[tuple[PodInfo, str]]) -> None:
        """``add_pod`` for many pods, their requests counted in one vectorised step.

        For preemption's dry run, which moves hundreds of pods off their nodes and back each cycle.
        """
        counted: list[tuple[int, PodInfo]] = []
        for pod, node_name in placements:
            self._add(pod, node_name, counted)
        self._count_many(counted, 1)

    def remove_pods(self, pod_keys: Iterable[str]) -> None:
        """``remove_pod`` for many pods, their requests discounted in one vectorised step."""
        counted: list[tuple[int, PodInfo]] = []
        for key in pod_keys:
            self._remove(key, counted)
        self._count_many(counted, -1)

    def count_in_totals(self, counted: Sequence[tuple[int, PodInfo]], sign: int) -> TotalsChange:
        """Count pods on (``sign`` 1) or off (-1) nodes in the node totals alone: ``requested``,
        ``non_zero_requested``, ``pod_count``, ``used_ports``; each node's pod list, the pod
        lookups and the indexes stay as they are.

        For a what-if whose filters read nothing but the totals (``framework.podmoves``); the
        caller undoes it (``uncount``) before anything else reads the table.
        """
        rows = self._count_many(counted, sign)
        ported = [(slot, pod) for slot, pod in counted if pod.host_ports]
        for slot, pod in ported:
            self._count_ports(slot, pod, sign)
        return TotalsChange(counted, sign, rows, ported)

    def empty_totals(self, slots: Sequence[int]) -> SavedTotals:
        """Count every pod off the nodes in ``slots`` in the totals alone: ``count_in_totals`` of
        all their pods, -1, whose totals are then zero; done by saving and zeroing the rows.

        For preemption's dry run, where most nodes' pods are all possible victims.
        """
        index = np.array(slots, dtype=np.intp)
        saved = SavedTotals(
            index,
            self.requested[index],
            self.non_zero_requested[index],
            self.pod_count[index],
            [self.used_ports[slot] for slot in slots],
        )
        self.requested[index] = 0
        self.non_zero_requested[index] = 0
        self.pod_count[index] = 0
        for slot in slots:
            if self.used_ports[slot]:
                self.used_ports[slot] = Counter()
        return saved

    def restore_totals(self, saved: SavedTotals) -> None:
        """Undo ``empty_totals`` (after undoing what was counted since, last first)."""
        index = saved.slots
        width = saved.requested.shape[1]
        self.requested[index, :width] = saved.requested
        self.requested[index, width:] = 0  # a column added since: these nodes' pods did not use it
        self.non_zero_requested[index] = saved.non_zero_requested
        self.pod_count[index] = saved.pod_count
        for slot, ports in zip(index.tolist(), saved.used_ports, strict=True):
            self.used_ports[slot] = ports

    def uncount(self, change: TotalsChange) -> None:
        """Undo a ``count_in_totals``, reusing the rows it added (no per-pod lookups)."""
        if change.rows is None or change.rows.shape[1] != self.requested.shape[1] + 2:
            self._count_many(change.counted, -change.sign)  # nothing counted, or a column added since
        else:
            self._add_rows(change.counted, change.rows, -change.sign)
        for slot, pod in change.ported:
            self._count_ports(slot, pod, -change.sign)

    def _add(self, pod: PodInfo, node_name: str, counted: list[tuple[int, PodInfo]] | None) -> None:
        if pod.key in self._pod_nodes:
            self.remove_pod(pod.key)
        self._pod_nodes[pod.key] = node_name
        slot = self._slots.get(node_name)
        if slot is None:
            self._waiting.setdefault(node_name, {})[pod.key] = pod
        else:
            self._place(slot, pod, counted)

    def _remove(self, pod_key: str, counted: list[tuple[int, PodInfo]] | None) -> PodInfo | None:
        node_name = self._pod_nodes.pop(pod_key, None)
        if node_name is None:
            return None
        slot = self._slots.get(node_name)
        if slot is None:
            waiting = self._waiting[node_name]
            pod = waiting.pop(pod_key)
            if not waiting:
                del self._waiting[node_name]
            return pod
        pod = self.pods[slot][pod_key]
        self._unplace(slot, pod, counted)
        return pod

    def label_column(self, key: str) -> LabelColumn:
        """The label ``key`` over all slots as integer codes, built on first use and kept up to date."""
        column = self._label_columns.get(key)
        if column is None or column.is_bloated(self.num_nodes):
            column = LabelColumn.build(key, self.labels, self.active)
            self._label_columns[key] = column
        return column

    def image_column(self, image: str) -> IntArray:
        """Per slot, the size in bytes of ``image`` on the node (0 without it), kept up to date once built."""
        column = self._image_columns.get(image)
        if column is None:
            column = np.zeros(self.capacity, dtype=np.int64)
            for slot in np.flatnonzero(self.active).tolist():
                column[slot] = self.images[slot].get(image, 0)
            self._image_columns[image] = column
        return column

    def index(self, name: str, build: Callable[[NodeTable], _Index]) -> _Index:
        """The index ``name``, built by ``build(self)`` on first use and then told of every change.

        How plugins keep what kube-scheduler's PreFilter recomputes each cycle (counts over
        every pod) without walking every pod each cycle: the index is updated as pods are
        placed, removed (also during preemption's dry runs) and their nodes relabelled.
        """
        index = self._indexes.get(name)
        if index is None:
            index = self._indexes[name] = build(self)
        return index  # type: ignore[return-value]  # one name, one builder

    def pods_in_namespace(self, namespace: str) -> Iterator[tuple[PodInfo, int]]:
        """(pod, slot) of the counted pods in a namespace."""
        return iter(self._by_namespace.get(namespace, {}).values())

    def all_pods(self) -> Iterator[tuple[PodInfo, int]]:
        """(pod, slot) of every counted pod."""
        for pods in self._by_namespace.values():
            yield from pods.values()

    def _take_slot(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == self.capacity:
            self._grow(max(2 * self.capacity, 1))
        self._used += 1
        return self._used - 1

    def _grow(self, capacity: int) -> None:
        extra = capacity - self.capacity
        self.slots_version += 1
        self.allocatable = _with_rows(self.allocatable, extra)
        self.requested = _with_rows(self.requested, extra)
        self.non_zero_requested = _with_rows(self.non_zero_requested, extra)
        self.pod_count = _with_rows(self.pod_count, extra)
        self.active = _with_rows(self.active, extra)
        self.unschedulable = _with_rows(self.unschedulable, extra)
        self.tainted = _with_rows(self.tainted, extra)
        self.names += [""] * extra
        self.objects += [None] * extra
        self.labels += [{}] * extra
        self.taints += [()] * extra
        self.used_ports += [Counter() for _ in range(extra)]
        self.pods += [{} for _ in range(extra)]
        self.images += [{}] * extra
        for column in self._label_columns.values():
            column.grow(capacity)
        for image, sizes in self._image_columns.items():
            self._image_columns[image] = _with_rows(sizes, extra)

    def _resource_column(self, name: str) -> int:
        column = self.resources.add(name)
        if column >= self.allocatable.shape[1]:
            extra = np.zeros((self.capacity, column + 1 - self.allocatable.shape[1]), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, extra])
            self.requested = np.hstack([self.requested, extra])
        return column

    def _set_node_fields(self, slot: int, node: KubeObject) -> None:
        metadata = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self.objects[slot] = node
        self.allocatable[slot] = 0
        for name, quantity in (status.get("allocatable") or {}).items():
            column = self._resource_column(name)  # first: it may grow the arrays
            self.allocatable[slot, column] = resource_value(name, quantity)
        self.unschedulable[slot] = bool(spec.get("unschedulable"))
        self.taints[slot] = tuple(Taint.parse(taint) for taint in spec.get("taints") or ())
        self.tainted[slot] = bool(self.taints[slot])
        labels = {str(key): str(value) for key, value in (metadata.get("labels") or {}).items()}
        if labels != self.labels[slot]:
            self._set_labels(slot, labels)
        images = {
            str(name): int(image.get("sizeBytes") or 0)
            for image in status.get("images") or ()
            for name in image.get("names") or ()
        }
        if images != self.images[slot]:
            self._set_images(slot, images)

    def _set_labels(self, slot: int, labels: Mapping[str, str]) -> None:
        moved = list(self.pods[slot].values()) if self._indexes else []
        for pod in moved:
            self._tell_indexes(slot, pod, placed=False)
        self.labels[slot] = labels
        for pod in moved:
            self._tell_indexes(slot, pod, placed=True)
        for key, column in self._label_columns.items():
            column.assign(slot, labels.get(key))

    def _set_images(self, slot: int, images: Mapping[str, int]) -> None:
        self.image_node_counts.subtract(self.images[slot].keys())
        self.image_node_counts.update(images.keys())
        self.image_node_counts += Counter()  # drop names no node has any more
        self.images[slot] = images
        for image, sizes in self._image_columns.items():
            sizes[slot] = images.get(image, 0)

    def _place(self, slot: int, pod: PodInfo, counted: list[tuple[int, PodInfo]] | None = None) -> None:
        """Put ``pod`` on the node in ``slot``; its requests are counted now, or later by the caller
        when it passes ``counted`` (see ``add_pods``)."""
        if counted is None:
            self._count(slot, pod, 1)
        else:
            counted.append((slot, pod))
        if pod.host_ports:
            self._count_ports(slot, pod, 1)
        self.pods[slot][pod.key] = pod
        self._by_namespace.setdefault(pod.namespace, {})[pod.key] = (pod, slot)
        if self._indexes:
            self._tell_indexes(slot, pod, placed=True)

    def _unplace(self, slot: int, pod: PodInfo, counted: list[tuple[int, PodInfo]] | None = None) -> None:
        if counted is None:
            self._count(slot, pod, -1)
        else:
            counted.append((slot, pod))
        if pod.host_ports:
            self._count_ports(slot, pod, -1)
        del self.pods[slot][pod.key]
        namespace = self._by_namespace[pod.namespace]
        del namespace[pod.key]
        if not namespace:
            del self._by_namespace[pod.namespace]
        if self._indexes:
            self._tell_indexes(slot, pod, placed=False)

    def _count_ports(self, slot: int, pod: PodInfo, sign: int) -> None:
        if sign > 0:
            self.used_ports[slot].update(pod.host_ports)
        else:
            self.used_ports[slot].subtract(pod.host_ports)
            self.used_ports[slot] += Counter()  # drop ports no pod uses any more

    def _cache_rows(self, pod: PodInfo) -> tuple[PodInfo, IntArray, IntArray]:
        """Cache the pod's row of ``requested`` and the same row followed by its non-zero cpu and memory."""
        for name in pod.requests:
            self._resource_column(name)  # first: it may widen the arrays
        width = self.requested.shape[1]
        counted = np.zeros(width + 2, dtype=np.int64)
        for name, value in pod.requests.items():
            counted[self._resource_column(name)] = value
        counted[width:] = (pod.non_zero_cpu, pod.non_zero_memory)
        if len(self._request_rows) > 2 * len(self._pod_nodes) + 1024:  # forget pods long gone
            self._request_rows = {
                key: item for key, item in self._request_rows.items() if key in self._pod_nodes
            }
        cached = self._request_rows[pod.key] = (pod, counted[:width], counted)
        return cached

    def _tell_indexes(self, slot: int, pod: PodInfo, *, placed: bool) -> None:
        labels = self.labels[slot]
        for index in self._indexes.values():
            if placed:
                index.pod_placed(slot, pod, labels)
            else:
                index.pod_removed(slot, pod, labels)

    def _count_many(self, counted: Sequence[tuple[int, PodInfo]], sign: int) -> IntArray | None:
        """``_count`` for many (slot, pod) pairs at once; a slot may appear more than once.

        Returns each pod's row as counted (unsigned: requests, then non-zero cpu and memory),
        None if there was no pod.
        """
        if not counted:
            return None
        width = self.requested.shape[1]
        listed = self._counted_rows(counted)  # first: it may widen the arrays
        if self.requested.shape[1] != width:  # a pod's new resource widened them: rows of the new width
            width = self.requested.shape[1]
            listed = self._counted_rows(counted)
        rows = np.concatenate(listed).reshape(len(listed), width + 2)  # 3x np.stack's speed
        self._add_rows(counted, rows, sign)
        return rows

    def _add_rows(self, counted: Sequence[tuple[int, PodInfo]], rows: IntArray, sign: int) -> None:
        """Add (``sign`` 1) or subtract (-1) each pod's row to its node's totals."""
        width = self.requested.shape[1]
        slot_list = [slot for slot, _pod in counted]
        slots = np.array(slot_list, dtype=np.intp)
        signed = rows if sign > 0 else -rows
        if len(set(slot_list)) == len(slot_list):  # one pod per node (the usual case): plain indexing
            self.requested[slots] += signed[:, :width]
            self.non_zero_requested[slots] += signed[:, width:]
            self.pod_count[slots] += sign
        else:  # ufunc.at adds every occurrence of a repeated slot
            np.add.at(self.requested, slots, signed[:, :width])
            np.add.at(self.non_zero_requested, slots, signed[:, width:])
            np.add.at(self.pod_count, slots, sign)

    def _counted_rows(self, counted: Sequence[tuple[int, PodInfo]]) -> list[IntArray]:
        """Per pod: its requests, then its non-zero cpu and memory (what ``_count`` adds)."""
        width = self.requested.shape[1]
        cache = self._request_rows
        rows = []
        for _slot, pod in counted:
            cached = cache.get(pod.key)
            if cached is None or cached[0] is not pod or len(cached[1]) != width:
                cached = self._cache_rows(pod)
            rows.append(cached[2])
        return rows

    def _count(self, slot: int, pod: PodInfo, sign: int) -> None:
        cached = self._request_rows.get(pod.key)
        if cached is None or cached[0] is not pod or len(cached[1]) != self.requested.shape[1]:
            cached = self._cache_rows(pod)
        row = cached[1]
        if sign > 0:
            self.requested[slot] += row
        else:
            self.requested[slot] -= row
        self.non_zero_requested[slot, CPU_COLUMN] += sign * pod.non_zero_cpu
        self.non_zero_requested[slot, MEMORY_COLUMN] += sign * pod.non_zero_memory
        self.pod_count[slot] += sign
