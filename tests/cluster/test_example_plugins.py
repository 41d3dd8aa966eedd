"""The example plugin package (examples/plugins/secsched-example-plugins), installed in the venv by
``make setup``, scheduling real pods: ``secsched scheduler`` finds its plugins through their
entry points, with nothing but the config naming them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.nodes import NodeShape
from tests.cluster.schedulerproc import create_pods, pod_manifest, running_scheduler, wait_all_bound

pytestmark = pytest.mark.cluster

TIER = "example.com/tier"
DRAINING = "example.com/draining"
OPT_OUT = "example.com/ignore-draining"
CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: secondary-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: NodeLabelPreference
            weight: 5
          - name: AvoidNodeLabel
    pluginConfig:
      - name: NodeLabelPreference
        args:
          label: {TIER}
          preferredValues: [gold, silver]
      - name: AvoidNodeLabel
        args:
          label: {DRAINING}
          podOptOutLabel: {OPT_OUT}
"""


async def test_the_example_plugins_place_pods_by_label_and_keep_them_off_avoided_nodes(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    gold, draining_gold, silver = await cluster.add_nodes(3, NodeShape("8", "32Gi"), start=970)
    labels = {gold: {TIER: "gold"}, draining_gold: {TIER: "gold", DRAINING: "true"}, silver: {TIER: "silver"}}
    try:
        for node, node_labels in labels.items():
            await api.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": node_labels}})
        with running_scheduler(cluster.kubeconfig, tmp_path, CONFIG) as scheduler:
            # Small pods: every one fits anywhere, so the preferred, not avoided, node wins each time.
            await create_pods(api, namespace, [pod_manifest(f"web-{i}") for i in range(6)])
            pods = await wait_all_bound(api, namespace, 6, timeout=60)
            assert {pod["spec"]["nodeName"] for pod in pods} == {gold}

            # A pod that can only go to the draining node is refused there, with the plugin's reason.
            pinned = {"nodeSelector": {"kubernetes.io/hostname": draining_gold}}
            await create_pods(api, namespace, [pod_manifest("pinned", **pinned)])

            async def refused() -> dict[str, Any] | None:
                pod = await api.get(f"/api/v1/namespaces/{namespace}/pods/pinned")
                conditions = pod["status"].get("conditions") or []
                return next((c for c in conditions if c["type"] == "PodScheduled"), None)

            condition = await wait_for(refused, "pod pinned to refuse", timeout=30)
            assert condition["reason"] == "Unschedulable"
            assert f"1 node(s) had label {DRAINING}, which this profile avoids" in condition["message"]

            # ... unless it opts out.
            opted = pod_manifest("opted-out", **pinned)
            opted["metadata"]["labels"][OPT_OUT] = "true"
            await create_pods(api, namespace, [opted])

            async def opted_bound() -> str | None:
                pod = await api.get(f"/api/v1/namespaces/{namespace}/pods/opted-out")
                return pod["spec"].get("nodeName")

            assert await wait_for(opted_bound, "pod opted-out to bind", timeout=30) == draining_gold
            assert scheduler.stop() == 0, scheduler.tail()
    finally:
        for node in labels:
            await api.delete(f"/api/v1/nodes/{node}")
