"""The Trimaran plugins by name, for ``framework.registry.build_registry``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from secondary_scheduler.framework.interface import Plugin
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.plugin import LoadVariationRiskBalancing
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.plugin import LowRiskOverCommitment
from secondary_scheduler.plugins.trimaran.targetloadpacking.plugin import TargetLoadPacking

TRIMARAN_PLUGINS: Final[Mapping[str, type[Plugin]]] = MappingProxyType(
    {plugin.name: plugin for plugin in (TargetLoadPacking, LoadVariationRiskBalancing, LowRiskOverCommitment)}
)
