"""The structured-parameters allocator of kube-scheduler 1.34, for one node at a time.

Upstream (``k8s.io/dynamic-resource-allocation/structured``) with 1.34's default gates:
prioritized lists (``firstAvailable``) and admin access on; partitionable devices, device
taints, consumable capacity and binding conditions off (refused here, see ``pools``).
The search is upstream's depth-first backtracking: claims in order, requests in order, for
each device of a request the pools, slices and devices in order; the first complete
assignment wins. A device already allocated (to a claim in the cluster or to one this
scheduler assumed) is skipped unless the request asks for admin access; constraints
(``matchAttribute``) are checked as devices are added and undone on backtracking.

``Allocator.place`` returns where the claims fit on the node (a ``Placement``, whose
``results()`` are one AllocationResult per claim as the API spells it), or None when they do
not; it raises AllocationError where upstream returns an error (a CEL selector failing, a
missing class, an invalid pool).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.plugins.dynamicresources.cel_env import (
    Selector,
    SelectorError,
    compiled,
    device_variable,
)
from secondary_scheduler.plugins.dynamicresources.pools import (
    AllocationError,
    DeviceID,
    Pool,
    PoolDevice,
    SliceIndex,
    UnsupportedFeature,
)

ALLOCATION_RESULTS_MAX_SIZE = 32
"""resourceapi.AllocationResultsMaxSize: devices one claim may get."""


def allocated_device_ids(claim: KubeObject) -> list[DeviceID]:
    """The devices an allocated claim holds (admin-access ones excluded: they do not block others)."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    return [
        DeviceID(str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        for r in results or ()
        if not r.get("adminAccess")
    ]


class SelectorResults:
    """Selector verdicts per device, kept across cycles while the slice object stays the same.

    A verdict depends only on the expression and the device's driver, attributes and capacity,
    so it holds until the slice changes (the informer then holds a new object).
    """

    def __init__(self) -> None:
        self._by_slice: dict[str, tuple[KubeObject, dict[int, Any], dict[tuple[str, int], bool]]] = {}

    def matches(self, selector: Selector, slice_obj: KubeObject, index: int) -> bool:
        name = str((slice_obj.get("metadata") or {}).get("name", ""))
        entry = self._by_slice.get(name)
        if entry is None or entry[0] is not slice_obj:
            entry = (slice_obj, {}, {})
            self._by_slice[name] = entry
        _, variables, verdicts = entry
        key = (selector.expression, index)
        verdict = verdicts.get(key)
        if verdict is None:
            variable = variables.get(index)
            if variable is None:
                spec = slice_obj.get("spec") or {}
                variable = device_variable(str(spec.get("driver", "")), spec["devices"][index])
                variables[index] = variable
            verdict = selector.matches(variable)
            verdicts[key] = verdict
        return verdict

    def forget(self, slice_name: str) -> None:
        """Drop the verdicts of a slice that is gone."""
        self._by_slice.pop(slice_name, None)


@dataclass
class _Request:
    """One request, or one subrequest of a ``firstAvailable`` list (upstream's requestData)."""

    claim_index: int
    name: str
    parent: str | None
    spec: Mapping[str, Any]
    device_class: KubeObject
    selectors: list[tuple[str, int, Selector | SelectorError]] = field(default_factory=list)
    """(owner, number, compiled program) of the class's selectors, then the claim's: a program
    that does not compile is kept, and raised when a device is first checked (as upstream)."""
    count: int = 0
    all_devices: list[PoolDevice] | None = None

    admin_access: bool = field(init=False)
    """Whether the request asks for admin access (subrequests never do): read per device."""

    def __post_init__(self) -> None:
        self.admin_access = bool(self.spec.get("adminAccess")) and self.parent is None

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass
class _Constraint:
    requests: frozenset[str]
    attribute: str
    value: tuple[str, Any] | None = None
    count: int = 0

    def applies(self, request: _Request) -> bool:
        if not self.requests:
            return True
        if request.parent is None:
            return request.name in self.requests
        return request.parent in self.requests or request.full_name in self.requests

    def add(self, request: _Request, device_id: DeviceID, device: Mapping[str, Any]) -> bool:
        if not self.applies(request):
            return True
        value = _lookup_attribute(device, device_id, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value, self.count = value, 1
            return True
        if value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: _Request) -> None:
        if self.applies(request):
            self.count -= 1


