"""What plugins get from the framework besides the pod and the nodes: shared services.

The API client belongs to the runtime, so binding goes through an injected ``binder``
coroutine; out-of-tree plugins (Trimaran's metrics collector) find what they share in
``services`` by name.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from secondary_scheduler.framework.affinityterms import NamespaceLabels, namespace_name_only

if TYPE_CHECKING:
    from secondary_scheduler.framework.podinfo import PodInfo

Binder = Callable[["PodInfo", str], Awaitable[None]]
"""Creates the pod's Binding to the node; raises when the API server refuses."""

_Service = TypeVar("_Service")


@dataclass
class Handle:
    binder: Binder | None = None
    clock: Callable[[], float] = time.monotonic
    """Seconds, monotonic: for plugins that time things (metrics freshness)."""
    namespace_labels: NamespaceLabels = namespace_name_only
    """Labels of a namespace, for affinity terms with a namespaceSelector."""
    services: dict[str, object] = field(default_factory=dict)

    def service(self, name: str, kind: type[_Service]) -> _Service:
        """The shared service registered under ``name``, checked to be a ``kind``."""
        value = self.services.get(name)
        if not isinstance(value, kind):
            raise LookupError(f"no {kind.__name__} registered as service {name!r} in the framework handle")
        return value
