"""Informers: the objects of one resource, kept current, that plugins read instead of the API.

A plugin asks its handle for the resources it reads (``handle.informer(STORAGE_CLASSES)``)
when it is built. Each resource gets one ``Informer`` however many plugins and profiles
ask for it, and nothing is listed or watched unless some enabled plugin asked. The runtime
then feeds every informer from one list+watch (``kube.reflector.Reflector``); ``secsched
score`` fills them from the snapshot's ``objects`` instead, so a plugin reads the same
state in both and cannot tell them apart.

Reads are synchronous and cheap (dict lookups), so Filter and Score may call them on the
hot path. Listeners hear every change (after a relist too, as the difference), which is
how a plugin's cluster events requeue the pods they might help.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.kube.store import object_key

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(frozen=True)
class Resource:
    """A Kubernetes resource as the API serves it: enough to list, watch and recognise its objects."""

    api_version: str
    """``v1`` for the core group, else ``group/version`` (``storage.k8s.io/v1``)."""
    kind: str
    plural: str
    namespaced: bool

    @property
    def path(self) -> str:
        """The collection's URL path across all namespaces."""
        prefix = "/api/" if "/" not in self.api_version else "/apis/"
        return f"{prefix}{self.api_version}/{self.plural}"

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


PERSISTENT_VOLUMES = Resource("v1", "PersistentVolume", "persistentvolumes", namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Resource("v1", "PersistentVolumeClaim", "persistentvolumeclaims", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
SERVICES = Resource("v1", "Service", "services", namespaced=True)
REPLICATION_CONTROLLERS = Resource("v1", "ReplicationController", "replicationcontrollers", namespaced=True)
REPLICA_SETS = Resource("apps/v1", "ReplicaSet", "replicasets", namespaced=True)
STATEFUL_SETS = Resource("apps/v1", "StatefulSet", "statefulsets", namespaced=True)
STORAGE_CLASSES = Resource("storage.k8s.io/v1", "StorageClass", "storageclasses", namespaced=False)
CSI_NODES = Resource("storage.k8s.io/v1", "CSINode", "csinodes", namespaced=False)
CSI_DRIVERS = Resource("storage.k8s.io/v1", "CSIDriver", "csidrivers", namespaced=False)
CSI_STORAGE_CAPACITIES = Resource(
    "storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", namespaced=True
)
VOLUME_ATTACHMENTS = Resource("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", namespaced=False)
POD_DISRUPTION_BUDGETS = Resource("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", namespaced=True)
PRIORITY_CLASSES = Resource("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False)

Listener = Callable[[str, KubeObject | None, KubeObject | None], None]
"""Called with (ADDED|MODIFIED|DELETED, old or None, new or None) after the informer changed."""


class Informer:
    """The latest version of every object of one resource; a Reflector's handler."""

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self._objects: dict[str, KubeObject] = {}
        self._assumed: dict[str, KubeObject] = {}
        """Key -> the version the scheduler assumed, kept until the API server has a newer one."""
        self._listeners: list[Listener] = []
        self.synced = False
        """True after the first full list (or after a snapshot filled it)."""

    def get(self, name: str, namespace: str | None = None) -> KubeObject | None:
        """The object named ``name`` (in ``namespace`` for namespaced resources), or None."""
        return self._objects.get(f"{namespace}/{name}" if namespace else name)

    def list(self, namespace: str | None = None) -> list[KubeObject]:
        """Every object, or those of one namespace."""
        if namespace is None:
            return list(self._objects.values())
        prefix = f"{namespace}/"
        return [obj for key, obj in self._objects.items() if key.startswith(prefix)]

    def __iter__(self) -> Iterator[KubeObject]:
        return iter(list(self._objects.values()))

    def __len__(self) -> int:
        return len(self._objects)

    def add_listener(self, listener: Listener) -> None:
        """Hear every later change (a plugin's cluster events, an index it keeps)."""
        self._listeners.append(listener)

    # -- the Reflector's side (kube.reflector.WatchHandler) -----------------------------
    def replace(self, items: Iterable[KubeObject]) -> None:
        """A full list: the difference from what was known reaches the listeners as events."""
        fresh = {object_key(item): item for item in items}
        for key, assumed in list(self._assumed.items()):
            if key in fresh and not _newer(fresh[key], assumed):
                fresh[key] = assumed  # the list predates our write: keep what we wrote
            else:
                del self._assumed[key]
        old = self._objects
        self._objects = fresh
        self.synced = True
        for key, gone in old.items():
            if key not in fresh:
                self._notify(DELETED, gone, None)
        for key, current in fresh.items():
            known = old.get(key)
            if known is None:
                self._notify(ADDED, None, current)
            elif known is not current and _version(known) != _version(current):
                self._notify(MODIFIED, known, current)

    def event(self, kind: str, obj: KubeObject) -> None:
        key = object_key(obj)
        previous = self._objects.get(key)
        if kind == DELETED:
            self._objects.pop(key, None)
            self._assumed.pop(key, None)
            self._notify(DELETED, previous or obj, None)
            return
        assumed = self._assumed.get(key)
        if assumed is not None:
            if not _newer(obj, assumed):
                return  # an event older than what we assumed we wrote
            del self._assumed[key]
        self._objects[key] = obj
        self._notify(ADDED if previous is None else MODIFIED, previous, obj)

    # -- what the scheduler writes itself -------------------------------------------------
    def assume(self, obj: KubeObject) -> KubeObject | None:
        """Put the version the scheduler just wrote (or will write) in place; returns the one it replaced.

        kube-scheduler's assume cache: the next cycles see a PV already bound or a claim
        already annotated, before the watch brings the API server's copy back.
        """
        key = object_key(obj)
        previous = self._objects.get(key)
        self._objects[key] = obj
        self._assumed[key] = obj
        return previous

    def restore(self, obj: KubeObject, previous: KubeObject | None) -> None:
        """Undo ``assume``, unless the watch has brought a newer version meanwhile."""
        key = object_key(obj)
        if self._objects.get(key) is not obj:
            return
        self._assumed.pop(key, None)
        if previous is None:
            self._objects.pop(key, None)
        else:
            self._objects[key] = previous

    def _notify(self, kind: str, old: KubeObject | None, new: KubeObject | None) -> None:
        for listener in self._listeners:
            listener(kind, old, new)


def _version(obj: KubeObject) -> object:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _newer(obj: KubeObject, than: KubeObject) -> bool:
    """Whether ``obj``'s resourceVersion is past ``than``'s, as numbers (as upstream's assume cache)."""
    try:
        return int(str(_version(obj))) > int(str(_version(than)))
    except ValueError:
        return True  # not comparable: trust the API server


class Informers:
    """One Informer per resource, created when a plugin first asks for it."""

    def __init__(self) -> None:
        self._by_resource: dict[Resource, Informer] = {}

    def informer(self, resource: Resource) -> Informer:
        informer = self._by_resource.get(resource)
        if informer is None:
            informer = Informer(resource)
            self._by_resource[resource] = informer
        return informer

    def all(self) -> list[Informer]:
        """Every informer asked for so far (what the runtime lists and watches)."""
        return list(self._by_resource.values())

    def fill(self, objects: Iterable[KubeObject]) -> list[str]:
        """Fill the informers from objects (a snapshot's ``objects``); returns the kinds no plugin reads.

        Every asked-for informer counts as synced afterwards, with or without objects.
        """
        by_kind = {(resource.api_version, resource.kind): informer for resource, informer in self.items()}
        grouped: dict[Informer, list[KubeObject]] = {informer: [] for informer in self._by_resource.values()}
        unread: list[str] = []
        for obj in objects:
            informer = by_kind.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
            if informer is None:
                label = f"{obj.get('kind', '?')} ({obj.get('apiVersion', '?')})"
                if label not in unread:
                    unread.append(label)
            else:
                grouped[informer].append(obj)
        for informer, items in grouped.items():
            informer.replace(items)
        return unread

    def items(self) -> list[tuple[Resource, Informer]]:
        return list(self._by_resource.items())
