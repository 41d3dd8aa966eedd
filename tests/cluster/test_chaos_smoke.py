"""`make chaos` in small: each fault once during a burst of a couple of hundred pods, on a cluster
of its own, and ours breaks no invariant.

The run is `secsched_devtools.chaos.run.run_scheduler`, exactly what `make chaos` runs at full
size (there for ours and upstream's, with recovery figures in docs/reliability.md): two replicas
of ours under leader election scheduling plain, spread, anti-affinity, WaitForFirstConsumer-claim,
gang and preempting pods with the load-aware profile, while the API server is killed and
stopped, etcd restarted, Prometheus, the leader, the operator and the storage provisioner killed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from secsched_devtools.chaos import faults
from secsched_devtools.chaos.invariants import Recovery
from secsched_devtools.chaos.run import ChaosOptions, run_scheduler
from secsched_devtools.cluster.schedulers import OURS

pytestmark = pytest.mark.cluster


def test_each_fault_once_during_a_burst_breaks_no_invariant(tmp_path: Path) -> None:
    options = ChaosOptions(nodes=30, pods=200, repeats=1, gap=(1.0, 2.0), events_probe_pods=0)
    result = run_scheduler(OURS, options, tmp_path)
    assert sorted(record.kind for record in result.faults) == sorted(faults.KINDS)
    assert result.violations == [], "\n".join(result.violations[:20])
    assert result.bound == result.pods == 200
    recovery = Recovery(result.recovery)
    # The burst outlasts the faults: after each one, the scheduler bound again.
    assert all(recovery.summary(kind)[3] == 0 for kind in faults.KINDS), result.recovery
