"""Plugin merging: disabled, enabled, "*", multiPoint and weights, as kube-scheduler does it."""

from __future__ import annotations

from collections.abc import Callable

from secondary_scheduler.config import ExtensionPoint, LoadResult, PluginEntry, Problem, Profile
from secondary_scheduler.config.merge import Configured, PluginSet, expand, merge_set
from secondary_scheduler.plugins.noderesources.args import NodeResourcesFitArgs

P = ExtensionPoint
Load = Callable[..., LoadResult]
Errors = Callable[..., list[Problem]]

DEFAULT_SCORE = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]


def profile_of(load: Load, plugins: str, version: str = "v1") -> Profile:
    body = "profiles:\n- schedulerName: s\n  plugins:\n" + "".join(
        f"    {line}\n" for line in plugins.splitlines()
    )
    return load(body, version).config.profiles[0]


def names(profile: Profile, point: ExtensionPoint) -> list[str]:
    return [entry.name for entry in profile.plugins[point]]


def scores(profile: Profile) -> list[tuple[str, int]]:
    return [(entry.name, entry.weight) for entry in profile.plugins[P.SCORE]]


def test_disabling_at_one_point_leaves_the_plugin_at_its_other_points(load: Load) -> None:
    profile = profile_of(load, "score:\n  disabled: [{name: NodeResourcesBalancedAllocation}]")
    assert "NodeResourcesBalancedAllocation" not in names(profile, P.SCORE)
    assert "NodeResourcesBalancedAllocation" in names(profile, P.PRE_SCORE)  # upstream keeps its PreScore too


def test_disabling_under_multipoint_removes_the_plugin_everywhere(load: Load) -> None:
    profile = profile_of(load, "multiPoint:\n  disabled: [{name: NodeResourcesFit}]")
    assert all("NodeResourcesFit" not in names(profile, point) for point in P)
    assert "NodeResourcesFit" not in profile.plugin_args


def test_star_disables_every_default_at_that_point_only(load: Load) -> None:
    profile = profile_of(
        load, "score:\n  disabled: [{name: '*'}]\n  enabled: [{name: TargetLoadPacking, weight: 5}]"
    )
    assert scores(profile) == [("TargetLoadPacking", 5)]
    assert "NodeResourcesFit" in names(profile, P.FILTER)


def test_star_under_multipoint_leaves_only_what_is_enabled(load: Load) -> None:
    profile = profile_of(
        load,
        "multiPoint:\n  disabled: [{name: '*'}]\n"
        "  enabled: [{name: PrioritySort}, {name: NodeResourcesFit, weight: 4}, {name: DefaultBinder}]",
    )
    assert names(profile, P.FILTER) == ["NodeResourcesFit"]
    assert scores(profile) == [("NodeResourcesFit", 4)]
    assert names(profile, P.PRE_ENQUEUE) == []


def test_enabled_plugins_are_appended_with_weight_1_by_default(load: Load) -> None:
    profile = profile_of(
        load, "score:\n  enabled: [{name: TargetLoadPacking}, {name: ImageLocality, weight: 0}]"
    )
    # ImageLocality is re-configured at score: it moves before the multiPoint plugins (upstream's order).
    assert scores(profile) == [("ImageLocality", 1), *DEFAULT_SCORE[:-1], ("TargetLoadPacking", 1)]


def test_a_default_reenabled_at_a_point_overrides_its_weight_and_goes_first(load: Load) -> None:
    profile = profile_of(load, "score:\n  enabled: [{name: InterPodAffinity, weight: 7}]")
    assert scores(profile)[0] == ("InterPodAffinity", 7)
    assert sorted(scores(profile)[1:]) == sorted(
        entry for entry in DEFAULT_SCORE if entry[0] != "InterPodAffinity"
    )
    assert names(profile, P.FILTER)[-2:] == ["InterPodAffinity", "DynamicResources"]  # default order


def test_a_default_reenabled_under_multipoint_replaces_it_in_place_weight_and_all(load: Load) -> None:
    profile = profile_of(
        load, "multiPoint:\n  enabled: [{name: NodeAffinity, weight: 9}, {name: TaintToleration}]"
    )
    # In place, and without a weight the replaced entry scores with 1 (upstream replaces the whole entry).
    assert scores(profile)[:2] == [("TaintToleration", 1), ("NodeAffinity", 9)]


