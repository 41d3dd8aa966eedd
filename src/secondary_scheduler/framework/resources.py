"""Resource names and the column index the NodeTable keeps its resource arrays in.

cpu is counted in millicores, everything else in whole units (bytes, counts), as the
scheduler compares them. The first four columns are fixed; extended and other scalar
resources (``nvidia.com/gpu``, ``hugepages-2Mi``) get a column when first seen.
"""

from __future__ import annotations

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

CPU_COLUMN = 0
MEMORY_COLUMN = 1
PODS_COLUMN = 2
FIXED_RESOURCES = (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)


def is_extended_resource(name: str) -> bool:
    """A vendor resource such as ``example.com/gpu``: qualified, and outside the kubernetes.io domains.

    Only these can be skipped through NodeResourcesFit's ignoredResources/ignoredResourceGroups.
    """
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.")


def is_scalar_resource(name: str) -> bool:
    """Resources besides cpu, memory and ephemeral-storage that Fit checks and scorers may weigh:
    extended ones, hugepages, attachable volumes and ``kubernetes.io/``-prefixed ones."""
    return (
        is_extended_resource(name)
        or name.startswith(("hugepages-", "attachable-volumes-"))
        or "kubernetes.io/" in name
    )


class ResourceIndex:
    """Resource name -> column, growing as new resource names appear."""

    def __init__(self) -> None:
        self.names: list[str] = list(FIXED_RESOURCES)
        self._columns: dict[str, int] = {name: column for column, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def column(self, name: str) -> int | None:
        """The column of ``name``, or None if no node or pod has mentioned it yet."""
        return self._columns.get(name)

    def add(self, name: str) -> int:
        """The column of ``name``, appending one if it is new (the caller grows its arrays)."""
        column = self._columns.get(name)
        if column is None:
            column = len(self.names)
            self.names.append(name)
            self._columns[name] = column
        return column
