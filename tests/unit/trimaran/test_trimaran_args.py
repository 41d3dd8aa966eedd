"""Plugin args: upstream's defaults and defaulting rules, and strict keys.

The models live beside their plugins (``plugins/trimaran/args.py``, ``<plugin>/args.py``):
one args model per plugin.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from secondary_scheduler.config import ConfigError, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.trimaran.args import TrimaranArgs
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs


@pytest.mark.parametrize(
    ("given", "provider_type", "insecure", "uses_watcher"),
    [
        ({}, "KubernetesMetricsServer", False, False),
        ({"watcherAddress": "http://load-watcher:2020"}, "KubernetesMetricsServer", False, True),
        ({"watcherAddress": ""}, "KubernetesMetricsServer", False, False),
        (
            {"metricProvider": {"type": "Prometheus", "address": "http://prom:9090"}},
            "Prometheus",
            True,
            False,
        ),
        (
            {
                "metricProvider": {
                    "type": "Prometheus",
                    "address": "http://prom:9090",
                    "insecureSkipVerify": False,
                }
            },
            "Prometheus",
            False,
            False,
        ),
        (
            {"watcherAddress": "http://w:2020", "metricProvider": {"type": "SignalFx"}},
            "SignalFx",
            False,
            True,
        ),
    ],
)
def test_trimaran_spec_defaulting(
    given: dict[str, Any], provider_type: str, insecure: bool, uses_watcher: bool
) -> None:
    """Upstream's SetDefaultTrimaranSpec; an unset insecureSkipVerify reads as false (Go's nil)."""
    spec = TrimaranArgs.model_validate(given)
    assert spec.metric_provider.type == provider_type
    assert spec.metric_provider.insecure_skip_verify is insecure
    assert spec.uses_watcher is uses_watcher


def test_signalfx_is_rejected_naming_the_field_and_the_alternatives() -> None:
    with pytest.raises(ValidationError) as caught:
        TrimaranArgs.model_validate({"metricProvider": {"type": "SignalFx", "address": "https://sfx"}})
    message = str(caught.value)
    assert "metricProvider.type SignalFx is not supported" in message
    assert all(
        alternative in message for alternative in ("Prometheus", "KubernetesMetricsServer", "watcherAddress")
    )


def test_signalfx_stops_the_config_at_load() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "profiles:\n- schedulerName: s\n  plugins: {multiPoint: {enabled: [{name: TargetLoadPacking}]}}\n"
            "  pluginConfig:\n  - name: TargetLoadPacking\n"
            "    args: {metricProvider: {type: SignalFx, address: 'https://ingest.signalfx.com'}}\n",
            catalog=IN_TREE_CATALOG,
        )
    (problem,) = caught.value.problems
    assert problem.path == "profiles[0].pluginConfig[0].args"
    assert "metricProvider.type SignalFx is not supported by this scheduler" in problem.message


def test_unknown_keys_are_rejected_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="Token"):
        TargetLoadPackingArgs.model_validate({"metricProvider": {"type": "Prometheus", "Token": "secret"}})


@pytest.mark.parametrize(
    "given", [{"targetUtilization": "70"}, {"metricProvider": {"insecureSkipVerify": "true"}}]
)
def test_values_are_not_coerced(given: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TargetLoadPackingArgs.model_validate(given)


def test_type_meta_is_accepted() -> None:
    """Upstream's args accept apiVersion/kind inline; the loader checks and drops them."""
    result = load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: s\n  plugins: {multiPoint: {enabled: [{name: LowRiskOverCommitment}]}}\n"
        "  pluginConfig:\n  - name: LowRiskOverCommitment\n    args:\n"
        "      apiVersion: kubescheduler.config.k8s.io/v1\n      kind: LowRiskOverCommitmentArgs\n"
        "      smoothingWindowSize: 3\n",
        catalog=IN_TREE_CATALOG,
    )
    args = result.config.profiles[0].plugin_args["LowRiskOverCommitment"]
    assert isinstance(args, LowRiskOverCommitmentArgs) and args.smoothing_window_size == 3


def test_target_load_packing_defaults() -> None:
    args = TargetLoadPackingArgs.model_validate({})
    assert args.target_utilization == 40
    assert args.default_cpu_millis == 1000
    assert args.requests_multiplier == 1.5


@pytest.mark.parametrize(("given", "expected"), [(0, 40), (-5, 40), (None, 40), (70, 70)])
def test_target_utilization_non_positive_falls_back(given: int | None, expected: int) -> None:
    assert TargetLoadPackingArgs.model_validate({"targetUtilization": given}).target_utilization == expected


def test_target_load_packing_seed_values() -> None:
    args = TargetLoadPackingArgs.model_validate(
        {"targetUtilization": 70, "defaultRequests": {"cpu": "2000m"}, "defaultRequestsMultiplier": "1"}
    )
    assert (args.target_utilization, args.default_cpu_millis, args.requests_multiplier) == (70, 2000, 1.0)


@pytest.mark.parametrize("multiplier", ["abc", " 1.5", "1_5", ""])
def test_unparsable_multiplier_fails_at_start(multiplier: str) -> None:
    with pytest.raises(ValidationError, match="defaultRequestsMultiplier"):
        TargetLoadPackingArgs.model_validate({"defaultRequestsMultiplier": multiplier})


def test_default_requests_without_cpu_predict_zero() -> None:
    assert (
        TargetLoadPackingArgs.model_validate({"defaultRequests": {"memory": "1Gi"}}).default_cpu_millis == 0
    )


@pytest.mark.parametrize(
    ("given", "margin", "sensitivity"),
    [
        ({}, 1.0, 1.0),
        ({"safeVarianceMargin": -1, "safeVarianceSensitivity": -2}, 1.0, 1.0),
        ({"safeVarianceMargin": 3, "safeVarianceSensitivity": 0}, 3.0, 0.0),
    ],
)
def test_load_variation_defaults(given: dict[str, Any], margin: float, sensitivity: float) -> None:
    args = LoadVariationRiskBalancingArgs.model_validate(given)
    assert (args.safe_variance_margin, args.safe_variance_sensitivity) == (margin, sensitivity)


@pytest.mark.parametrize(
    ("given", "window", "weights"),
    [
        ({}, 5, {"cpu": 0.5, "memory": 0.5}),
        ({"smoothingWindowSize": 0, "riskLimitWeights": {}}, 5, {"cpu": 0.5, "memory": 0.5}),
        ({"smoothingWindowSize": 3, "riskLimitWeights": {"cpu": 1}}, 3, {"cpu": 1.0, "memory": 0.5}),
        ({"riskLimitWeights": {"cpu": 1.5, "memory": -0.1}}, 5, {"cpu": 0.5, "memory": 0.5}),
    ],
)
def test_low_risk_defaults(given: dict[str, Any], window: int, weights: dict[str, float]) -> None:
    args = LowRiskOverCommitmentArgs.model_validate(given)
    assert args.smoothing_window_size == window
    assert args.risk_limit_weights == weights
