"""The demo's workload and scene, without a cluster: VMs with disks as KubeVirt and CDI make them,
a preemptor that fits on no node once the fleet is placed, and the report's new sections."""

from __future__ import annotations

from pathlib import Path

from secsched_devtools.cluster.nodes import MAX_VOLUMES_LABEL, STORAGE_LABEL
from secsched_devtools.demo.main import logged_postfilter, postfilter_plugins, seed_config
from secsched_devtools.demo.preemption import PreemptionResult, Victim, _Recorder, memory_request
from secsched_devtools.demo.run import RunResult
from secsched_devtools.demo.scenario import Scenario
from secsched_devtools.demo.storage import Disk, volume_node
from secsched_devtools.demo.workload import (
    CRITICAL_PRIORITY,
    SIZES,
    STANDARD_PRIORITY,
    priority_classes,
    rootdisk_claim,
    virt_launcher,
    vm_fleet,
)
from secsched_devtools.quality import measure
from secsched_devtools.repo import example_config


def test_rootdisk_claim_is_a_datavolume_pvc_on_the_wffc_class() -> None:
    claim = rootdisk_claim("fedora-01", SIZES[1])
    assert claim["metadata"]["name"] == "fedora-01-rootdisk"
    assert claim["metadata"]["labels"]["app"] == "containerized-data-importer"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "volumeMode": "Filesystem",
        "storageClassName": "local-wffc",
        "resources": {"requests": {"storage": "40Gi"}},
    }
    # Nothing that points at CDI objects this cluster lacks (the GC or a populator would act on it).
    assert "ownerReferences" not in claim["metadata"]
    assert "dataSourceRef" not in claim["spec"]


def test_launcher_mounts_its_disk_and_runs_at_its_priority() -> None:
    pod = virt_launcher("fedora-01", SIZES[0], claim="fedora-01-rootdisk", priority_class=STANDARD_PRIORITY)
    spec = pod["spec"]
    assert spec["volumes"] == [
        {"name": "rootdisk", "persistentVolumeClaim": {"claimName": "fedora-01-rootdisk"}}
    ]
    assert spec["containers"][0]["volumeMounts"][0]["name"] == "rootdisk"
    assert spec["priorityClassName"] == STANDARD_PRIORITY
    assert "priority" not in spec  # the admission plugin fills it from the class


def test_disk_less_launcher_and_fleet_are_unchanged_for_the_benchmarks() -> None:
    pod = virt_launcher("vm-0", SIZES[0])
    assert "volumes" not in pod["spec"] and "priorityClassName" not in pod["spec"]
    assert vm_fleet(30, 11) == vm_fleet(30, 11)
    assert all("volumes" not in pod["spec"] for pod in vm_fleet(30, 11))


def test_priority_classes() -> None:
    values = {item["metadata"]["name"]: item["value"] for item in priority_classes()}
    assert values[CRITICAL_PRIORITY] > values[STANDARD_PRIORITY] > 0


def test_preemptor_fits_on_no_node_once_each_largest_node_has_a_heavy_vm() -> None:
    """The scene's premise, from the node sizes alone, for every cluster size the demo allows."""
    for nodes in (1, 2, 3, 6, 20, 31):
        scenario = Scenario(nodes=nodes, vms=40)
        heavy = scenario.heavy_size()
        preemptor = scenario.preemptor()
        assert heavy is not None and preemptor is not None
        request = memory_request(preemptor.pod)
        memory = scenario.node_memory()
        largest = max(memory.values())
        assert request <= largest  # it can run somewhere, once a VM is evicted
        fleet = scenario.fleet()
        heavy_vms = [vm for vm in fleet if vm.size == heavy]
        assert len(heavy_vms) == scenario.heavy_count() == sum(value == largest for value in memory.values())
        assert fleet[: len(heavy_vms)] == heavy_vms
        for value in memory.values():
            # Each largest node holds one heavy VM (two do not fit), smaller ones hold none.
            free = value - (memory_request(heavy_vms[0].pod) if value == largest else 0)
            assert free < request
            assert value < 2 * memory_request(heavy_vms[0].pod)


def test_fleet_is_deterministic_and_has_one_disk_per_vm() -> None:
    fleet = Scenario().fleet()
    assert [vm.name for vm in fleet] == [vm.name for vm in Scenario().fleet()]
    assert len({vm.claim_name for vm in fleet}) == len(fleet) == 40
    for vm in fleet:
        volumes = vm.pod["spec"]["volumes"]
        assert volumes[0]["persistentVolumeClaim"]["claimName"] == vm.claim_name
        assert vm.pod["spec"]["priorityClassName"] == STANDARD_PRIORITY


def test_storage_labels_grow_with_cores() -> None:
    labels = Scenario(nodes=3).storage_labels()
    assert labels["kwok-node-0"] == {STORAGE_LABEL: "512Gi", MAX_VOLUMES_LABEL: "16"}
    assert labels["kwok-node-2"] == {STORAGE_LABEL: "2048Gi", MAX_VOLUMES_LABEL: "64"}


