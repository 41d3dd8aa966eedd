"""Dumping: the effective configuration as a v1 document that loads back to itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from secondary_scheduler.config import LoadResult, dump_config, dump_config_yaml, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

FIXTURES = Path(__file__).parent / "fixtures"

Load = Callable[..., LoadResult]

RICH = """
parallelism: 8
percentageOfNodesToScore: 50
leaderElection: {leaseDuration: 1m30s, renewDeadline: 1m, retryPeriod: 500ms}
profiles:
- schedulerName: packing
  percentageOfNodesToScore: 20
  plugins:
    multiPoint:
      enabled: [{name: LowRiskOverCommitment, weight: 3}]
    score:
      disabled: [{name: ImageLocality}]
      enabled: [{name: TargetLoadPacking, weight: 5}, {name: NodeResourcesFit, weight: 2}]
    filter:
      disabled: [{name: '*'}]
      enabled: [{name: NodeResourcesFit}, {name: TaintToleration}]
  pluginConfig:
  - name: TargetLoadPacking
    args: {watcherAddress: 'http://load-watcher:2020', targetUtilization: 60, metricsStalenessLimit: 90s}
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}
- schedulerName: spreading
  plugins:
    score:
      enabled: [{name: LoadVariationRiskBalancing}]
"""


@pytest.mark.parametrize("body", ["", RICH])
def test_the_dump_loads_back_to_the_same_configuration(load: Load, body: str) -> None:
    config = load(body).config
    assert load_config(dump_config_yaml(config), catalog=IN_TREE_CATALOG).config == config


def test_legacy_and_old_versions_dump_as_plain_v1(load: Load) -> None:
    config = load(
        "profiles:\n- schedulerName: s\n"
        "  plugins: {score: {enabled: [{name: NodeResourcesMostAllocated}]}}\n",
        "v1beta1",
    ).config
    reloaded = load_config(dump_config_yaml(config), catalog=IN_TREE_CATALOG)
    assert reloaded.config == config
    assert not [
        w for w in reloaded.warnings if "merged into NodeResourcesFit" in w.message or w.path == "apiVersion"
    ]


def test_a_seed_round_trips() -> None:
    text = (FIXTURES / "seed000_v1beta3.yaml").read_text()
    config = load_config(
        text.replace("${PROM_URL}", "https://prometheus").replace("${PROM_TOKEN}", "t"),
        catalog=IN_TREE_CATALOG,
    ).config
    assert load_config(dump_config_yaml(config), catalog=IN_TREE_CATALOG).config == config


def test_the_dump_spells_out_every_plugin_and_default(load: Load) -> None:
    document = dump_config(load(RICH).config)
    assert document["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert document["leaderElection"]["leaseDuration"] == "1m30s"
    assert document["leaderElection"]["retryPeriod"] == "500ms"
    packing = document["profiles"][0]
    assert packing["percentageOfNodesToScore"] == 20
    assert packing["plugins"]["multiPoint"] == {"disabled": [{"name": "*"}]}
    assert packing["plugins"]["filter"] == {
        "enabled": [{"name": "NodeResourcesFit"}, {"name": "TaintToleration"}]
    }
    # Upstream's order: overrides of multiPoint plugins, then multiPoint's, then the point's other plugins.
    assert [(entry["name"], entry["weight"]) for entry in packing["plugins"]["score"]["enabled"]] == [
        ("NodeResourcesFit", 2),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("LowRiskOverCommitment", 3),
        ("TargetLoadPacking", 5),
    ]
    tlp = next(entry["args"] for entry in packing["pluginConfig"] if entry["name"] == "TargetLoadPacking")
    assert tlp["metricsStalenessLimit"] == "1m30s"
    assert tlp["metricProvider"]["type"] == "KubernetesMetricsServer"
    assert tlp["defaultRequests"] == {"cpu": "1000m"}
    assert "tokenSecretRef" not in tlp["metricProvider"]  # unset optional fields are left out
    assert yaml.safe_load(dump_config_yaml(load(RICH).config)) == document
