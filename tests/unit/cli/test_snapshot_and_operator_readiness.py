"""`secsched snapshot`'s pure parts, and the operator's readiness endpoint and failure logging."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import pytest

from secondary_scheduler.cli import snapshot_cmd
from secondary_scheduler.config import load_config
from secondary_scheduler.kube.client import ApiError
from secondary_scheduler.operator import controller
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import in_tree_registry
from secsched_devtools.cluster.localcluster import free_port

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: s
  plugins: {multiPoint: {enabled: [{name: TargetLoadPacking}]}}
  pluginConfig:
  - name: TargetLoadPacking
    args: {metricProvider: {type: Prometheus, address: "https://p:9091", caFile: /only/in/the/pod.crt}}
"""


def test_the_resources_plugins_read_are_listed_without_touching_their_sources() -> None:
    config = load_config(CONFIG, "c", catalog=IN_TREE_CATALOG).config
    plurals = {resource.plural for resource in snapshot_cmd.informer_resources(config, in_tree_registry())}
    assert {"persistentvolumeclaims", "storageclasses", "namespaces"} <= plurals
    assert len(snapshot_cmd.trimaran_args(config)) == 1


def test_recently_scheduled_pods_and_cleaning() -> None:
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 20))
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 600))

    def pod(name: str, when: str) -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "namespace": "vms",
                "managedFields": [{"manager": "x"}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            },
            "status": {
                "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": when}]
            },
        }

    pods = [snapshot_cmd._clean(pod("new", stamp)), snapshot_cmd._clean(pod("old", old))]
    assert pods[0]["metadata"] == {"name": "new", "namespace": "vms"}
    recent = snapshot_cmd._recently_scheduled(pods, now)
    assert [entry["pod"] for entry in recent] == ["vms/new"]


class FailingReconciler:
    def __init__(self) -> None:
        self.calls = 0

    async def reconcile(self) -> Any:
        self.calls += 1
        if self.calls < 3:
            raise ApiError(
                403, "Forbidden", 'secondaryschedulers.operator.openshift.io "cluster" is forbidden'
            )

        class Result:
            retry = False

        return Result()


async def test_operator_readiness_follows_the_first_reconcile(caplog: pytest.LogCaptureFixture) -> None:
    ctl = controller.Controller(FailingReconciler(), resync_seconds=0.05)  # type: ignore[arg-type]
    port = free_port()
    runner = await controller.serve_readiness(ctl, f"http://127.0.0.1:{port}/readyz")
    loop = asyncio.create_task(ctl.run())
    try:
        async with httpx.AsyncClient() as client:
            first = await client.get(f"http://127.0.0.1:{port}/readyz")
            assert first.status_code == 503
            with caplog.at_level(logging.INFO):
                ctl.trigger("test")
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    if ctl.reconciled:
                        break
            assert (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await runner.cleanup()
    errors = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert errors and "403 Forbidden" in errors[0].getMessage() and "deploy/'s RBAC" in errors[0].getMessage()
    assert all(record.exc_info is None for record in errors), "no traceback for an API answer"
    assert any("reconcile works again" in record.getMessage() for record in caplog.records)