def _lookup_attribute(device: Mapping[str, Any], device_id: DeviceID, name: str) -> tuple[str, Any] | None:
    attributes = device.get("attributes") or {}
    attribute = attributes.get(name)
    if attribute is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != device_id.driver:
            return None
        attribute = attributes.get(ident)
        if attribute is None:
            return None
    for kind in ("string", "int", "bool", "version"):
        if kind in attribute:
            return (kind, attribute[kind])
    return None


@dataclass
class _Chosen:
    request: _Request
    device_id: DeviceID
    slice_obj: KubeObject


class _ResultTooLarge(Exception):
    """Upstream's errAllocationResultMaxSizeExceeded: this branch would give a claim more than
    ALLOCATION_RESULTS_MAX_SIZE devices (the search backtracks further, to a shorter subrequest)."""


_RequestKey = tuple[int, int, int]
"""(claim, request, subrequest) indices, upstream's requestIndices (subrequest 0 without a list)."""


@dataclass
class _Search:
    claims: Sequence[KubeObject]
    pools: list[Pool]
    allocated: frozenset[DeviceID] | set[DeviceID]
    selector_results: SelectorResults
    requests: dict[_RequestKey, _Request] = field(default_factory=dict)
    """Every request and subrequest (upstream's requestData)."""
    request_counts: list[int] = field(default_factory=list)
    """Per claim, how many requests it has."""
    constraints: list[list[_Constraint]] = field(default_factory=list)
    allocating: dict[DeviceID, set[int]] = field(default_factory=dict)
    chosen: list[list[_Chosen]] = field(default_factory=list)
    selected: dict[tuple[int, int], int] = field(default_factory=dict)
    """(claim, request) -> the index of the subrequest the search settled on."""

    def in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.allocated or bool(self.allocating.get(device_id))

    def selectable(self, request: _Request, slice_obj: KubeObject, index: int) -> bool:
        for owner, number, program in request.selectors:
            if isinstance(program, SelectorError):
                raise AllocationError(f"{owner}: selector #{number}: {program}")
            try:
                if not self.selector_results.matches(program, slice_obj, index):
                    return False
            except SelectorError as error:
                raise AllocationError(f"{owner}: selector #{number}: {error}") from error
        return True

    def request_of(self, claim_index: int, request_index: int) -> _Request:
        """The request, or the subrequest the search settled on (upstream's config lookup)."""
        return self.requests[(claim_index, request_index, self.selected.get((claim_index, request_index), 0))]

    # -- the depth-first search (upstream's allocateOne, experimental allocator of 1.34) -------
    def run(self) -> bool:
        if not self.claims:
            return True
        try:
            return self.allocate_one(0, 0, 0, 0, False)
        except _ResultTooLarge as error:  # upstream returns it as the allocation's error
            raise AllocationError("allocation max size exceeded") from error

    def allocate_one(self, claim: int, request: int, sub: int, device: int, in_subrequest: bool) -> bool:
        """Whether everything from this device of this (sub)request on can be allocated."""
        if claim >= len(self.claims):
            return True
        if request >= self.request_counts[claim]:
            try:
                return self.allocate_one(claim + 1, 0, 0, 0, False)
            except _ResultTooLarge:  # not fatal: an earlier choice may let a shorter subrequest fit
                return False
        data = self.requests[(claim, request, sub)]
        if not in_subrequest and data.parent is not None:
            return self.allocate_subrequests(claim, request, device)
        if data.all_devices is not None and not data.all_devices:
            return False  # All mode needs at least one device
        if device >= data.count:
            return self.allocate_one(claim, request + 1, 0, 0, False)
        if data.count - device > ALLOCATION_RESULTS_MAX_SIZE - len(self.chosen[claim]):
            raise _ResultTooLarge
        if data.all_devices is not None:
            device_id, slice_obj, index = data.all_devices[device]
            undo = self.allocate_device(data, device_id, slice_obj, index, must=True)
            if undo is None:
                return False  # one of "all" is not usable: no solution
            try:
                # As upstream: the next device is looked up with subrequest 0, not this one's
                # index (its recursion drops it), so an All subrequest after the first continues
                # as the first subrequest of its list.
                done = self.allocate_one(claim, request, 0, device + 1, in_subrequest)
            except Exception:
                undo()
                raise
            if not done:
                undo()
            return done
        for device_id, slice_obj, index in self.devices():
            if data.admin_access:
                if claim in self.allocating.get(device_id, ()):
                    continue
            elif self.in_use(device_id):
                continue
            if not self.selectable(data, slice_obj, index):
                continue
            undo = self.allocate_device(data, device_id, slice_obj, index, must=False)
            if undo is None:
                continue
            try:
                done = self.allocate_one(claim, request, sub, device + 1, in_subrequest)
            except Exception:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def allocate_subrequests(self, claim: int, request: int, device: int) -> bool:
        """The first subrequest of a ``firstAvailable`` list with which everything fits."""
        all_too_large = True
        sub = 0
        while (claim, request, sub) in self.requests:
            try:
                done = self.allocate_one(claim, request, sub, device, True)
            except _ResultTooLarge:  # a later subrequest may ask for fewer devices
                sub += 1
                continue
            all_too_large = False
            if done:
                self.selected[(claim, request)] = sub
                return True
            sub += 1
        if all_too_large:
            raise _ResultTooLarge
        return False

    def devices(self) -> Iterable[PoolDevice]:
        for pool in self.pools:
            if pool.invalid_reason is not None:
                raise AllocationError(f"pool {pool.name} is invalid: {pool.invalid_reason}")
            yield from pool.devices

    def allocate_device(
        self, request: _Request, device_id: DeviceID, slice_obj: KubeObject, index: int, must: bool
    ) -> Callable[[], None] | None:
        """Take the device for the request if it is free and the constraints hold; the undo."""
        claim_index = request.claim_index
        if request.admin_access and claim_index in self.allocating.get(device_id, ()):
            return None
        if not request.admin_access and self.in_use(device_id):
            return None
        device = ((slice_obj.get("spec") or {}).get("devices") or [])[index]
        constraints = self.constraints[claim_index]
        for position, constraint in enumerate(constraints):
            if not constraint.add(request, device_id, device):
                if must:
                    raise AllocationError(
                        f"claim {_claim_key(self.claims[claim_index])}, request {request.name}: cannot add "
                        f"device {device_id} because a claim constraint would not be satisfied"
                    )
                for earlier in constraints[:position]:
                    earlier.remove(request)
                return None
        self.allocating.setdefault(device_id, set()).add(claim_index)
        self.chosen[claim_index].append(_Chosen(request, device_id, slice_obj))

        def undo() -> None:
            for constraint in constraints:
                constraint.remove(request)
            self.allocating[device_id].discard(claim_index)
            self.chosen[claim_index].pop()

        return undo


