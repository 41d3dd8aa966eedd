"""NodeTable: incremental updates, slot reuse, growth, and pods that arrive before their node."""

from __future__ import annotations

import numpy as np
from tests.unit.framework.kubeobjects import container, make_node, make_pod, pod_info, table_of

from secondary_scheduler.framework import NodeTable
from secondary_scheduler.framework.resources import CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN

GI = 1024**3


def requested_cpu(table: NodeTable, node: str) -> int:
    slot = table.slot_of(node)
    assert slot is not None
    return int(table.requested[slot, CPU_COLUMN])


def test_nodes_and_pods_fill_the_columns() -> None:
    table = NodeTable.from_objects(
        [make_node("a", cpu="4", memory="8Gi", pods=10)],
        [make_pod("p", node_name="a", requests={"cpu": "1", "memory": "1Gi"}), make_pod("q", node_name="a")],
    )
    slot = table.slot_of("a")
    assert slot is not None
    assert table.allocatable[slot, [CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN]].tolist() == [4000, 8 * GI, 10]
    assert table.requested[slot, [CPU_COLUMN, MEMORY_COLUMN]].tolist() == [1000, GI]
    assert table.non_zero_requested[slot].tolist() == [1100, GI + 200 * 1024**2]
    assert int(table.pod_count[slot]) == 2


def test_finished_and_unbound_pods_are_left_out_of_snapshots() -> None:
    done = make_pod("done", node_name="a", requests={"cpu": "1"})
    done["status"] = {"phase": "Succeeded"}
    table = NodeTable.from_objects([make_node("a")], [done, make_pod("pending", requests={"cpu": "1"})])
    assert requested_cpu(table, "a") == 0


def test_removing_a_pod_gives_its_resources_back() -> None:
    table = NodeTable.from_objects([make_node("a")])
    table.add_pod(pod_info("p", requests={"cpu": "1"}), "a")
    assert table.remove_pod("default/p") is not None
    assert requested_cpu(table, "a") == 0
    assert table.remove_pod("default/p") is None


def test_adding_a_pod_again_replaces_it() -> None:
    table = NodeTable.from_objects([make_node("a"), make_node("b")])
    table.add_pod(pod_info("p", requests={"cpu": "1"}), "a")
    table.add_pod(pod_info("p", requests={"cpu": "2"}), "b")
    assert (requested_cpu(table, "a"), requested_cpu(table, "b")) == (0, 2000)
    assert table.node_of_pod("default/p") == "b"


def test_a_removed_node_frees_its_slot_for_the_next_node() -> None:
    table = NodeTable.from_objects([make_node("a"), make_node("b"), make_node("c")])
    slot_b = table.slot_of("b")
    table.remove_node("b")
    assert table.slot_of("b") is None
    assert table.num_nodes == 2
    assert slot_b not in table.active_slots().tolist()
    assert table.add_node(make_node("d", cpu="2")) == slot_b
    assert table.allocatable[slot_b, CPU_COLUMN] == 2000


def test_arrays_double_when_full() -> None:
    table = NodeTable(capacity=2)
    for index in range(5):
        table.add_node(make_node(f"n{index}", labels={"zone": f"z{index}"}))
    assert table.capacity == 8
    assert table.active_slots().tolist() == [0, 1, 2, 3, 4]
    assert table.label_column("zone").codes[:5].tolist() == [0, 1, 2, 3, 4]
    table.add_node(make_node("late", labels={"zone": "z0"}))
    table.add_node(make_node("later", labels={"zone": "z9"}))
    table.add_node(make_node("latest"))
    table.add_node(make_node("last"))
    assert table.capacity == 16
    assert table.label_column("zone").codes[5:9].tolist() == [0, 5, -1, -1]


def test_a_pod_for_an_unknown_node_waits_for_it() -> None:
    table = NodeTable()
    table.add_pod(pod_info("early", requests={"cpu": "1"}), "a")
    table.add_node(make_node("a"))
    assert requested_cpu(table, "a") == 1000


def test_pods_of_a_removed_node_come_back_with_it() -> None:
    table = NodeTable.from_objects([make_node("a")], [make_pod("p", node_name="a", requests={"cpu": "1"})])
    table.remove_node("a")
    assert list(table.pods_in_namespace("default")) == []
    table.add_node(make_node("a"))
    assert requested_cpu(table, "a") == 1000
    assert table.remove_pod("default/p") is not None


def test_update_node_keeps_pods_and_refreshes_labels_taints_and_cordon() -> None:
    table = NodeTable.from_objects([make_node("a", labels={"zone": "x"})], [make_pod("p", node_name="a")])
    column = table.label_column("zone")
    table.update_node(
        make_node(
            "a",
            cpu="8",
            labels={"zone": "y"},
            unschedulable=True,
            taints=[{"key": "k", "effect": "NoSchedule"}],
        )
    )
    slot = table.slot_of("a")
    assert slot is not None
    assert column.values[column.codes[slot]] == "y"
    assert table.unschedulable[slot]
    assert table.taints[slot][0].key == "k"
    assert table.allocatable[slot, CPU_COLUMN] == 8000
    assert int(table.pod_count[slot]) == 1


