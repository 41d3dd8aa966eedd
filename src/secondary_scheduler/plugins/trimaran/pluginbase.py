"""What the three Trimaran plugins share: their args, their metric source, and the cycle note."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from secondary_scheduler.framework.aliases import Slots
from secondary_scheduler.framework.events import ClusterEventWithHint
from secondary_scheduler.framework.handle import Handle
from secondary_scheduler.framework.interface import CycleState, Plugin
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs
from secondary_scheduler.plugins.trimaran.nodeusage import NodeUsage, UsagePolicy
from secondary_scheduler.plugins.trimaran.notes import MetricsNote, note_key
from secondary_scheduler.plugins.trimaran.services import TrimaranServices

log = logging.getLogger(__name__)


class TrimaranPlugin(Plugin):
    """Base of the Trimaran plugins: finds the shared services and this plugin's metric source."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """It never rejects a pod in a way a cluster event could undo."""
        return ()

    def __init__(self, args: TrimaranArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.services = TrimaranServices.of(handle)
        self.view = self.services.collectors.view_for(args)
        self.policy = UsagePolicy.of(args)

    def usage(self, table: NodeTable, nodes: Slots) -> NodeUsage:
        """The scored nodes' metrics from the latest snapshot (no network)."""
        return self.view.usage(table, nodes, self.policy)

    def remember(self, state: CycleState, note: MetricsNote) -> None:
        """Keep the cycle's note for explanations, and count scores made from requests."""
        state.write(note_key(self.name), note)
        state.add_note(note)
        if note.estimated:
            self.services.telemetry.estimated_scores.labels(self.name, note.source).inc(note.estimated_nodes)