def _name(obj: KubeObject) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _claim_key(claim: KubeObject) -> str:
    metadata = claim.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


_GATED_REQUEST_FIELDS = {
    "capacity": "DRAConsumableCapacity",
    "tolerations": "DRADeviceTaints",
}


def check_claim(claim: KubeObject) -> None:
    """Refuse a claim that uses a field of a gate 1.34 leaves off, naming it."""
    devices = (claim.get("spec") or {}).get("devices") or {}
    where = f"ResourceClaim {_claim_key(claim)}"
    for index, request in enumerate(devices.get("requests") or ()):
        variants = [(f"spec.devices.requests[{index}].exactly", request.get("exactly") or {})]
        variants += [
            (f"spec.devices.requests[{index}].firstAvailable[{sub}]", subrequest)
            for sub, subrequest in enumerate(request.get("firstAvailable") or ())
        ]
        for path, spec in variants:
            for key, gate in _GATED_REQUEST_FIELDS.items():
                if spec.get(key):
                    raise UnsupportedFeature(
                        f"{where} sets {path}.{key}, which needs the {gate} feature gate that kube-scheduler "
                        "1.34 leaves off; this scheduler does not implement it"
                    )
    for index, constraint in enumerate(devices.get("constraints") or ()):
        if constraint.get("distinctAttribute"):
            raise UnsupportedFeature(
                f"{where} sets spec.devices.constraints[{index}].distinctAttribute, which needs the "
                "DRAConsumableCapacity feature gate that kube-scheduler 1.34 leaves off; "
                "this scheduler does not implement it"
            )


