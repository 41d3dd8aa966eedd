"""`make chaos` in small: each fault once during a burst of a couple of hundred pods, on a cluster
of its own, and ours breaks no invariant.

The run is `bench.chaos.run.run_scheduler`, exactly what `make chaos` runs at full
size (there for ours and upstream's, with recovery figures in docs/reliability.md): two replicas
of ours under leader election scheduling plain, spread, anti-affinity, WaitForFirstConsumer-claim,
gang and preempting pods with the load-aware profile, while the API server is killed and
stopped, etcd restarted, Prometheus, the leader, the operator and the storage provisioner killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from pathlib import Path

import pytest
from bench.chaos import faults
from bench.chaos.invariants import Recovery
from bench.chaos.run import ChaosOptions, run_scheduler

from secondary_scheduler.kube.client import ApiClient, ApiError
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.schedulers import OURS
from tests.cluster.schedulerproc import pod_manifest, running_scheduler

pytestmark = pytest.mark.cluster
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def test_each_fault_once_during_a_burst_breaks_no_invariant(tmp_path: Path) -> None:
    options = ChaosOptions(nodes=30, pods=200, repeats=1, gap=(1.0, 2.0), events_probe_pods=0)
    result = run_scheduler(OURS, options, tmp_path)
    assert sorted(record.kind for record in result.faults) == sorted(faults.KINDS)
    assert result.violations == [], "\n".join(result.violations[:20])
    assert result.bound == result.pods == 200
    recovery = Recovery(result.recovery)
    # The burst outlasts the faults: after each one, the scheduler bound again.
    assert all(recovery.summary(kind)[3] == 0 for kind in faults.KINDS), result.recovery


def lost_lease_config(namespace: str) -> str:
    """Ours alone on this test's profile, leading on a Lease in the test's namespace."""
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
  resourceName: {LOST_LEASE_PROFILE}
  resourceNamespace: {namespace}
profiles:
  - schedulerName: {LOST_LEASE_PROFILE}
"""


LOST_LEASE_PROFILE = "lost-lease"


async def test_a_replica_that_lost_its_lease_binds_nothing_more(
    cluster: LocalCluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Found by the chaos run: a leader whose lease ran out (the API server stopped) went on for
    5 s with the bindings it had in flight, while a standby could already lead. kube-scheduler
    exits at once; so must ours. A pod is held in VolumeBinding's PreBind (its claim's class names
    a provisioner nobody runs), the lease is taken from ours, and once ours says it lost it the
    claim is bound by hand: the old leader must not bind the pod."""
    storage_class = f"never-{namespace}"
    volume = f"pv-{namespace}"
    await api.create(
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": storage_class},
            "provisioner": "never.secsched.io",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    try:
        claim = await api.create(
            claims,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {
                    "storageClassName": storage_class,
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        pod = pod_manifest("held-0", scheduler=LOST_LEASE_PROFILE)
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        with running_scheduler(cluster.kubeconfig, tmp_path, lost_lease_config(namespace)) as scheduler:
            lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LOST_LEASE_PROFILE}"

            async def leading() -> bool:
                return await asyncio.to_thread(scheduler.metric, "leader_election_master_status") == 1

            await wait_for(leading, "ours to lead", timeout=30)
            await api.create(f"/api/v1/namespaces/{namespace}/pods", pod)

            async def prebinding() -> str | None:
                current = await api.get(f"{claims}/data")
                return (current["metadata"].get("annotations") or {}).get(SELECTED_NODE)

            await wait_for(prebinding, "ours to choose a node for the claim (PreBind)", timeout=60)
            lease = await api.get(lease_path)
            lease["spec"].update(
                holderIdentity="another-replica",
                leaseDurationSeconds=3600,
                renewTime=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            )
            await api.replace(lease_path, lease)

            async def lost() -> bool:
                return "leaderelection lost" in scheduler.log.read_text(errors="replace")

            await wait_for(lost, "ours to lose its lease", timeout=30, interval=0.05)
            await api.create(
                "/api/v1/persistentvolumes",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": volume},
                    "spec": {
                        "storageClassName": storage_class,
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "hostPath": {"path": "/tmp/never"},
                        "claimRef": {"namespace": namespace, "name": "data", "uid": claim["metadata"]["uid"]},
                    },
                },
            )
            code = await asyncio.to_thread(scheduler.process.wait, 60)
            assert code == 1, scheduler.tail()
        current = await api.get(f"/api/v1/namespaces/{namespace}/pods/held-0")
        assert not current["spec"].get("nodeName"), "the replica that lost its lease bound the pod"
    finally:
        for path in (
            f"/api/v1/persistentvolumes/{volume}",
            f"/apis/storage.k8s.io/v1/storageclasses/{storage_class}",
        ):
            with contextlib.suppress(ApiError):
                await api.delete(path)
