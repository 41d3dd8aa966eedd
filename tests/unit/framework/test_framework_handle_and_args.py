"""The handle's shared services and the forms plugin args may come in."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from secondary_scheduler.framework import Handle
from secondary_scheduler.framework.args import args_mapping
from secondary_scheduler.plugins.interpodaffinity.plugin import InterPodAffinity


class Collector:
    """Stands for a service an out-of-tree plugin shares (e.g. a metrics collector)."""


def test_services_are_found_by_name_and_type() -> None:
    collector = Collector()
    handle = Handle()
    handle.register_service("load-watcher", collector)
    assert handle.service("load-watcher", Collector) is collector
    with pytest.raises(LookupError, match="no Collector registered as service 'missing'"):
        handle.service("missing", Collector)
    with pytest.raises(LookupError):
        handle.service("load-watcher", str)


class AffinityArgs(BaseModel):
    """Like the config loader's validated args: snake_case fields, camelCase aliases."""

    model_config = ConfigDict(validate_by_name=True)
    hard_pod_affinity_weight: int = Field(1, alias="hardPodAffinityWeight")
    ignore_preferred_terms_of_existing_pods: bool | None = Field(
        None, alias="ignorePreferredTermsOfExistingPods"
    )


def test_args_may_be_none_a_mapping_or_a_pydantic_model() -> None:
    assert args_mapping(None) == {}
    assert args_mapping({"hardPodAffinityWeight": 5}) == {"hardPodAffinityWeight": 5}
    assert args_mapping(AffinityArgs(hard_pod_affinity_weight=5)) == {"hardPodAffinityWeight": 5}
    with pytest.raises(TypeError, match="not int"):
        args_mapping(5)


def test_plugins_read_args_from_models() -> None:
    plugin = InterPodAffinity(AffinityArgs(hard_pod_affinity_weight=7), Handle())
    assert plugin.hard_pod_affinity_weight == 7
    assert InterPodAffinity(None, Handle()).hard_pod_affinity_weight == 1
