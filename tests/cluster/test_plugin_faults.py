"""A plugin's bug on the real cluster: the pod it breaks on gets kube-scheduler's SchedulerError
naming the plugin and the extension point, and the scheduler goes on scheduling the others.

The plugin is a module the test writes (loaded with ``--plugin``): a Score plugin that raises
for pods labelled ``explode``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from secondary_scheduler.kube.client import ApiClient
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from tests.cluster.schedulerproc import create_pods, pod_manifest, running_scheduler, wait_all_bound

pytestmark = pytest.mark.cluster

PLUGIN_MODULE = """\
import numpy as np
from secondary_scheduler.pluginapi import ScorePlugin


class Exploding(ScorePlugin):
    name = "Exploding"

    def score(self, state, pod, table, nodes):
        if pod.labels.get("explode"):
            raise RuntimeError("the plugin's own bug")
        return np.zeros(len(nodes), dtype=np.int64)
"""

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: secondary-scheduler
    plugins:
      score:
        enabled:
          - name: Exploding
"""

EXPECTED = 'running Score plugins: plugin "Exploding" failed with: RuntimeError: the plugin\'s own bug'


async def scheduled_condition(api: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    pod = await api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return dict(condition)
    return None


async def test_a_plugin_raising_for_one_pod_fails_that_pod_only(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "exploding_plugin.py").write_text(PLUGIN_MODULE)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(plugins)]))
    )
    extra = ("--plugin=exploding_plugin:Exploding",)
    with running_scheduler(cluster.kubeconfig, tmp_path, CONFIG, extra_args=extra) as scheduler:
        bad = pod_manifest("bad")
        bad["metadata"]["labels"]["explode"] = "yes"
        await create_pods(api, namespace, [bad])
        condition = await wait_for(
            lambda: scheduled_condition(api, namespace, "bad"), "bad's SchedulerError", timeout=30
        )
        assert condition["reason"] == "SchedulerError"
        assert condition["message"] == EXPECTED
        await create_pods(api, namespace, [pod_manifest(f"good-{index}") for index in range(3)])
        pods = await wait_all_bound(api, namespace, 3, timeout=60)
        assert {pod["metadata"]["name"] for pod in pods if pod["spec"].get("nodeName")} == {
            "good-0",
            "good-1",
            "good-2",
        }

        async def failed_scheduling_note() -> str | None:
            events = (await api.list_all(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
            notes = [
                event["note"]
                for event in events
                if event.get("reason") == "FailedScheduling" and event["regarding"]["name"] == "bad"
            ]
            return notes[0] if notes else None

        note = await wait_for(failed_scheduling_note, "bad's FailedScheduling event", timeout=30)
        assert note == EXPECTED
        assert scheduler.stop() == 0, scheduler.tail()
        log = scheduler.log.read_text(errors="replace")
        assert "internal error" not in log
