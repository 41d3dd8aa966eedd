"""NodeResourceTopologyMatch's Filter: upstream's single-numa-node rules, per scope and QoS."""

from __future__ import annotations

from decimal import Decimal

import pytest
from tests.unit.plugins.noderesourcetopology.nrtharness import Run
from tests.unit.plugins.noderesourcetopology.nrtobjects import container, guaranteed, node, nrt, pod, zone

from secondary_scheduler.pluginapi import PodInfo
from secondary_scheduler.plugins.noderesourcetopology.alignment import AccountingError, subtract
from secondary_scheduler.plugins.noderesourcetopology.topology import NUMANode

SPLIT = [zone(0, cpu="3", memory="8Gi"), zone(1, cpu="3", memory="8Gi")]
ROOMY = [zone(0, cpu="1", memory="8Gi"), zone(1, cpu="6", memory="8Gi")]


def run(policy: str = "single-numa-node", scope: str = "container", **args: object) -> Run:
    return Run(
        [node("split"), node("roomy"), node("bare")],
        [nrt("split", SPLIT, policy, scope), nrt("roomy", ROOMY, policy, scope)],
        dict(args),
    )


def test_a_guaranteed_pod_needs_one_zone_with_all_its_cpus() -> None:
    verdict = run().filter(guaranteed("p", "4"))
    assert verdict == {"split": "cannot align container", "roomy": "", "bare": ""}


def test_the_note_says_which_zone_fits_and_why_none_does() -> None:
    harness = run()
    harness.filter(guaranteed("p", "4"))
    lines = harness.note()
    assert "roomy: fits (container scope): app -> NUMA 1" in lines
    assert "split: no NUMA zone fits (container scope): app: cpu" in lines
    assert "bare: no NodeResourceTopology: passes" in lines


def test_containers_take_their_share_one_after_the_other() -> None:
    two = pod("p", container("a", "2", "1Gi"), container("b", "2", "1Gi"))
    # split: a -> zone 0 (1 left), b -> zone 1; roomy: a -> zone 1 (4 left), b -> zone 1
    assert run().filter(two) == {"split": "", "roomy": "", "bare": ""}
    three = pod("p", container("a", "2", "1Gi"), container("b", "2", "1Gi"), container("c", "2", "1Gi"))
    assert run().filter(three)["split"] == "cannot align container"
    assert run().filter(three)["roomy"] == ""  # zone 1 has 6


def test_init_containers_are_checked_alone_and_do_not_take_room() -> None:
    p = pod("p", container("app", "3", "1Gi"), init=(container("setup", "3", "1Gi"),))
    assert run().filter(p)["split"] == ""
    big_init = pod("p", container("app", "1", "1Gi"), init=(container("setup", "4", "1Gi"),))
    assert run().filter(big_init)["split"] == "cannot align init container"
    sidecar = container("proxy", "4", "1Gi")
    sidecar["restartPolicy"] = "Always"
    assert run().filter(pod("p", container("app", "1", "1Gi"), init=(sidecar,)))["split"] == (
        "cannot align sidecar container"
    )


def test_pod_scope_needs_the_whole_pod_in_one_zone() -> None:
    two = pod("p", container("a", "2", "1Gi"), container("b", "2", "1Gi"))
    assert run(scope="pod").filter(two) == {"split": "cannot align pod", "roomy": "", "bare": ""}


def test_deprecated_topology_policies_set_policy_and_scope() -> None:
    legacy = nrt("split", SPLIT)
    legacy["attributes"] = []
    legacy["topologyPolicies"] = ["SingleNUMANodePodLevel"]
    harness = Run([node("split")], [legacy])
    two = pod("p", container("a", "2", "1Gi"), container("b", "2", "1Gi"))
    assert harness.filter(two) == {"split": "cannot align pod"}


def test_attributes_override_the_deprecated_field() -> None:
    legacy = nrt("split", SPLIT, scope="container")
    legacy["topologyPolicies"] = ["SingleNUMANodePodLevel"]
    two = pod("p", container("a", "2", "1Gi"), container("b", "2", "1Gi"))
    assert Run([node("split")], [legacy]).filter(two) == {"split": ""}


@pytest.mark.parametrize("policy", ["restricted", "best-effort", "none", "bogus"])
def test_only_single_numa_node_is_filtered_as_upstream(policy: str) -> None:
    # upstream v0.34.7's filterHandlerFromTopologyManager handles single-numa-node only
    assert run(policy=policy).filter(guaranteed("p", "4"))["split"] == ""


def test_burstable_pods_cpu_and_memory_come_from_shared_pools() -> None:
    burstable = pod("p", container("app", "5", "1Gi", guaranteed=False))
    assert run().filter(burstable) == {"split": "", "roomy": "", "bare": ""}


def test_devices_must_fit_one_zone_whatever_the_qos() -> None:
    zones = [
        zone(0, cpu="4", memory="8Gi", example_com_gpu="1"),
        zone(1, cpu="4", memory="8Gi", example_com_gpu="1"),
    ]
    for z in zones:
        for item in z["resources"]:
            item["name"] = item["name"].replace("example-com-gpu", "example.com/gpu")
    harness = Run([node("n", **{"example.com/gpu": "2"})], [nrt("n", zones)])
    burstable = pod("p", container("app", "1", "1Gi", guaranteed=False, **{"example.com/gpu": "2"}))
    assert harness.filter(burstable) == {"n": "cannot align container"}
    best_effort = pod("p", container("app", None, None, guaranteed=False, **{"example.com/gpu": "1"}))
    assert harness.filter(best_effort) == {"n": ""}


def test_a_resource_the_node_does_not_have_is_an_early_no() -> None:
    harness = Run([node("n")], [nrt("n", SPLIT)])
    assert harness.filter(guaranteed("p", "1", hugepages_2Mi="2Mi")) == {"n": "cannot align container"}


def test_host_level_resources_without_numa_affinity_are_fine() -> None:
    harness = Run([node("n", ephemeral_storage="10Gi")], [nrt("n", SPLIT)])
    assert harness.filter(guaranteed("p", "1", ephemeral_storage="1Gi")) == {"n": ""}


def test_best_effort_pods_pass_without_looking() -> None:
    assert run().filter(pod("p", container("app", None, None, guaranteed=False)))["split"] == ""


def test_zones_that_are_not_numa_nodes_are_ignored() -> None:
    zones = [{**zone(0, cpu="8", memory="8Gi"), "type": "Socket"}, zone(1, cpu="2", memory="8Gi")]
    assert Run([node("n")], [nrt("n", zones)]).filter(guaranteed("p", "4")) == {"n": "cannot align container"}


def test_discard_reserved_nodes_distrusts_a_node_until_the_binding() -> None:
    harness = run(discardReservedNodes=True)
    first = PodInfo.from_pod(guaranteed("first", "1"))
    harness.plugin.reserve(harness.state, first, "roomy")
    assert harness.filter(guaranteed("p", "1"))["roomy"] == "invalid node topology data"
    assert harness.score(guaranteed("p", "1"))["roomy"] == 0
    harness.plugin.post_bind(harness.state, first, "roomy")
    assert harness.filter(guaranteed("p", "1"))["roomy"] == ""


def test_taking_more_than_a_zone_has_is_an_accounting_error() -> None:
    zones = [NUMANode(0, {"cpu": Decimal(1)})]
    with pytest.raises(AccountingError):
        subtract(zones, 0, "Guaranteed", {"cpu": Decimal(2)})
    subtract(zones, 0, "Burstable", {"cpu": Decimal(2)})  # shared pool: nothing taken
    assert zones[0].resources == {"cpu": Decimal(1)}