def test_extended_resources_get_a_column_when_first_seen() -> None:
    table = NodeTable.from_objects([make_node("a", allocatable={"example.com/gpu": 4})])
    column = table.resources.column("example.com/gpu")
    assert column is not None
    table.add_pod(pod_info("p", requests={"example.com/gpu": 1, "example.com/fpga": 1}), "a")
    fpga = table.resources.column("example.com/fpga")
    assert fpga is not None
    assert table.requested[0, [column, fpga]].tolist() == [1, 1]
    assert table.allocatable.shape == table.requested.shape


def test_host_ports_and_images_are_tracked_per_node() -> None:
    image = {"names": ["nginx:1.27"], "sizeBytes": 100}
    table = NodeTable.from_objects([make_node("a", images=[image]), make_node("b", images=[image])])
    assert table.image_node_counts["nginx:1.27"] == 2
    table.remove_node("b")
    assert table.image_node_counts["nginx:1.27"] == 1
    web = pod_info("web", containers=[container(ports=[{"containerPort": 80, "hostPort": 80}])])
    table.add_pod(web, "a")
    assert sum(table.used_ports[0].values()) == 1
    table.remove_pod(web.key)
    assert not table.used_ports[0]


def test_pod_indexes_follow_the_pods() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}
    table = NodeTable.from_objects(
        [make_node("a")], [make_pod("plain", node_name="a"), make_pod("picky", node_name="a", affinity=anti)]
    )
    assert sorted(pod.name for pod, _slot in table.pods_in_namespace("default")) == ["picky", "plain"]
    table.remove_pod("default/picky")
    assert [pod.name for pod, _slot in table.pods_in_namespace("default")] == ["plain"]
    assert np.array_equal(table.active_slots(), [0])


def test_label_columns_forget_values_of_departed_nodes() -> None:
    table = NodeTable()
    for generation in range(200):
        table.add_node(make_node(f"n{generation}", labels={"kubernetes.io/hostname": f"n{generation}"}))
        table.label_column("kubernetes.io/hostname")
        table.remove_node(f"n{generation}")
    table.add_node(make_node("last", labels={"kubernetes.io/hostname": "last"}))
    column = table.label_column("kubernetes.io/hostname")
    assert len(column.values) <= 2 * table.num_nodes + 64
    assert column.values[column.codes[table.slot_of("last")]] == "last"


def test_nodes_are_visited_zone_by_zone_round_robin() -> None:
    zones = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "c1": "c", "c2": "c", "none": ""}
    nodes = [
        make_node(name, labels={"topology.kubernetes.io/zone": zone} if zone else {})
        for name, zone in zones.items()
    ]
    table = table_of(nodes)
    order = [table.names[slot] for slot in table.node_order()]
    assert order == ["a1", "b1", "c1", "none", "a2", "c2", "a3"]
    table.remove_node("b1")
    table.update_node(make_node("a1", labels={"topology.kubernetes.io/zone": "c"}))
    assert [table.names[slot] for slot in table.node_order()] == ["a2", "c1", "none", "a3", "c2", "a1"]


def test_many_pods_moved_at_once_count_as_moved_one_by_one() -> None:
    """add_pods/remove_pods (preemption's dry run) leave the table as add_pod/remove_pod would,
    with several pods on one node, a pod for an unknown node, and a resource first seen late."""
    nodes = [make_node("a"), make_node("b"), make_node("c", allocatable={"example.com/gpu": 2})]
    pods = [
        pod_info("p1", requests={"cpu": "1", "memory": "1Gi"}),
        pod_info("p2", requests={"cpu": "500m"}),
        pod_info("p3"),  # no requests: counted with the non-zero defaults
        pod_info("p4", requests={"cpu": "2", "example.com/gpu": 1, "example.com/fpga": 1}),
    ]
    where = ["a", "a", "b", "elsewhere"]
    one_by_one = NodeTable.from_objects(nodes)
    at_once = NodeTable.from_objects(nodes)
    for pod, node in zip(pods, where, strict=True):
        one_by_one.add_pod(pod, node)
    at_once.add_pods(zip(pods, where, strict=True))

    def same() -> None:
        assert at_once.requested.shape == one_by_one.requested.shape
        for name in ("requested", "non_zero_requested", "pod_count"):
            assert np.array_equal(getattr(at_once, name), getattr(one_by_one, name)), name
        assert [dict(pods) for pods in at_once.pods] == [dict(pods) for pods in one_by_one.pods]
        assert [at_once.node_of_pod(pod.key) for pod in pods] == [
            one_by_one.node_of_pod(pod.key) for pod in pods
        ]

    same()
    keys = [pods[0].key, pods[3].key, "default/never-added"]
    for key in keys:
        one_by_one.remove_pod(key)
    at_once.remove_pods(keys)
    same()
    one_by_one.add_pod(pods[2], "a")  # added again elsewhere: replaces the earlier add
    at_once.add_pods([(pods[2], "a")])
    same()


def test_the_slots_version_moves_only_when_which_node_holds_a_slot_changes() -> None:
    """Caches laid out by slot (Trimaran's) rebuild on it: node added, removed, arrays grown."""
    table = NodeTable(capacity=1)
    seen = [table.slots_version]
    table.add_node(make_node("a"))
    seen.append(table.slots_version)
    table.add_node(make_node("b"))  # the arrays grow
    seen.append(table.slots_version)
    assert seen[0] < seen[1] < seen[2]
    table.update_node(make_node("a", labels={"x": "y"}))
    table.add_pod(pod_info("p", requests={"cpu": "1"}), "a")
    table.remove_pod("default/p")
    assert table.slots_version == seen[2]
    table.remove_node("b")
    assert table.slots_version > seen[2]
