"""Why a pod's claims cannot be allocated on a node, request by request, for ``secsched score``.

Upstream's Filter says only "cannot allocate all claims". This module says which part is
short: no pool of devices reaches the node, a pool is incomplete or invalid, a request's
device class and selectors match too few devices there, too many of those are taken by other
claims, or each request alone fits and a ``matchAttribute`` constraint (or the requests
together) does not. It reads what the cycle's allocator reads (its classes, devices in use,
cached selector verdicts and each node's pools from the slice index), once per node filtered
out and only when ``score`` prints a note right after the cycle, never in the scheduler's own
cycles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from secondary_scheduler.framework.aliases import KubeObject
from secondary_scheduler.plugins.dynamicresources.allocator import Allocator, SelectorResults
from secondary_scheduler.plugins.dynamicresources.cel_env import SelectorError, compiled
from secondary_scheduler.plugins.dynamicresources.claims import claim_key
from secondary_scheduler.plugins.dynamicresources.pools import AllocationError, Pool

_NAMED_NODES = 5
"""Nodes named on one line of the same reason; the others counted."""


@dataclass(frozen=True)
class ClaimsView:
    """What the cycle's allocator saw: the claims to allocate and the cluster's devices."""

    allocator: Allocator

    def rejection_lines(self, nodes: Sequence[KubeObject]) -> list[str]:
        """``<nodes>: cannot allocate: <why>``, the nodes with the same reason on one line (the
        first few named, then how many more)."""
        by_reason: dict[str, list[str]] = {}
        for node in nodes:
            name = str((node.get("metadata") or {}).get("name", ""))
            by_reason.setdefault(self.why_not(node), []).append(name)
        lines = []
        for reason, names in by_reason.items():
            shown = ", ".join(names[:_NAMED_NODES])
            more = f" and {len(names) - _NAMED_NODES} more nodes" if len(names) > _NAMED_NODES else ""
            lines.append(f"{shown}{more}: cannot allocate: {reason}")
        return lines

    def why_not(self, node: KubeObject) -> str:
        """One sentence per short request (or per pool problem), joined: why the claims do not fit."""
        try:
            pools = self.allocator.slice_index.pools(node)  # as Filter found them (kept per node)
        except AllocationError as error:
            return str(error)
        if not pools:
            return "no ResourceSlice publishes devices for this node (no pool reaches it)"
        problems = [
            f"pool {pool.pool_id} {'is being updated (incomplete)' if pool.incomplete else 'is invalid'}"
            + (f": {pool.invalid_reason}" if pool.invalid_reason else "")
            for pool in pools
            if pool.incomplete or pool.invalid_reason
        ]
        claims = self.allocator.claims
        short = [line for claim in claims for line in self._short_requests(claim, pools)]
        if short or problems:
            return "; ".join([*problems, *short])
        return "each request alone finds enough free devices here, but not all together: " + (
            f"the claims' constraints ({', '.join(constraints)}) cannot all be met"
            if (constraints := [c for claim in claims for c in _constraints(claim)])
            else "the requests compete for the same devices"
        )

    def _short_requests(self, claim: KubeObject, pools: Sequence[Pool]) -> list[str]:
        key = claim_key(claim)
        lines = []
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            name = str(request.get("name", ""))
            alternatives = (
                [(f"{name}/{sub.get('name', '')}", sub) for sub in request["firstAvailable"]]
                if request.get("firstAvailable")
                else [(name, request.get("exactly") or {})]
            )
            found = [self._count(label, spec, pools) for label, spec in alternatives]
            if any(ok for ok, _ in found):
                continue
            reasons = "; or ".join(why for _, why in found)
            lines.append(f"claim {key}, request {reasons}")
        return lines

    def _count(self, label: str, spec: Mapping[str, Any], pools: Sequence[Pool]) -> tuple[bool, str]:
        """(whether this request alone fits, what it wants against what matches and is free)."""
        class_name = str(spec.get("deviceClassName") or "")
        device_class = self.allocator.classes(class_name)
        if device_class is None:
            return False, f"{label}: device class {class_name} does not exist"
        class_selectors = (device_class.get("spec") or {}).get("selectors") or ()
        own_selectors = spec.get("selectors") or ()
        of_class = matching = free = 0
        results, in_use = self.allocator.selector_results, self.allocator.allocated
        for device_id, slice_obj, index in (device for pool in pools for device in pool.devices):
            verdict = _selected(class_selectors, slice_obj, index, results)
            if verdict is True:
                of_class += 1
                verdict = _selected(own_selectors, slice_obj, index, results)
            if isinstance(verdict, str):
                return False, f"{label}: {verdict}"
            if verdict:
                matching += 1
                free += device_id not in in_use
        every = (spec.get("allocationMode") or "ExactCount") == "All"
        wanted = "all" if every else str(int(spec.get("count") or 1))
        fits = (0 < matching == free) if every else free >= int(wanted)
        found = f"{of_class} here of that class"
        if own_selectors:
            found += f", {matching} of them matching the request's selectors"
        if matching != free:
            found += f", {matching - free} of those allocated to other claims"
        return fits, f"{label}: wants {wanted} device(s) of class {class_name}; {found}"


def _selected(
    selectors: Sequence[Mapping[str, Any]], slice_obj: KubeObject, index: int, results: SelectorResults
) -> bool | str:
    """Whether every selector matches the device; a string when one fails to evaluate."""
    for selector in selectors:
        expression = str((selector.get("cel") or {}).get("expression") or "")
        program = compiled(expression)
        if isinstance(program, SelectorError):
            return f"selector {expression!r}: {program}"
        try:
            if not results.matches(program, slice_obj, index):
                return False
        except SelectorError as error:
            return f"selector {expression!r}: {error}"
    return True


def _constraints(claim: KubeObject) -> list[str]:
    return [
        f"matchAttribute {constraint.get('matchAttribute')}"
        for constraint in ((claim.get("spec") or {}).get("devices") or {}).get("constraints") or ()
    ]
