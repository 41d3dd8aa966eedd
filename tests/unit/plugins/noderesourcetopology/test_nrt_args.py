"""NodeResourceTopologyMatchArgs: upstream's defaults, and errors for what upstream refuses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from secondary_scheduler.plugins.noderesourcetopology.args import NodeResourceTopologyMatchArgs


def test_defaults_are_upstreams() -> None:
    args = NodeResourceTopologyMatchArgs()
    assert args.scoring_strategy.type == "LeastAllocated"
    assert args.weights == {"cpu": 1, "memory": 1}
    assert args.cache_resync_period_seconds == 0 and not args.discard_reserved_nodes
    assert args.cache.model_dump() == {
        "foreignPodsDetect": "All",
        "resyncMethod": "Autodetect",
        "informerMode": "Dedicated",
        "resyncScope": "All",
    }


def test_empty_resources_mean_cpu_and_memory_and_weight_zero_means_one() -> None:
    args = NodeResourceTopologyMatchArgs.model_validate({"scoringStrategy": {"type": "MostAllocated"}})
    assert args.weights == {"cpu": 1, "memory": 1}
    args = NodeResourceTopologyMatchArgs.model_validate(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}
    )
    assert args.weights == {"cpu": 1}


def test_a_strategy_without_a_known_type_is_refused() -> None:
    with pytest.raises(ValidationError, match="invalid ScoringStrategyType ''"):
        NodeResourceTopologyMatchArgs.model_validate({"scoringStrategy": {"resources": [{"name": "cpu"}]}})
    with pytest.raises(ValidationError, match="invalid ScoringStrategyType 'Fancy'"):
        NodeResourceTopologyMatchArgs.model_validate({"scoringStrategy": {"type": "Fancy"}})


@pytest.mark.parametrize(
    "cache",
    [{"foreignPodsDetect": "Some"}, {"informerMode": "Private"}, {"resyncScope": "X"}, {"cacheSize": 1}],
)
def test_unknown_cache_settings_are_refused(cache: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        NodeResourceTopologyMatchArgs.model_validate({"cacheResyncPeriodSeconds": 5, "cache": cache})