class Allocator:
    """Allocates a set of claims on one node at a time, over a fixed view of the cluster."""

    def __init__(
        self,
        claims: Sequence[KubeObject],
        classes: Callable[[str], KubeObject | None],
        slices: Sequence[KubeObject],
        allocated: set[DeviceID] | frozenset[DeviceID],
        selector_results: SelectorResults,
        slice_index: SliceIndex | None = None,
    ) -> None:
        """``slice_index``: the scheduler's index kept across cycles (a fresh one by default)."""
        for claim in claims:
            check_claim(claim)
        self.claims = claims
        self.classes = classes
        self.slice_index = slice_index if slice_index is not None else SliceIndex()
        self.slice_index.refresh(slices)
        self.allocated = allocated
        self.selector_results = selector_results
        self._same_on_every_node: tuple[dict[_RequestKey, _Request], list[int]] | None = None
        """The validated requests and their counts per claim, once found to read no node's pools
        (no ``All`` request): the search only reads them, so every node's search shares them."""
        self._without_pools: tuple[Placement | None] | None = None
        """The outcome on a node no pool reaches, once known: the same on every such node."""

    def place(self, node: KubeObject) -> Placement | None:
        """The devices the claims get on ``node`` if they all fit, else None (the AllocationResults
        are built only on demand: Filter keeps one placement per node and Reserve reads one)."""
        pools = self.slice_index.pools(node)
        if not pools and self._without_pools is not None:
            return self._without_pools[0]
        placement = self._search(node, pools)
        if not pools:
            self._without_pools = (placement,)
        return placement

    def _search(self, node: KubeObject, pools: list[Pool]) -> Placement | None:
        search = _Search(self.claims, pools, self.allocated, self.selector_results)
        shared = self._same_on_every_node
        if shared is not None:
            search.requests, search.request_counts = shared
        for claim_index, claim in enumerate(self.claims):
            if shared is None:
                search.request_counts.append(self._add_requests(search, claim_index, claim))
            search.constraints.append(self._constraints(claim))
            search.chosen.append([])
        if shared is None and all(request.all_devices is None for request in search.requests.values()):
            self._same_on_every_node = (search.requests, search.request_counts)
        if not search.run():
            return None
        node_name = str((node.get("metadata") or {}).get("name", ""))
        selectors = [_node_selector(chosen, node_name) for chosen in search.chosen]
        return Placement(search, selectors)

    def _add_requests(self, search: _Search, claim_index: int, claim: KubeObject) -> int:
        """Validate the claim's requests into ``search.requests``; how many there are."""
        needed = 0
        requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
        # Upstream's "all" devices are found with a per-allocation cache of selector verdicts keyed
        # by (claim, request, subrequest); its loop over a list's subrequests sets the subrequest
        # index only after validating each, so a subrequest reads the verdicts cached under the
        # previous one's index. The second subrequest of a list thus takes the first one's "all"
        # devices when both are All (its own selectors unread); the cache is dropped afterwards.
        verdicts: dict[tuple[DeviceID, _RequestKey], bool] = {}
        for request_index, request in enumerate(requests):
            name = str(request.get("name", ""))
            subrequests = request.get("firstAvailable") or ()
            # (name, parent, spec) of each alternative: the subrequests in order, or the request itself.
            alternatives: list[tuple[str, str | None, Mapping[str, Any]]] = (
                [(str(sub.get("name", "")), name, sub) for sub in subrequests]
                if subrequests
                else [(name, None, request.get("exactly") or {})]
            )
            counts = []
            for sub_index, (own_name, parent, spec) in enumerate(alternatives):
                cache_key = (claim_index, request_index, max(sub_index - 1, 0))
                added = self._request(search, claim_index, claim, own_name, parent, spec, verdicts, cache_key)
                search.requests[(claim_index, request_index, sub_index)] = added
                counts.append(added.count)
            fewest = min(counts)
            if fewest > ALLOCATION_RESULTS_MAX_SIZE - needed:
                raise AllocationError(
                    f"claim {_claim_key(claim)}, request {name}: adding {fewest} devices exceeds the claim "
                    f"limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {needed} already accounted for"
                )
            needed += fewest
        return len(requests)

    def _request(
        self,
        search: _Search,
        claim_index: int,
        claim: KubeObject,
        name: str,
        parent: str | None,
        spec: Mapping[str, Any],
        verdicts: dict[tuple[DeviceID, _RequestKey], bool],
        cache_key: _RequestKey,
    ) -> _Request:
        label = f"claim {_claim_key(claim)}, request {name}"
        for number, selector in enumerate(spec.get("selectors") or ()):
            if not (selector.get("cel") or {}).get("expression"):
                raise AllocationError(
                    f"{label}, selector #{number}: CEL expression empty (unsupported selector type?)"
                )
        class_name = str(spec.get("deviceClassName") or "")
        if not class_name:
            raise AllocationError(f"{label}: missing device class name (unsupported request type?)")
        device_class = self.classes(class_name)
        if device_class is None:
            raise AllocationError(
                f"{label}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        selectors = self._selectors(claim, spec, device_class)
        request = _Request(claim_index, name, parent, spec, device_class, selectors)
        mode = spec.get("allocationMode") or "ExactCount"
        if mode == "ExactCount":
            request.count = int(spec.get("count") or 1)
        elif mode == "All":
            request.all_devices = []
            for pool in search.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"{label}: asks for all devices, but resource pool {pool.pool_id} "
                        "is currently being updated"
                    )
                if pool.invalid_reason is not None:
                    raise AllocationError(
                        f"{label}: asks for all devices, but resource pool {pool.pool_id} "
                        "is currently invalid"
                    )
                for device_id, slice_obj, index in pool.devices:
                    verdict = verdicts.get((device_id, cache_key))
                    if verdict is None:
                        verdict = search.selectable(request, slice_obj, index)
                        verdicts[(device_id, cache_key)] = verdict
                    if verdict:
                        request.all_devices.append((device_id, slice_obj, index))
            request.count = len(request.all_devices)
        else:
            raise AllocationError(f"{label}: unsupported count mode {mode}")
        return request

    @staticmethod
    def _selectors(
        claim: KubeObject, spec: Mapping[str, Any], device_class: KubeObject
    ) -> list[tuple[str, int, Selector | SelectorError]]:
        compiled_selectors: list[tuple[str, int, Selector | SelectorError]] = []
        for owner, selectors in (
            (f"class {_name(device_class)}", (device_class.get("spec") or {}).get("selectors")),
            (f"claim {_claim_key(claim)}", spec.get("selectors")),
        ):
            for number, selector in enumerate(selectors or ()):
                expression = (selector.get("cel") or {}).get("expression")
                compiled_selectors.append((owner, number, compiled(str(expression))))
        return compiled_selectors

    @staticmethod
    def _constraints(claim: KubeObject) -> list[_Constraint]:
        constraints = []
        for index, constraint in enumerate(
            ((claim.get("spec") or {}).get("devices") or {}).get("constraints") or ()
        ):
            attribute = constraint.get("matchAttribute")
            if not attribute:
                raise AllocationError(
                    f"claim {_claim_key(claim)}, constraint #{index}: "
                    "empty constraint (unsupported constraint type?)"
                )
            constraints.append(_Constraint(frozenset(constraint.get("requests") or ()), str(attribute)))
        return constraints


