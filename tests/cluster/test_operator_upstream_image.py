"""The operator on a real control plane with upstream's scheduler image (issue 42, item 4).

Seed 000's config is kubescheduler.config.k8s.io/v1beta3; scheduler-plugins' image built on
Kubernetes 1.34 reads only v1 and would crash-loop on it. The operator holds the Deployment
back, says so on the CR (naming the image and its release, with the v1 equivalent), deploys
once the ConfigMap holds that equivalent, and refuses a field upstream's strict decoder would.
The installation and the operator are test_operator.py's fixtures (deploy/ applied, the
operator in this process with its own ServiceAccount's RBAC).
"""

from __future__ import annotations

import pytest
import yaml

from secondary_scheduler.kube.client import ApiClient
from secsched_devtools.cluster.localcluster import LocalCluster
from tests.cluster.test_operator import (  # noqa: F401  (admin, installed, operator: fixtures)
    DEPLOYMENT_PATH,
    admin,
    condition,
    get,
    installed,
    operator,
    patch_spec,
    posted,
    put_config,
    seed_config,
    settled,
    template_annotations,
    wait_condition,
)

pytestmark = pytest.mark.cluster

PLUGINS_1_34 = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7"
EQUIVALENT = "kubescheduler.config.k8s.io/v1 equivalent:\n"


async def test_a_beta_config_for_upstreams_1_34_image_is_held_back_then_its_v1_equivalent_deploys(
    cluster: LocalCluster,
    admin: ApiClient,  # noqa: F811
    operator: None,  # noqa: F811
) -> None:
    # The image and the config change together: set one at a time, the operator may reconcile
    # in between and deploy upstream's image with deploy/'s v1 example config (it only warns
    # about another image's config). Unmanaged while both are set, then Managed with the image.
    await patch_spec(admin, {"managementState": "Unmanaged"})
    await wait_condition(admin, "Progressing", "False", "Unmanaged")
    await put_config(admin, seed_config(cluster.prometheus_url))
    await patch_spec(admin, {"schedulerImage": PLUGINS_1_34, "managementState": "Managed"})
    degraded = await wait_condition(admin, "Degraded", "True", "ConfigVersionUnsupported")
    message = degraded["message"]
    assert (
        f"its config.yaml is kubescheduler.config.k8s.io/v1beta3, which {PLUGINS_1_34} cannot read" in message
    )
    assert "scheduler-plugins' kube-scheduler, built on Kubernetes 1.34" in message
    assert await get(admin, DEPLOYMENT_PATH) is None
    await posted(admin, {"ConfigVersionUnsupported"})

    equivalent = message.split(EQUIVALENT, 1)[1]
    assert yaml.safe_load(equivalent)["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    await put_config(admin, equivalent)
    deployment = await settled(admin)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == PLUGINS_1_34
    await wait_condition(admin, "Degraded", "False", "AsExpected")

    misspelt = equivalent.replace("leaderElection:\n  leaderElect: false", "leaderElect: false")
    assert misspelt != equivalent
    await put_config(admin, misspelt)
    degraded = await wait_condition(admin, "Degraded", "True", "ConfigInvalid")
    assert "kube-scheduler 1.34 decodes its configuration strictly" in degraded["message"]
    assert "unknown field `leaderElect`" in degraded["message"]
    after = await admin.get(DEPLOYMENT_PATH)  # the running scheduler is left as it was
    assert after["metadata"]["generation"] == deployment["metadata"]["generation"]
    assert template_annotations(after) == template_annotations(deployment)
    assert (await condition(admin, "Available"))["status"] == "True"