def test_multipoint_expands_to_each_point_a_plugin_implements(load: Load) -> None:
    profile = profile_of(load, "multiPoint:\n  enabled: [{name: LowRiskOverCommitment, weight: 2}]")
    assert names(profile, P.PRE_SCORE)[-1] == "LowRiskOverCommitment"
    assert scores(profile)[-1] == ("LowRiskOverCommitment", 2)
    assert "LowRiskOverCommitment" not in names(profile, P.FILTER)


def test_a_point_specific_weight_wins_over_multipoint(load: Load) -> None:
    profile = profile_of(
        load,
        "multiPoint:\n  enabled: [{name: TargetLoadPacking, weight: 2}]\n"
        "score:\n  enabled: [{name: TargetLoadPacking, weight: 8}]",
    )
    assert scores(profile)[0] == ("TargetLoadPacking", 8)
    assert names(profile, P.SCORE).count("TargetLoadPacking") == 1


def test_disabling_a_multipoint_plugin_at_one_point(load: Load) -> None:
    profile = profile_of(load, "filter:\n  disabled: [{name: NodePorts}]")
    assert "NodePorts" not in names(profile, P.FILTER)
    assert "NodePorts" in names(profile, P.PRE_FILTER)


def test_v1beta1_configs_merge_like_v1(load: Load) -> None:
    profile = profile_of(load, "score:\n  enabled: [{name: TargetLoadPacking, weight: 3}]", "v1beta1")
    assert scores(profile) == [*DEFAULT_SCORE, ("TargetLoadPacking", 3)]


def test_merge_set_replaces_in_place_and_appends_the_rest() -> None:
    defaults = (Configured("A", 1), Configured("B", 2), Configured("C", 3))
    user = PluginSet((Configured("X", None), Configured("B", 5)), frozenset({"C"}))
    merged = merge_set(defaults, user)
    assert [(entry.name, entry.weight) for entry in merged.enabled] == [("A", 1), ("B", 5), ("X", None)]
    assert merge_set(defaults, PluginSet((Configured("X", None),), frozenset({"*"}))).enabled == (
        Configured("X", None),
    )


def test_expand_orders_overrides_then_multipoint_then_the_rest() -> None:
    multi_point = PluginSet((Configured("A", None), Configured("B", None), Configured("C", None)))
    own = PluginSet((Configured("Z", None), Configured("B", 4)), frozenset({"C"}))
    assert [entry.name for entry in expand(multi_point, own, lambda name: True)] == ["B", "A", "Z"]
    assert [entry.name for entry in expand(multi_point, own, lambda name: name != "A")] == ["B", "Z"]


def test_v1beta1_legacy_score_plugins_disabled_is_a_warning_not_an_error(load: Load) -> None:
    result = load(
        """
        profiles:
        - schedulerName: s
          plugins:
            score:
              disabled: [{name: NodeResourcesLeastAllocated}, {name: NodeResourcesMostAllocated}]
        """,
        "v1beta3",
    )
    assert scores(result.config.profiles[0]) == DEFAULT_SCORE
    notes = [w for w in result.warnings if "no effect" in w.message]
    assert [w.path for w in notes] == [
        "profiles[0].plugins.score.disabled[0].name",
        "profiles[0].plugins.score.disabled[1].name",
    ]
    assert "scoringStrategy.type" in notes[0].message


def test_v1beta1_legacy_score_plugin_enabled_maps_to_node_resources_fit(load: Load) -> None:
    result = load(
        """
        profiles:
        - schedulerName: s
          plugins:
            score:
              disabled: [{name: '*'}]
              enabled: [{name: RequestedToCapacityRatio, weight: 3}]
          pluginConfig:
          - name: RequestedToCapacityRatio
            args:
              shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]
              resources: [{name: cpu, weight: 2}]
        """,
        "v1beta1",
    )
    profile = result.config.profiles[0]
    assert scores(profile) == [("NodeResourcesFit", 3)]
    fit = profile.plugin_args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "RequestedToCapacityRatio"
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [("cpu", 2)]
    assert fit.scoring_strategy.requested_to_capacity_ratio is not None
    assert [(p.utilization, p.score) for p in fit.scoring_strategy.requested_to_capacity_ratio.shape] == [
        (0, 10),
        (100, 0),
    ]
    assert any("merged into NodeResourcesFit" in w.message for w in result.warnings)
    assert "RequestedToCapacityRatio" not in profile.plugin_args


