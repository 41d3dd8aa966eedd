"""DynamicResources' PreEnqueue (upstream's): a pod waits outside the queue until its claims exist."""

from __future__ import annotations

from tests.unit.framework.kubeobjects import pod_info
from tests.unit.plugins.dynamicresources.test_plugin import gpu_claim, plugin_with, pod_with

from secondary_scheduler.framework import CycleState, NodeTable
from secondary_scheduler.framework.status import Code


def test_a_pod_without_claims_passes() -> None:
    assert plugin_with().pre_enqueue(pod_info("plain")).is_success


def test_a_missing_claim_keeps_the_pod_out_with_prefilters_words() -> None:
    plugin = plugin_with()
    status = plugin.pre_enqueue(pod_with("gone"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == plugin.pre_filter(CycleState(), pod_with("gone"), NodeTable()).message
    assert "gone" in status.message


def test_a_template_claim_not_created_yet_keeps_the_pod_out() -> None:
    pod = pod_info("p", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    assert plugin_with().pre_enqueue(pod).message == 'pod "default/p": ResourceClaim not created yet'


def test_an_existing_claim_lets_the_pod_in() -> None:
    assert plugin_with(gpu_claim("c")).pre_enqueue(pod_with("c")).is_success


def test_a_claim_being_deleted_keeps_the_pod_out() -> None:
    claim = gpu_claim("c")
    claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert plugin_with(claim).pre_enqueue(pod_with("c")).message == 'resourceclaim "c" is being deleted'
