"""``secsched score`` explains a gang decision: the cycle's Coscheduling note says why the pod waits."""

from __future__ import annotations

from tests.unit.framework.kubeobjects import make_node
from tests.unit.plugins.coscheduling.gang import member, podgroup

from secondary_scheduler.cli.score_inputs import ClusterSnapshot
from secondary_scheduler.cli.score_run import explain
from secondary_scheduler.config.loader import load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import in_tree_registry

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: gang
    plugins:
      queueSort:
        enabled: [{name: Coscheduling}]
        disabled: [{name: "*"}]
      preFilter:
        enabled: [{name: Coscheduling}]
      postFilter:
        enabled: [{name: Coscheduling}]
      permit:
        enabled: [{name: Coscheduling}]
      reserve:
        enabled: [{name: Coscheduling}]
"""


def test_score_notes_why_a_gang_member_waits() -> None:
    profile = load_config(CONFIG, "<test>", catalog=IN_TREE_CATALOG).config.profiles[0]
    placed = member("train-0", "train", node="n1")
    snapshot = ClusterSnapshot(
        nodes=[make_node("n1"), make_node("n2")],
        pods=[placed],
        metrics=None,
        recently_scheduled=[],
        now=1_800_000_000.0,
        objects=[podgroup("train", 3)],
    )
    report = explain(profile, snapshot, member("train-1", "train"), registry=in_tree_registry())
    assert report.selected is None
    reason = (
        "pre-filter pod train-1 cannot find enough sibling pods, "
        "current pods number: 2, minMember of group: 3"
    )
    assert reason in report.message
    lines = [line for note in report.notes if note.plugin == "Coscheduling" for line in note.lines()]
    assert lines[0] == f"PreFilter rejects the pod: {reason}"
    assert lines[1].startswith("PostFilter rejects the gang: 0 of minMember 3 assigned")


def test_score_passes_a_complete_gang() -> None:
    profile = load_config(CONFIG, "<test>", catalog=IN_TREE_CATALOG).config.profiles[0]
    snapshot = ClusterSnapshot(
        nodes=[make_node("n1")],
        pods=[member("train-0", "train", node="n1")],
        metrics=None,
        recently_scheduled=[],
        now=1_800_000_000.0,
        objects=[podgroup("train", 2)],
    )
    report = explain(profile, snapshot, member("train-1", "train"), registry=in_tree_registry())
    assert report.selected == "n1"
