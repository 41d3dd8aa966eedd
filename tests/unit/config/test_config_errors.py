"""Errors people can act on: the path, the line, and the fix; all of them at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from secondary_scheduler.config import ConfigError, LoadResult, Problem, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

Load = Callable[..., LoadResult]
Errors = Callable[..., list[Problem]]


def by_path(problems: list[Problem]) -> dict[str, str]:
    return {problem.path: problem.message for problem in problems}


def test_a_capitalised_field_is_rejected_with_the_fix(errors: Errors) -> None:
    """Upstream decodes strictly and rejects `Token:`; so do we, naming the fix."""
    problems = errors(
        """
        profiles:
        - schedulerName: s
          plugins: {score: {enabled: [{name: TargetLoadPacking}]}}
          pluginConfig:
          - name: TargetLoadPacking
            args:
              metricProvider:
                type: Prometheus
                address: https://prometheus:9091
                Token: abc
        """
    )
    (problem,) = problems
    assert problem.path == "profiles[0].pluginConfig[0].args.metricProvider.Token"
    assert problem.line == 13
    assert problem.message == "unknown field `Token`: did you mean `token`? Field names are case-sensitive"


def test_a_key_that_lost_its_indentation_is_pointed_to_its_parent(errors: Errors) -> None:
    (problem,) = errors("leaderElection:\nleaderElect: false\n")
    assert (problem.path, problem.line) == ("leaderElect", 4)
    assert problem.message == (
        "unknown field `leaderElect`: did you mean leaderElection.leaderElect? indent it under leaderElection"
    )


def test_a_key_indented_too_deep_is_told_to_move_up(errors: Errors) -> None:
    problems = errors("leaderElection:\n  leaderElect: false\n  parallelism: 4\n")
    assert by_path(problems) == {
        "leaderElection.parallelism": "unknown field `parallelism`: `parallelism` belongs at the top level, "
        "not under leaderElection: un-indent it"
    }
    problems = errors("profiles:\n- schedulerName: s\n  plugins:\n    percentageOfNodesToScore: 50\n")
    assert by_path(problems)["profiles[0].plugins.percentageOfNodesToScore"] == (
        "unknown field `percentageOfNodesToScore`: did you mean profiles[].percentageOfNodesToScore? "
        "`percentageOfNodesToScore` belongs under an item of profiles, "
        "not under profiles[0].plugins: un-indent it"
    )


def test_a_misspelt_field_gets_the_nearest_spelling(errors: Errors) -> None:
    (problem,) = errors("paralelism: 4\n")
    assert problem.message == "unknown field `paralelism`: did you mean `parallelism`?"


def test_an_unrecognisable_field_lists_what_is_allowed(errors: Errors) -> None:
    (problem,) = errors("leaderElection: {zzz: 1}\n")
    assert problem.message.startswith("unknown field `zzz`: fields allowed here: leaderElect, leaseDuration")


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ("parallelism: '16'\n", "parallelism", 'expected an integer, got the string "16": remove the quotes'),
        ("parallelism: 1.5\n", "parallelism", "expected an integer, got 1.5"),
        (
            "enableProfiling: 'true'\n",
            "enableProfiling",
            'expected true or false, got the string "true": remove the quotes',
        ),
        (
            "clientConnection: {kubeconfig: 3}\n",
            "clientConnection.kubeconfig",
            'expected a string, got 3: quote it, e.g. "3"',
        ),
        ("profiles: {schedulerName: s}\n", "profiles", "expected a list, got a mapping"),
        (
            "leaderElection: [leaderElect]\n",
            "leaderElection",
            "expected a mapping (key: value lines), got a list",
        ),
        (
            "leaderElection: {leaseDuration: 15}\n",
            "leaderElection.leaseDuration",
            "expected a duration string such as '15s' or '1m30s', got 15",
        ),
        ("parallelism: 0\n", "parallelism", "must be > 0, got 0"),
        ("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore", "must be <= 100, got 101"),
        ("profiles: [{schedulerName: ''}]\n", "profiles[0].schedulerName", "must not be empty"),
        (
            "profiles: [{pluginConfig: [{args: {}}]}]\n",
            "profiles[0].pluginConfig[0].name",
            "`name` is required",
        ),
    ],
)
def test_wrong_types_and_values_name_what_is_expected(
    errors: Errors, body: str, path: str, message: str
) -> None:
    assert by_path(errors(body)) == {path: message}


def test_unsubstituted_placeholders_name_the_variable(errors: Errors) -> None:
    problems = errors(
        """
        profiles:
        - schedulerName: s
          pluginConfig:
          - name: TargetLoadPacking
            args:
              targetUtilization: ${TARGET}
              metricProvider: {type: Prometheus, address: "$PROM_URL/api", token: "${PROM_TOKEN}"}
        """
    )
    messages = by_path(problems)
    assert set(messages) == {  # no "expected an integer" for ${TARGET}: the placeholder is the problem
        "profiles[0].pluginConfig[0].args.targetUtilization",
        "profiles[0].pluginConfig[0].args.metricProvider.address",
        "profiles[0].pluginConfig[0].args.metricProvider.token",
    }
    address = messages["profiles[0].pluginConfig[0].args.metricProvider.address"]
    assert address.startswith(
        "`$PROM_URL` is a shell placeholder left unsubstituted: set PROM_URL and substitute"
    )
    assert "envsubst" in address and "sed -i 's|$PROM_URL|<value>|' config.yaml" in address
    assert "set PROM_TOKEN" in messages["profiles[0].pluginConfig[0].args.metricProvider.token"]


def test_every_error_is_reported_not_just_the_first(errors: Errors) -> None:
    problems = errors(
        """
        parallelism: 0
        leaderElection:
          leaseDuration: 10
        profiles:
        - schedulerName: s
          plugins:
            Score:
              enabled: [{name: TargetLoadPacking}]
            filter:
              enabled: [{name: TargetLoadPacking}]
          pluginConfig:
          - name: TargetLoadPacking
            args: {targetUtilization: "70", metricProvider: {type: prometheus}}
        - schedulerName: t
          percentageOfNodesToScore: 120
          plugins: {queueSort: {disabled: [{name: '*'}]}}
        """
    )
    assert [problem.path for problem in problems] == [
        "parallelism",
        "leaderElection.leaseDuration",
        "profiles[0].plugins.Score",
        "profiles[0].plugins.filter.enabled[0].name",
        "profiles[0].pluginConfig[0].args.metricProvider.type",  # same line: in field order
        "profiles[0].pluginConfig[0].args.targetUtilization",
        "profiles[1].percentageOfNodesToScore",
        "profiles[1].plugins.queueSort",
    ]
    assert [problem.line for problem in problems] == [4, 6, 10, 13, 16, 16, 18, 19]


def test_lost_indentation_across_a_level_gets_one_summary(errors: Errors) -> None:
    problems = errors("profiles:\n- schedulerName: s\nplugins:\nscore:\npluginConfig:\n")
    summary = problems[0]
    assert (summary.path, summary.line) == ("", 1)
    assert summary.message.startswith("3 keys at the top level belong deeper (plugins, score, pluginConfig)")
    assert by_path(problems[1:])["score"] == (
        "unknown field `score`: did you mean profiles[].plugins.score? indent it under profiles[].plugins"
    )


def test_non_breaking_space_indentation_is_reported_and_parsed_through(errors: Errors) -> None:
    problems = errors("leaderElection:\n\xa0 leaderElect: false\n\xa0 zzz: 1\n")
    assert problems[0].line == 4
    assert problems[0].message.startswith("lines 4-5 are indented with non-breaking or other Unicode spaces")
    assert "sed -i 's/\\xc2\\xa0/ /g' config.yaml" in problems[0].message
    assert problems[1].path == "leaderElection.zzz"  # found as if the indentation were plain spaces


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("profiles: [\n", 4, "YAML syntax error: while parsing a flow node, expected the node content"),
        ("profiles:\n\t- schedulerName: s\n", 4, "indent with spaces"),
        ("a: b: c\n", 3, "a value contains ': ' and must be quoted"),
        ("parallelism: 1\n---\nparallelism: 2\n", 4, "put only the KubeSchedulerConfiguration in this file"),
    ],
)
def test_yaml_syntax_errors_have_a_line_and_a_hint(
    errors: Errors, text: str, line: int, fragment: str
) -> None:
    (problem,) = errors(text)
    assert problem.line == line
    assert fragment in problem.message


def test_duplicate_keys_are_errors_but_merge_keys_are_not(errors: Errors, load: Load) -> None:
    (problem,) = errors("parallelism: 3\nparallelism: 4\n")
    assert (problem.path, problem.line, problem.message) == (
        "parallelism",
        4,
        "duplicate key `parallelism` (first at line 3): keep only one",
    )
    config = load(
        "leaderElection: &base {leaderElect: false, resourceName: a}\nclientConnection: {qps: 5}\n"
    ).config
    assert config.leader_election.leader_elect is False
    result = load(
        "profiles:\n- &p {schedulerName: a, percentageOfNodesToScore: 10}\n- <<: *p\n  schedulerName: b\n"
    )
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score) for p in result.config.profiles] == [
        ("a", 10),
        ("b", 10),
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the file is empty"),
        ("- a\n", "expected a KubeSchedulerConfiguration"),
        ("kind: KubeSchedulerConfiguration\n", "`apiVersion` is missing"),
        ("apiVersion: kubescheduler.config.k8s.io/v1\n", "`kind` is missing"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta4\nkind: KubeSchedulerConfiguration\n",
            "did you mean",
        ),
        ("apiVersion: v1\nkind: KubeSchedulerConfiguration\n", "apiVersion must be one of"),
        (
            "apiVersion: example.com/v1\nkind: KubeSchedulerConfiguration\n",
            "in the kubescheduler.config.k8s.io group",
        ),
        ("apiVersion: v1\nkind: ConfigMap\ndata: {config.yaml: x}\n", "this file is a ConfigMap"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
            "kind must be KubeSchedulerConfiguration",
        ),
    ],
)
def test_documents_that_are_not_a_scheduler_configuration(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text, "x.yaml", catalog=IN_TREE_CATALOG)
    (problem,) = caught.value.problems
    assert fragment in problem.message


def test_fields_a_version_does_not_have(errors: Errors, load: Load) -> None:
    (problem,) = errors("profiles: [{plugins: {multiPoint: {}}}]\n", "v1beta1")
    assert (
        problem.message
        == "multiPoint needs apiVersion kubescheduler.config.k8s.io/v1beta2 or later (this file is v1beta1)"
    )
    (problem,) = errors("healthzBindAddress: 0.0.0.0:10251\n", "v1beta2")
    assert (
        problem.message
        == "healthzBindAddress was removed in v1beta2 (it had no effect since 1.20): delete it"
    )
    result = load("healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251\n", "v1beta1")
    assert {w.path for w in result.warnings if "deprecated and ignored" in w.message} == {
        "healthzBindAddress",
        "metricsBindAddress",
    }


def test_cross_field_rules(errors: Errors) -> None:
    assert by_path(errors("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n")) == {
        "podMaxBackoffSeconds": "must be at least podInitialBackoffSeconds (5), got 2"
    }
    assert by_path(errors("leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n")) == {
        "leaderElection.renewDeadline": "must be shorter than leaseDuration (10s)"
    }
    assert by_path(errors("leaderElection: {retryPeriod: 9s}\n")) == {
        "leaderElection.retryPeriod": "must be shorter than renewDeadline (10s) divided by 1.2"
    }
    assert by_path(errors("leaderElection: {retryPeriod: 0s, resourceLock: endpoints}\n")) == {
        "leaderElection.resourceLock": "resourceLock must be 'leases' (got 'endpoints'): "
        "endpoints and configmaps locks were removed from Kubernetes",
    }


def test_leader_election_off_skips_its_checks(load: Load) -> None:
    load("leaderElection: {leaderElect: false, retryPeriod: 0s}\n")


def test_profiles_need_distinct_names(errors: Errors) -> None:
    problems = errors("profiles:\n- schedulerName: a\n- schedulerName: a\n- schedulerName: c\n")
    assert by_path(problems) == {
        "profiles[1].schedulerName": "'a' is already the schedulerName of profiles[0]: names must be unique"
    }


def test_error_rendering_and_the_exception_text() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: x\n",
            "c.yaml",
            catalog=IN_TREE_CATALOG,
        )
    error = caught.value
    assert (
        error.problems[0].render("c.yaml") == 'c.yaml:3: parallelism: expected an integer, got the string "x"'
    )
    assert str(error).splitlines() == [
        "c.yaml: 1 error in the scheduler configuration",
        'c.yaml:3: parallelism: expected an integer, got the string "x"',
    ]
