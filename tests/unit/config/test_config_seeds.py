"""The KubeSchedulerConfigurations our users copy today (shared/seeds), as fixtures.

Each fixture is one seed's config block, verbatim, placeholders included:
  seed000_v1beta3.yaml                    000_fab9589bd16055da.txt (OpenShift Virtualization docs)
  seed001_v1beta1_token_misindented.yaml  001_7d733faafd51e588.txt (blog: `Token:`, indentation lost
                                          on one line and made of non-breaking spaces on the others)
  seed002_v1beta1.yaml                    002_bf7c00d687f74327.txt (operator README)
  seed004_v1beta1_flattened.yaml          004_12d9a6c89e2c88b3.txt (README scraped flat: no indentation left)
Seed 003 has no KubeSchedulerConfiguration.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from secondary_scheduler.config import ConfigError, ExtensionPoint, LoadResult, Problem, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.trimaran.targetloadpacking.args import TargetLoadPackingArgs

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = Path("/work/shared/seeds")
SEED_FIXTURES = {
    "000_fab9589bd16055da.txt": "seed000_v1beta3.yaml",
    "001_7d733faafd51e588.txt": "seed001_v1beta1_token_misindented.yaml",
    "002_bf7c00d687f74327.txt": "seed002_v1beta1.yaml",
    "004_12d9a6c89e2c88b3.txt": "seed004_v1beta1_flattened.yaml",
}
PROM_URL = "https://prometheus-k8s-openshift-monitoring.apps.example.com"
PROM_TOKEN = "sha256~0123456789abcdef"
WELL_FORMED = ["seed000_v1beta3.yaml", "seed002_v1beta1.yaml"]


def fixture_text(name: str, substituted: bool) -> str:
    text = (FIXTURES / name).read_text()
    return text.replace("${PROM_URL}", PROM_URL).replace("${PROM_TOKEN}", PROM_TOKEN) if substituted else text


def load_fixture(name: str, substituted: bool = True) -> LoadResult:
    return load_config(fixture_text(name, substituted), name, catalog=IN_TREE_CATALOG)


def problems_of(name: str, substituted: bool = True) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        load_fixture(name, substituted)
    return caught.value.problems


_YAML_LINE = re.compile(r"^\s*(?:#.*|-|- .*|[A-Za-z_][\w.-]*:(?: .*)?)$")


def config_blocks(text: str) -> list[str]:
    """Each KubeSchedulerConfiguration in a page: from its apiVersion line to the first non-YAML line."""
    lines = text.splitlines()
    blocks = []
    for start, line in enumerate(lines):
        if "apiVersion: kubescheduler.config.k8s.io/" in line:
            end = start + 1
            while end < len(lines) and (not lines[end].strip() or _YAML_LINE.match(lines[end])):
                end += 1
            blocks.append(textwrap.dedent("\n".join(lines[start:end]).rstrip() + "\n"))
    return blocks


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the shared seed documents are not on this machine")
def test_the_fixtures_are_exactly_the_config_blocks_of_the_seeds() -> None:
    found = {seed.name: config_blocks(seed.read_text()) for seed in sorted(SEEDS.glob("*.txt"))}
    assert {name: len(blocks) for name, blocks in found.items() if blocks} == dict.fromkeys(SEED_FIXTURES, 1)
    for seed, fixture in SEED_FIXTURES.items():
        assert found[seed][0] == (FIXTURES / fixture).read_text(), fixture


@pytest.mark.parametrize("name", SEED_FIXTURES.values())
def test_unsubstituted_seeds_fail_naming_each_variable(name: str) -> None:
    placeholders = [
        p for p in problems_of(name, substituted=False) if "placeholder left unsubstituted" in p.message
    ]
    assert [(p.path.rsplit(".", 1)[-1], p.line) for p in placeholders] in (
        [("address", 23), ("token", 24)],
        [("address", 23), ("Token", 24)],
    )
    assert placeholders[0].message.startswith(
        "`${PROM_URL}` is a shell placeholder left unsubstituted: set PROM_URL"
    )
    assert placeholders[1].message.startswith(
        "`${PROM_TOKEN}` is a shell placeholder left unsubstituted: set PROM_TOKEN"
    )
    assert "envsubst" in placeholders[0].message


@pytest.mark.parametrize("name", WELL_FORMED)
def test_well_formed_seeds_load_once_substituted(name: str) -> None:
    result = load_fixture(name)
    assert not result.config.leader_election.leader_elect
    (profile,) = result.config.profiles
    assert profile.scheduler_name == "secondary-scheduler"
    assert [(entry.name, entry.weight) for entry in profile.plugins[ExtensionPoint.SCORE]] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("ImageLocality", 1),
        ("TargetLoadPacking", 1),
    ]
    args = profile.plugin_args["TargetLoadPacking"]
    assert isinstance(args, TargetLoadPackingArgs)
    assert (args.target_utilization, args.default_requests, args.default_requests_multiplier) == (
        70,
        {"cpu": "2000m"},
        "1",
    )
    provider = args.metric_provider
    assert (provider.type, provider.address, provider.token, provider.insecure_skip_verify) == (
        "Prometheus",
        PROM_URL,
        PROM_TOKEN,
        True,
    )
    assert [(w.path, w.line) for w in result.warnings] == [
        ("apiVersion", 1),  # deprecated version
        ("profiles[0].plugins.score.disabled[1].name", 11),  # NodeResourcesLeastAllocated: no effect
        ("profiles[0].pluginConfig[0].args.metricProvider.insecureSkipVerify", 21),  # TLS not verified
        ("profiles[0].pluginConfig[0].args.metricProvider.token", 24),  # token in plain text
    ]
    assert result.warnings[1].message.startswith("NodeResourcesLeastAllocated has no effect here")


def test_seed_001_reports_its_three_mistakes_precisely() -> None:
    problems = problems_of("seed001_v1beta1_token_misindented.yaml")
    assert [(p.line, p.path, p.message) for p in problems] == [
        (
            4,
            "leaderElect",
            "unknown field `leaderElect`: did you mean leaderElection.leaderElect? "
            "indent it under leaderElection",
        ),
        (
            7,
            "",
            "lines 7-24 are indented with non-breaking or other Unicode spaces "
            "(typical of text copied from a web page), which YAML does not count as indentation: "
            "replace them with plain spaces, e.g. `sed -i 's/\\xc2\\xa0/ /g' config.yaml`. "
            "The other errors were found as if that were done",
        ),
        (
            24,
            "profiles[0].pluginConfig[0].args.metricProvider.Token",
            "unknown field `Token`: did you mean `token`? Field names are case-sensitive",
        ),
    ]


def test_seed_001_loads_once_its_mistakes_are_fixed() -> None:
    text = fixture_text("seed001_v1beta1_token_misindented.yaml", substituted=True)
    fixed = (
        text.replace("\xa0", " ").replace("\nleaderElect:", "\n  leaderElect:").replace("Token:", "token:")
    )
    profile = load_config(fixed, catalog=IN_TREE_CATALOG).config.profiles[0]
    assert isinstance(profile.plugin_args["TargetLoadPacking"], TargetLoadPackingArgs)


def test_seed_004_says_where_each_flattened_key_belongs() -> None:
    problems = problems_of("seed004_v1beta1_flattened.yaml")
    assert len(problems) == 16
    summary = problems[0]
    assert (summary.line, summary.path) == (1, "")
    assert summary.message.startswith(
        "15 keys at the top level belong deeper (leaderElect, plugins, score, disabled, enabled, …): "
        "the indentation was probably lost"
    )
    messages = {p.path: (p.line, p.message) for p in problems[1:]}
    assert messages["plugins"] == (
        7,
        "unknown field `plugins`: did you mean profiles[].plugins? indent it under an item of profiles",
    )
    assert messages["disabled"] == (
        9,
        "unknown field `disabled`: did you mean profiles[].plugins.*.disabled? indent it under "
        "profiles[].plugins.* (* is one of multiPoint, queueSort, preEnqueue, preFilter, …)",
    )
    assert messages["cpu"] == (
        18,
        "unknown field `cpu`: did you mean profiles[].pluginConfig[].args.*.cpu? indent it under "
        "profiles[].pluginConfig[].args.* (* is one of defaultRequests, riskLimitWeights)",
    )
    assert messages["token"] == (
        24,
        "unknown field `token`: did you mean profiles[].pluginConfig[].args.metricProvider.token? "
        "indent it under profiles[].pluginConfig[].args.metricProvider",
    )
    assert messages["leaderElect"][1].endswith("indent it under leaderElection")
