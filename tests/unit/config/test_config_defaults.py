"""Versions and defaults: what an (almost) empty configuration turns into."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from secondary_scheduler.config import ExtensionPoint, LoadResult, PluginEntry, Problem
from secondary_scheduler.config.base import format_go_duration, parse_go_duration
from secondary_scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs
from secondary_scheduler.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from secondary_scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs

P = ExtensionPoint
Load = Callable[..., LoadResult]
Errors = Callable[..., list[Problem]]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2", "v1beta3", "v1"])
def test_every_version_loads(load: Load, version: str) -> None:
    result = load("profiles: [{schedulerName: secondary}]\n", version)
    assert [profile.scheduler_name for profile in result.config.profiles] == ["secondary"]
    deprecated = [w for w in result.warnings if w.path == "apiVersion"]
    assert bool(deprecated) == (version != "v1")


def test_old_versions_say_when_kube_scheduler_dropped_them(load: Load) -> None:
    (warning,) = [w for w in load("", "v1beta2").warnings if w.path == "apiVersion"]
    assert (
        "last served it in 1.27" in warning.message
        and "migrate to kubescheduler.config.k8s.io/v1" in warning.message
    )


def test_top_level_defaults(load: Load) -> None:
    config = load().config
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (16, None)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert (config.enable_profiling, config.enable_contention_profiling, config.delay_cache_until_active) == (
        True,
        True,
        False,
    )
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    election = config.leader_election
    assert election.leader_elect is True
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)
    assert (election.resource_lock, election.resource_name, election.resource_namespace) == (
        "leases",
        "kube-scheduler",
        "kube-system",
    )


def test_given_values_and_upstream_zero_defaults(load: Load) -> None:
    config = load(
        """
        parallelism: 4
        percentageOfNodesToScore: 30
        enableProfiling: false
        clientConnection: {qps: 0, burst: 0, kubeconfig: /etc/kubeconfig}
        leaderElection: {leaseDuration: 1m30s, renewDeadline: 1m, retryPeriod: 500ms, resourceName: sched}
        """
    ).config
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (4, 30)
    assert (config.enable_profiling, config.enable_contention_profiling) == (False, False)
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    assert config.client_connection.kubeconfig == "/etc/kubeconfig"
    election = config.leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (90.0, 60.0, 0.5)
    assert election.resource_name == "sched"


def test_no_profiles_means_one_default_scheduler_profile_with_a_warning(load: Load) -> None:
    result = load()
    assert [profile.scheduler_name for profile in result.config.profiles] == ["default-scheduler"]
    assert any("named default-scheduler" in w.message for w in result.warnings)


def test_default_plugins_are_kube_scheduler_1_34s_restricted_to_ours(load: Load) -> None:
    plugins = load("profiles: [{schedulerName: s}]\n").config.profiles[0].plugins
    names = {point: [entry.name for entry in plugins[point]] for point in P}
    assert names[P.QUEUE_SORT] == ["PrioritySort"]
    assert names[P.PRE_ENQUEUE] == ["SchedulingGates", "DynamicResources", "DefaultPreemption"]
    volumes = ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]
    assert names[P.PRE_FILTER] == [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        *volumes,
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ]
    assert names[P.FILTER] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        *volumes,
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ]
    assert names[P.PRE_SCORE] == [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ]
    assert plugins[P.SCORE] == (
        PluginEntry("TaintToleration", 3),
        PluginEntry("NodeAffinity", 2),
        PluginEntry("NodeResourcesFit", 1),
        PluginEntry("VolumeBinding", 1),
        PluginEntry("PodTopologySpread", 2),
        PluginEntry("InterPodAffinity", 2),
        PluginEntry("NodeResourcesBalancedAllocation", 1),
        PluginEntry("ImageLocality", 1),
    )
    assert names[P.POST_FILTER] == ["DynamicResources", "DefaultPreemption"]
    assert names[P.BIND] == ["DefaultBinder"]
    assert names[P.RESERVE] == names[P.PRE_BIND] == ["VolumeBinding", "DynamicResources"]
    for point in (P.PERMIT, P.POST_BIND):
        assert names[point] == []
    assert all(entry.weight == 0 for point in P if point is not P.SCORE for entry in plugins[point])


def test_every_enabled_plugin_with_args_gets_default_args(load: Load) -> None:
    profile = load("profiles: [{schedulerName: s}]\n").config.profiles[0]
    assert list(profile.plugin_args) == [
        "DefaultPreemption",  # enabled at preEnqueue too, the first point after queueSort
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ]
    fit = profile.plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    balanced = profile.plugin_args["NodeResourcesBalancedAllocation"]
    assert isinstance(balanced, NodeResourcesBalancedAllocationArgs)
    assert [(r.name, r.weight) for r in balanced.resources] == [("cpu", 1), ("memory", 1)]
    spread = profile.plugin_args["PodTopologySpread"]
    assert isinstance(spread, PodTopologySpreadArgs)
    assert (spread.defaulting_type, spread.default_constraints) == ("System", [])
    affinity = profile.plugin_args["InterPodAffinity"]
    assert isinstance(affinity, InterPodAffinityArgs)
    assert (affinity.hard_pod_affinity_weight, affinity.ignore_preferred_terms_of_existing_pods) == (1, False)
    assert profile.enabled_plugins()[:5] == (
        "PrioritySort",
        "SchedulingGates",
        "DynamicResources",
        "DefaultPreemption",
        "NodeAffinity",
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("-2s", -2.0),
        ("0", 0.0),
        ("250us", 0.00025),
    ],
)
def test_go_durations_parse(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["15", "", "1x", "s", "1h 2m"])
def test_bad_go_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(15.0, "15s"), (90.0, "1m30s"), (3600.0, "1h0m0s"), (0.5, "500ms"), (1.5, "1.5s"), (0, "0s")],
)
def test_go_durations_format_the_way_go_prints_them(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text
    assert parse_go_duration(text) == seconds
