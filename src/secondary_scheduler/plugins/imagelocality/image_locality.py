"""Score nodes by the size of the pod's images they already hold, scaled by how widespread each is.

An image on every node says nothing about where to run, so each image's size counts in
proportion to the share of nodes holding it. The sum is clamped between 23 MiB and
1000 MiB per container and mapped linearly onto 0..100. Image names are matched as the
node reports them, after adding ":latest" to an untagged pod image (as kube-scheduler
does; "nginx" therefore does not match "docker.io/library/nginx:latest").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from secondary_scheduler.framework.aliases import IntArray, Slots
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.interface import CycleState, ScorePlugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.framework.scores import MAX_NODE_SCORE

MIB = 1024 * 1024
MIN_THRESHOLD = 23 * MIB
MAX_CONTAINER_THRESHOLD = 1000 * MIB


def normalized_image_name(name: str) -> str:
    """``name`` with ":latest" when it has no tag (a ":" after the last "/")."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


class ImageLocality(ScorePlugin):
    name: ClassVar[str] = "ImageLocality"

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Slots) -> IntArray:
        images = [normalized_image_name(image) for image in pod.images]
        total_nodes = table.num_nodes
        spread = {image: table.image_node_counts[image] / total_nodes for image in images}
        max_threshold = MAX_CONTAINER_THRESHOLD * len(images)
        if not any(spread.values()):  # no node holds any of them: every score is 0
            return np.zeros(len(nodes), dtype=np.int64)

        total = np.zeros(len(nodes), dtype=np.int64)
        for image in images:
            if spread[image]:
                # int(size * spread) per image, as kube-scheduler truncates each image's share
                total += (table.image_column(image)[nodes] * spread[image]).astype(np.int64)
        clamped = np.clip(total, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
