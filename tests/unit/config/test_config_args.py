"""Plugin args: defaults and validation per plugin, and how pluginConfig entries are matched."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from secondary_scheduler.config import ExtensionPoint, LoadResult, Problem
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.nodeaffinity.args import NodeAffinityArgs
from secondary_scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs
from secondary_scheduler.plugins.trimaran.loadvariationriskbalancing.args import (
    LoadVariationRiskBalancingArgs,
)
from secondary_scheduler.plugins.trimaran.lowriskovercommitment.args import LowRiskOverCommitmentArgs
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs

Load = Callable[..., LoadResult]
Errors = Callable[..., list[Problem]]


def with_args(plugin: str, args: str, score: bool = True) -> str:
    """A profile that enables `plugin` at score (if asked) and configures it with `args` (YAML)."""
    enable = f"  plugins: {{score: {{enabled: [{{name: {plugin}}}]}}}}\n" if score else ""
    return f"profiles:\n- schedulerName: s\n{enable}  pluginConfig:\n  - name: {plugin}\n    args: {args}\n"


def test_the_catalog_matches_the_brief() -> None:
    shipped = IN_TREE_CATALOG
    assert {name: sorted(p.value for p in spec.extension_points) for name, spec in shipped.items()} == {
        "PrioritySort": ["queueSort"],
        "SchedulingGates": ["preEnqueue"],
        "NodeUnschedulable": ["filter"],
        "NodeName": ["filter"],
        "TaintToleration": ["filter", "preScore", "score"],
        "NodeAffinity": ["filter", "preFilter", "preScore", "score"],
        "NodePorts": ["filter", "preFilter"],
        "NodeResourcesFit": ["filter", "preFilter", "preScore", "score"],
        "NodeResourcesBalancedAllocation": ["preScore", "score"],
        "ImageLocality": ["score"],
        "PodTopologySpread": ["filter", "preFilter", "preScore", "score"],
        "InterPodAffinity": ["filter", "preFilter", "preScore", "score"],
        "VolumeRestrictions": ["filter", "preFilter"],
        "NodeVolumeLimits": ["filter", "preFilter"],
        "VolumeBinding": ["filter", "preBind", "preFilter", "preScore", "reserve", "score"],
        "VolumeZone": ["filter", "preFilter"],
        "DynamicResources": ["filter", "postFilter", "preBind", "preEnqueue", "preFilter", "reserve"],
        "DefaultPreemption": ["postFilter", "preEnqueue"],
        "DefaultBinder": ["bind"],
        "TargetLoadPacking": ["score"],
        "LoadVariationRiskBalancing": ["score"],
        "LowRiskOverCommitment": ["preScore", "score"],
        "LoadAwarePacking": ["filter", "score"],
        "Coscheduling": ["permit", "postFilter", "preFilter", "queueSort", "reserve"],
        "NodeResourceTopologyMatch": ["filter", "postBind", "reserve", "score"],
    }
    assert shipped["TargetLoadPacking"].args_model is TargetLoadPackingArgs
    assert shipped["ImageLocality"].args_model is None
    assert ExtensionPoint.SCORE in shipped["LowRiskOverCommitment"].extension_points


def test_trimaran_defaults_without_plugin_config(load: Load) -> None:
    profile = load(
        "profiles:\n- schedulerName: s\n  plugins: {multiPoint: {enabled: "
        "[{name: TargetLoadPacking}, {name: LoadVariationRiskBalancing}, {name: LowRiskOverCommitment}]}}\n"
    ).config.profiles[0]
    tlp = profile.plugin_args["TargetLoadPacking"]
    assert isinstance(tlp, TargetLoadPackingArgs)
    assert (tlp.target_utilization, tlp.default_requests, tlp.default_requests_multiplier) == (
        40,
        {"cpu": "1000m"},
        "1.5",
    )
    assert (tlp.metric_provider.type, tlp.metric_provider.insecure_skip_verify, tlp.watcher_address) == (
        "KubernetesMetricsServer",
        False,
        None,
    )
    assert (tlp.metrics_staleness_limit, tlp.fallback_to_requests, tlp.parity_mode) == (300.0, True, False)
    lvrb = profile.plugin_args["LoadVariationRiskBalancing"]
    assert isinstance(lvrb, LoadVariationRiskBalancingArgs)
    assert (lvrb.safe_variance_margin, lvrb.safe_variance_sensitivity) == (1.0, 1.0)
    lroc = profile.plugin_args["LowRiskOverCommitment"]
    assert isinstance(lroc, LowRiskOverCommitmentArgs)
    assert (lroc.smoothing_window_size, lroc.risk_limit_weights) == (5, {"cpu": 0.5, "memory": 0.5})


def test_prometheus_skips_tls_verification_unless_told_and_says_so(load: Load) -> None:
    result = load(with_args("TargetLoadPacking", "{metricProvider: {type: Prometheus, address: https://p}}"))
    args = result.config.profiles[0].plugin_args["TargetLoadPacking"]
    assert isinstance(args, TargetLoadPackingArgs)
    assert args.metric_provider.insecure_skip_verify is True
    (warning,) = [w for w in result.warnings if w.path.endswith("insecureSkipVerify")]
    assert warning.path == "profiles[0].pluginConfig[0].args.metricProvider.insecureSkipVerify"
    assert "not verified" in warning.message

    verified = load(
        with_args(
            "TargetLoadPacking",
            "{metricProvider: {type: Prometheus, address: https://p, insecureSkipVerify: false}}",
        )
    )
    assert not any(w.path.endswith("insecureSkipVerify") for w in verified.warnings)


def test_empty_provider_type_means_the_metrics_server(load: Load) -> None:
    args = (
        load(with_args("LoadVariationRiskBalancing", "{metricProvider: {type: ''}}"))
        .config.profiles[0]
        .plugin_args
    )
    lvrb = args["LoadVariationRiskBalancing"]
    assert isinstance(lvrb, LoadVariationRiskBalancingArgs)
    assert lvrb.metric_provider.type == "KubernetesMetricsServer"


def test_our_extension_fields(load: Load) -> None:
    result = load(
        with_args(
            "LowRiskOverCommitment",
            "{metricProvider: {type: Prometheus, address: https://thanos:9091, insecureSkipVerify: false,"
            " tokenSecretRef: {namespace: openshift-monitoring, name: prom, key: token},"
            " caFile: /etc/ca.crt},"
            " metricsStalenessLimit: 2m, fallbackToRequests: false, parityMode: true}",
        )
    )
    args = result.config.profiles[0].plugin_args["LowRiskOverCommitment"]
    assert isinstance(args, LowRiskOverCommitmentArgs)
    secret = args.metric_provider.token_secret_ref
    assert secret is not None and (secret.namespace, secret.name, secret.key) == (
        "openshift-monitoring",
        "prom",
        "token",
    )
    assert args.metric_provider.ca_file == "/etc/ca.crt"
    assert (args.metrics_staleness_limit, args.fallback_to_requests, args.parity_mode) == (120.0, False, True)


def test_an_inline_token_works_but_is_flagged(load: Load) -> None:
    result = load(
        with_args("TargetLoadPacking", "{metricProvider: {type: Prometheus, address: https://p, token: abc}}")
    )
    assert any(w.path.endswith("metricProvider.token") and "plain text" in w.message for w in result.warnings)


@pytest.mark.parametrize(
    ("args", "path", "fragment"),
    [
        ("{metricProvider: {type: Prometheus}}", "args", "metricProvider.address is required for Prometheus"),
        (
            "{metricProvider: {type: Prometheus, address: x, token: a, tokenFile: /t}}",
            "args.metricProvider",
            "set only one of token, tokenFile",
        ),
        ("{defaultRequestsMultiplier: 'one'}", "args.defaultRequestsMultiplier", "'one' is not a number"),
        ("{defaultRequests: {cpu: lots}}", "args.defaultRequests.cpu", "'lots' is not a Kubernetes quantity"),
        ("{metricsStalenessLimit: 0s}", "args.metricsStalenessLimit", "must be > 0"),
        ("{metricProvider: {type: prometheus}}", "args.metricProvider.type", "(did you mean Prometheus?)"),
    ],
)
def test_trimaran_args_errors(errors: Errors, args: str, path: str, fragment: str) -> None:
    problems = errors(with_args("TargetLoadPacking", args))
    assert [p.path for p in problems] == [f"profiles[0].pluginConfig[0].{path}"]
    assert fragment in problems[0].message


def test_a_watcher_address_makes_the_provider_address_optional(load: Load) -> None:
    load(
        with_args(
            "TargetLoadPacking",
            "{watcherAddress: 'http://load-watcher:2020', metricProvider: {type: Prometheus}}",
        )
    )


def test_out_of_range_trimaran_values_fall_back_to_defaults_with_warnings(load: Load) -> None:
    result = load(
        "profiles:\n- schedulerName: s\n  plugins: {multiPoint: {enabled: "
        "[{name: TargetLoadPacking}, {name: LoadVariationRiskBalancing}, {name: LowRiskOverCommitment}]}}\n"
        "  pluginConfig:\n"
        "  - {name: TargetLoadPacking, args: {targetUtilization: 0, defaultRequests: {memory: 1Gi}}}\n"
        "  - {name: LoadVariationRiskBalancing, args: {safeVarianceMargin: -1, safeVarianceSensitivity: 0}}\n"
        "  - {name: LowRiskOverCommitment, args:"
        " {smoothingWindowSize: -3, riskLimitWeights: {cpu: 2, nvidia.com/gpu: 0.1}}}\n"
    )
    args = result.config.profiles[0].plugin_args
    tlp, lvrb, lroc = (
        args["TargetLoadPacking"],
        args["LoadVariationRiskBalancing"],
        args["LowRiskOverCommitment"],
    )
    assert isinstance(tlp, TargetLoadPackingArgs) and tlp.target_utilization == 40
    assert isinstance(lvrb, LoadVariationRiskBalancingArgs)
    assert (lvrb.safe_variance_margin, lvrb.safe_variance_sensitivity) == (1.0, 0.0)  # 0 is allowed
    assert isinstance(lroc, LowRiskOverCommitmentArgs) and lroc.smoothing_window_size == 5
    assert lroc.risk_limit_weights == {"cpu": 0.5, "memory": 0.5, "nvidia.com/gpu": 0.1}
    assert sorted(w.path.rsplit(".args.", 1)[-1] for w in result.warnings if ".args." in w.path) == [
        "defaultRequests",
        "riskLimitWeights.cpu",
        "safeVarianceMargin",
        "smoothingWindowSize",
        "targetUtilization",
    ]


def test_pod_topology_spread_defaulting_type_follows_the_version(load: Load, errors: Errors) -> None:
    constraints = "{defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}"
    old = load(with_args("PodTopologySpread", constraints, score=False), "v1beta1").config.profiles[0]
    spread = old.plugin_args["PodTopologySpread"]
    assert isinstance(spread, PodTopologySpreadArgs) and spread.defaulting_type == "List"
    (problem,) = errors(with_args("PodTopologySpread", constraints, score=False))
    assert problem.path == "profiles[0].pluginConfig[0].args"
    assert "set defaultingType: List" in problem.message


@pytest.mark.parametrize(
    ("plugin", "args", "path", "fragment"),
    [
        (
            "NodeResourcesFit",
            "{scoringStrategy: {type: RequestedToCapacityRatio}}",
            "args.scoringStrategy",
            "needs requestedToCapacityRatio.shape",
        ),
        (
            "NodeResourcesFit",
            "{scoringStrategy: {resources: [{name: cpu}]}}",
            "args.scoringStrategy.type",
            "`type` is required",
        ),
        (
            "NodeResourcesFit",
            "{scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 101}]}}",
            "args.scoringStrategy.resources[0].weight",
            "must be <= 100",
        ),
        (
            "NodeResourcesFit",
            "{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: "
            "{shape: [{utilization: 50, score: 1}, {utilization: 10, score: 2}]}}}",
            "args.scoringStrategy.requestedToCapacityRatio.shape",
            "utilization must increase",
        ),
        (
            "NodeResourcesFit",
            "{ignoredResourceGroups: [example.com/gpu]}",
            "args.ignoredResourceGroups",
            "not a group",
        ),
        (
            "NodeResourcesBalancedAllocation",
            "{resources: [{name: cpu, weight: 2}]}",
            "args.resources",
            "must be 1",
        ),
        ("InterPodAffinity", "{hardPodAffinityWeight: 101}", "args.hardPodAffinityWeight", "must be <= 100"),
        (
            "NodeAffinity",
            "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
            "[{matchExpressions: [{key: zone, operator: In}]}]}}}",
            "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]",
            "needs at least one value",
        ),
        ("InterPodAffinity", "{kind: NodeAffinityArgs}", "args.kind", "kind must be InterPodAffinityArgs"),
    ],
)
def test_in_tree_args_errors(errors: Errors, plugin: str, args: str, path: str, fragment: str) -> None:
    problems = errors(with_args(plugin, args, score=False))
    assert [p.path for p in problems] == [f"profiles[0].pluginConfig[0].{path}"]
    assert fragment in problems[0].message


def test_args_may_carry_their_type_meta(load: Load) -> None:
    profile = load(
        with_args(
            "NodeAffinity",
            "{apiVersion: kubescheduler.config.k8s.io/v1, kind: NodeAffinityArgs, addedAffinity: "
            "{preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, preference: "
            "{matchExpressions: [{key: disk, operator: Exists}]}}]}}",
            score=False,
        )
    ).config.profiles[0]
    args = profile.plugin_args["NodeAffinity"]
    assert isinstance(args, NodeAffinityArgs) and args.added_affinity is not None
    assert args.added_affinity.preferred_during_scheduling_ignored_during_execution[0].weight == 5


def test_plugin_config_for_a_plugin_that_is_not_enabled_is_a_warning(load: Load) -> None:
    result = load(with_args("TargetLoadPacking", "{targetUtilization: 70}", score=False))
    assert "TargetLoadPacking" not in result.config.profiles[0].plugin_args
    (warning,) = [w for w in result.warnings if w.path == "profiles[0].pluginConfig[0].name"]
    assert warning.message == "ignored: TargetLoadPacking is not enabled in this profile"


def test_plugin_config_of_a_disabled_plugin_is_still_validated(errors: Errors) -> None:
    (problem,) = errors(with_args("TargetLoadPacking", "{targetUtilization: high}", score=False))
    assert problem.path == "profiles[0].pluginConfig[0].args.targetUtilization"


def test_plugin_config_for_unknown_plugins_and_plugins_without_args(load: Load) -> None:
    result = load(
        "profiles:\n- schedulerName: s\n  pluginConfig:\n"
        "  - {name: TargetLoadPackng, args: {}}\n  - {name: ImageLocality, args: {x: 1}}\n"
    )
    messages = {w.path: w.message for w in result.warnings if "pluginConfig" in w.path}
    assert "did you mean TargetLoadPacking?" in messages["profiles[0].pluginConfig[0].name"]
    assert messages["profiles[0].pluginConfig[1].args"] == "ignored: ImageLocality takes no args"


def test_duplicate_plugin_config_is_an_error(errors: Errors) -> None:
    (problem,) = errors(
        "profiles:\n- schedulerName: s\n  pluginConfig:\n"
        "  - {name: InterPodAffinity}\n  - {name: InterPodAffinity}\n"
    )
    assert problem.path == "profiles[0].pluginConfig[1].name"
    assert (
        "duplicate pluginConfig for InterPodAffinity (first at profiles[0].pluginConfig[0])"
        in problem.message
    )