@dataclass(frozen=True)
class Placement:
    """Where the claims fit on one node: the search's choices, and each claim's node selector
    (found with the choices: a slice selector upstream cannot express fails the node's Filter)."""

    search: _Search
    node_selectors: list[dict[str, Any] | None]

    def results(self) -> list[dict[str, Any]]:
        """One AllocationResult per claim (as the API spells it), built anew on each call."""
        return [self._result(index, claim) for index, claim in enumerate(self.search.claims)]

    def _result(self, claim_index: int, claim: KubeObject) -> dict[str, Any]:
        results = []
        for chosen in self.search.chosen[claim_index]:
            entry: dict[str, Any] = {
                "request": chosen.request.full_name,
                "driver": chosen.device_id.driver,
                "pool": chosen.device_id.pool,
                "device": chosen.device_id.device,
            }
            if chosen.request.admin_access:
                entry["adminAccess"] = True
            results.append(entry)
        devices: dict[str, Any] = {"results": results}
        config = self._config(claim_index, claim)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        node_selector = self.node_selectors[claim_index]
        if node_selector is not None:
            allocation["nodeSelector"] = node_selector
        return allocation

    def _config(self, claim_index: int, claim: KubeObject) -> list[dict[str, Any]]:
        """Class configs (once per class, listing every request that used it), then the claim's own."""
        search = self.search
        config: list[dict[str, Any]] = []
        by_class: dict[str, tuple[int, int]] = {}
        picked = [
            search.request_of(claim_index, index) for index in range(search.request_counts[claim_index])
        ]
        for request in picked:
            class_name = _name(request.device_class)
            if class_name in by_class:
                start, end = by_class[class_name]
                for position in range(start, end):
                    config[position]["requests"].append(request.full_name)
                continue
            start = len(config)
            for entry in (request.device_class.get("spec") or {}).get("config") or ():
                config.append(
                    {"source": "FromClass", "requests": [request.full_name], **_without(entry, "requests")}
                )
            by_class[class_name] = (start, len(config))
        for entry in ((claim.get("spec") or {}).get("devices") or {}).get("config") or ():
            names = list(entry.get("requests") or ())
            from_claim = {"source": "FromClaim", "requests": names, **_without(entry, "requests")}
            if not names:
                config.append({"source": "FromClaim", **_without(entry, "requests")})
                continue
            for request in picked:
                base = request.parent or request.name
                if base in names or (request.parent is not None and request.full_name in names):
                    config.append(dict(from_claim))
        return config


def _without(entry: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != key}


def _node_selector(chosen: Sequence[_Chosen], node_name: str) -> dict[str, Any] | None:
    """Where the allocation is usable: the node itself for node-local slices, else the slices' selectors."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for item in chosen:
        spec = item.slice_obj.get("spec") or {}
        if spec.get("nodeName"):
            return {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        selector = spec.get("nodeSelector")
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise AllocationError(
                f"create NodeSelector: unsupported ResourceSlice.NodeSelector with {len(terms)} terms"
            )
        if terms:
            _merge(terms[0].get("matchFields") or (), fields)
            _merge(terms[0].get("matchExpressions") or (), expressions)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _merge(new: Iterable[Mapping[str, Any]], into: list[Mapping[str, Any]]) -> None:
    for requirement in new:
        if not any(
            old.get("key") == requirement.get("key")
            and old.get("operator") == requirement.get("operator")
            and set(old.get("values") or ()) == set(requirement.get("values") or ())
            for old in into
        ):
            into.append(requirement)
