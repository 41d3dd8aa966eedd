"""Type aliases shared by the framework and the plugins.

Node-wise data are numpy arrays indexed by node *slot* (a row of the NodeTable); a set of
candidate nodes is an array of slots, and a plugin's per-candidate answer is an array
aligned with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

KubeObject = Mapping[str, Any]
"""A Kubernetes object (Pod, Node) as the API server returns it, decoded from JSON."""

Slots = npt.NDArray[np.intp]
"""Node slots, e.g. the candidates of a filter or score call."""

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