def test_volume_node_reads_the_hostname_term() -> None:
    term = {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["kwok-node-4"]}]
    }
    volume = {"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}
    assert volume_node(volume) == "kwok-node-4"
    assert volume_node({"spec": {}}) == ""
    zonal = {
        "matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]
    }
    assert volume_node({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [zonal]}}}}) == ""


def _pod(name: str, **status: object) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "vms"},
        "spec": {"nodeName": "kwok-node-2"},
        "status": status,
    }


def test_recorder_keeps_the_disruption_target_and_the_nomination() -> None:
    recorder = _Recorder("vms/prod", started=0.0)
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "m",
    }
    recorder.see("MODIFIED", _pod("db", conditions=[condition]))
    recorder.see("DELETED", _pod("db"))  # a final view without it keeps the one seen before
    recorder.see("MODIFIED", _pod("prod", nominatedNodeName="kwok-node-2"))
    assert "vms/db" in recorder.deleted
    assert recorder.last["vms/db"]["status"]["conditions"][0]["reason"] == "PreemptionByScheduler"
    assert recorder.nominated is not None and recorder.nominated[0] == "kwok-node-2"


def test_postfilter_of_the_profiles_includes_default_preemption() -> None:
    for text in (seed_config()[0], example_config()):
        assert "DefaultPreemption" in postfilter_plugins(text)


def test_logged_postfilter(tmp_path: Path) -> None:
    log = tmp_path / "scheduler.log"
    log.write_text(
        'I1123 framework.go:412] "the scheduler starts to work with those plugins" Plugins={"PostFilter":'
        '{"Enabled":[{"Name":"DynamicResources","Weight":0},{"Name":"DefaultPreemption","Weight":0}],'
        '"Disabled":null},"PreScore":{"Enabled":null}}\n'
    )
    assert logged_postfilter(log) == "DynamicResources, DefaultPreemption"
    log.write_text("nothing here\n")
    assert logged_postfilter(log) == ""
    assert logged_postfilter(tmp_path / "missing.log") == ""


def test_report_shows_disks_and_preemption(tmp_path: Path) -> None:
    from secsched_devtools.demo.report import write_report

    disk = Disk(
        "virt-launcher-a", "a-rootdisk", "30Gi", "Bound", "pvc-1", "kwok-node-1", "kwok-node-1", "kwok-node-1"
    )
    wrong = Disk(
        "virt-launcher-b", "b-rootdisk", "30Gi", "Bound", "pvc-2", "kwok-node-0", "kwok-node-0", "kwok-node-1"
    )
    scene = PreemptionResult(
        "virt-launcher-prod",
        1_000_000,
        64 * 1024**3,
        ("kwok-node-1", 63 * 1024**3),
        victims=[
            Victim("virt-launcher-a", "kwok-node-1", 1000, 64 * 1024**3, "PreemptionByScheduler: m", 0.05)
        ],
        nominated_node="kwok-node-1",
        nominated_after=0.04,
        node="kwok-node-1",
        bound_after=1.5,
        disk=disk,
    )
    run = RunResult(
        "ours",
        before={"kwok-node-0": (0.1, 0.1), "kwok-node-1": (0.2, 0.1)},
        after={"kwok-node-0": (0.3, 0.1), "kwok-node-1": (0.5, 0.1)},
        timeline=[(0.0, {"kwok-node-0": 0.1, "kwok-node-1": 0.2})],
        placements={"virt-launcher-a": "kwok-node-1", "virt-launcher-b": "kwok-node-1"},
        quality=measure({"kwok-node-0": 0.3, "kwok-node-1": 0.5}, {"virt-launcher-a": "kwok-node-1"}, 70),
        disks=[disk, wrong],
        preemption=scene,
        postfilter="DefaultPreemption",
    )
    assert run.disks_on_pod_node == (2, 3)
    text = write_report(tmp_path / "report.html", [run], 70, {"date": "now"}).read_text()
    assert "VM disks" in text and "2/3" in text and "disk kwok-node-0, VM kwok-node-1 ✗" in text
    assert "Preemption" in text and "virt-launcher-prod" in text and "PreemptionByScheduler: m" in text
    assert "1.50s" in text


def test_demo_fails_only_on_what_it_promises_for_ours() -> None:
    from secsched_devtools.demo.main import _our_problems

    good = Disk(
        "virt-launcher-a", "a-rootdisk", "30Gi", "Bound", "pvc-1", "kwok-node-1", "kwok-node-1", "kwok-node-1"
    )
    bad = Disk("virt-launcher-b", "b-rootdisk", "30Gi", "Pending", "", "", "", "kwok-node-1")
    run = RunResult("ours", before={}, disks=[good])
    assert _our_problems(run) == []
    run.disks.append(bad)
    run.preemption = PreemptionResult(
        "virt-launcher-prod", 1, 2, ("kwok-node-1", 1), error="not bound after 180s"
    )
    problems = _our_problems(run)
    assert len(problems) == 2 and "1 of 2 VM disks" in problems[0] and "not bound after 180s" in problems[1]