def test_legacy_strategy_conflicting_with_node_resources_fit_args(errors: Errors) -> None:
    (problem,) = errors(
        """
        profiles:
        - schedulerName: s
          plugins:
            score:
              enabled: [{name: NodeResourcesMostAllocated}]
          pluginConfig:
          - name: NodeResourcesFit
            args: {scoringStrategy: {type: LeastAllocated}}
        """
    )
    assert problem.path == "profiles[0].pluginConfig[0].args.scoringStrategy.type"
    assert "conflicts with NodeResourcesMostAllocated" in problem.message


def test_two_legacy_strategies_cannot_both_be_enabled(errors: Errors) -> None:
    problems = errors(
        """
        profiles:
        - schedulerName: s
          plugins:
            score:
              enabled: [{name: NodeResourcesMostAllocated}, {name: NodeResourcesLeastAllocated}]
        """,
        "v1beta1",
    )
    assert any("cannot both be enabled" in p.message for p in problems)


def test_legacy_requested_to_capacity_ratio_needs_a_shape(errors: Errors) -> None:
    (problem,) = errors("profiles:\n- plugins: {score: {enabled: [{name: RequestedToCapacityRatio}]}}\n")
    assert problem.path == "profiles[0].plugins.score.enabled[0].name"
    assert "needs a shape" in problem.message


def test_enabling_a_plugin_we_do_not_ship_lists_the_ones_we_have(errors: Errors) -> None:
    (problem,) = errors("profiles:\n- plugins: {filter: {enabled: [{name: NetworkOverhead}]}}\n")
    assert problem.path == "profiles[0].plugins.filter.enabled[0].name"
    assert "'NetworkOverhead' is not a plugin this scheduler ships" in problem.message
    assert "TargetLoadPacking" in problem.message and "PrioritySort" in problem.message


def test_a_misspelt_plugin_name_gets_a_suggestion(errors: Errors) -> None:
    (problem,) = errors("profiles:\n- plugins: {score: {enabled: [{name: TargetLoadPackng}]}}\n")
    assert "(did you mean TargetLoadPacking?)" in problem.message


def test_a_plugin_enabled_at_a_point_it_does_not_implement(errors: Errors) -> None:
    (problem,) = errors("profiles:\n- plugins: {filter: {enabled: [{name: TargetLoadPacking}]}}\n")
    assert problem.message == "TargetLoadPacking does not implement filter; enable it under: score"


def test_a_plugin_enabled_twice_at_one_point(errors: Errors) -> None:
    (problem,) = errors(
        "profiles:\n- plugins: {score: {enabled: [{name: ImageLocality}, {name: ImageLocality}]}}\n"
    )
    assert problem.path == "profiles[0].plugins.score.enabled[1]"
    assert "enabled more than once under score" in problem.message


def test_queue_sort_and_bind_are_required(errors: Errors) -> None:
    problems = errors(
        "profiles:\n- plugins: {queueSort: {disabled: [{name: '*'}]},"
        " bind: {disabled: [{name: DefaultBinder}]}}\n"
    )
    assert {p.path: p.message for p in problems} == {
        "profiles[0].plugins.queueSort": "exactly one queueSort plugin must be enabled (found: none); "
        "PrioritySort is ours",
        "profiles[0].plugins.bind": "no bind plugin is enabled: enable DefaultBinder",
    }


def test_disabling_unknown_plugins_is_harmless_but_said(load: Load) -> None:
    result = load(
        "profiles:\n- schedulerName: s\n  plugins: {filter: {disabled: [{name: CapacityScheduling}]}}\n"
    )
    (warning,) = [w for w in result.warnings if "nothing to disable" in w.message]
    assert warning.path == "profiles[0].plugins.filter.disabled[0].name"


def test_a_weight_outside_score_is_ignored_with_a_warning(load: Load) -> None:
    result = load(
        "profiles:\n- schedulerName: s\n  plugins: {filter: {enabled: [{name: NodeName, weight: 3}]}}\n"
    )
    assert PluginEntry("NodeName", 0) in result.config.profiles[0].plugins[P.FILTER]
    assert any(w.path.endswith("filter.enabled[0].weight") for w in result.warnings)
