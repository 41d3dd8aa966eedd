"""Upstream's images read only their release's config versions, strictly (issue 42, item 4): the
seeds' v1beta1/v1beta3 configs under a kube-scheduler 1.34 image are held back with the v1
equivalent printed, and unknown fields are refused as upstream's strict decoder would."""

from __future__ import annotations

import pytest
import yaml
from tests.unit.operator.opbuilders import NAMESPACE, SEED_CONFIG, VALID_CONFIG, configmap, instance

from secondary_scheduler.config import load_config
from secondary_scheduler.config.versions import read_by
from secondary_scheduler.operator.configcheck import check_config
from secondary_scheduler.operator.upstreamimage import upstream_image
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

PLUGINS_1_34 = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7"
SEED_V1BETA3 = (
    SEED_CONFIG.read_text().replace("${PROM_URL}", "https://prom:9091").replace("${PROM_TOKEN}", "t")
)
SEED_V1BETA1 = SEED_V1BETA3.replace("config.k8s.io/v1beta3", "config.k8s.io/v1beta1")


@pytest.mark.parametrize(
    ("image", "project", "minor"),
    [
        ("registry.k8s.io/kube-scheduler:v1.34.1", "kube-scheduler", 34),
        ("k8s.gcr.io/scheduler-plugins/kube-scheduler:v0.22.6", "scheduler-plugins", 22),
        (PLUGINS_1_34, "scheduler-plugins", 34),
        ("mirror.example:5000/k8s/kube-scheduler:v0.28.9", "scheduler-plugins", 28),
        ("registry.k8s.io/kube-scheduler@sha256:" + "0" * 64, "kube-scheduler", None),
        ("mirror.example:5000/kube-scheduler", "kube-scheduler", None),
    ],
)
def test_upstream_images_and_their_release(image: str, project: str, minor: int | None) -> None:
    found = upstream_image(image)
    assert found is not None
    assert (found.project, found.minor) == (project, minor)


@pytest.mark.parametrize(
    "image", ["quay.io/secondary-scheduler/secsched-scheduler:v0.1.0", "quay.io/me/myscheduler:latest"]
)
def test_other_images_are_not_upstreams(image: str) -> None:
    assert upstream_image(image) is None


def test_the_versions_each_release_reads() -> None:
    """KEP-785's table; 1.34's scheme registers v1 alone."""
    from secondary_scheduler.config.versions import ApiVersion

    assert [v for v in ApiVersion if read_by(v, 34)] == [ApiVersion.V1]
    assert [v for v in ApiVersion if read_by(v, 28)] == [ApiVersion.V1BETA3, ApiVersion.V1]
    assert [v for v in ApiVersion if read_by(v, 22)] == [ApiVersion.V1BETA1, ApiVersion.V1BETA2]


@pytest.mark.parametrize("text", [SEED_V1BETA1, SEED_V1BETA3])
def test_a_beta_config_under_a_1_34_image_is_held_back_with_its_v1_equivalent(text: str) -> None:
    check = check_config(instance({"schedulerImage": PLUGINS_1_34}).spec, configmap(text), NAMESPACE)
    assert check.blocks_rollout and check.reason == "ConfigVersionUnsupported"
    assert PLUGINS_1_34 in check.message and "built on Kubernetes 1.34" in check.message
    assert "reads only kubescheduler.config.k8s.io/v1 (" in check.message
    equivalent = check.message.split("kubescheduler.config.k8s.io/v1 equivalent:\n", 1)[1]
    document = yaml.safe_load(equivalent)
    assert document["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    # The same configuration, in v1's words: NodeResourcesLeastAllocated (a v1beta1 plugin) gone.
    assert "NodeResourcesLeastAllocated" not in equivalent
    before = load_config(text, catalog=IN_TREE_CATALOG).config
    assert load_config(equivalent, catalog=IN_TREE_CATALOG).config == before
    fixed = check_config(instance({"schedulerImage": PLUGINS_1_34}).spec, configmap(equivalent), NAMESPACE)
    assert fixed.state == "valid", fixed.message


def test_the_release_that_reads_the_version_runs_it() -> None:
    """Seed 000 as written: v1beta3 with scheduler-plugins v0.28.9 (Kubernetes 1.28 reads it)."""
    spec = instance({"schedulerImage": "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.28.9"}).spec
    assert check_config(spec, configmap(SEED_V1BETA3), NAMESPACE).state == "valid"


def test_a_v1_config_under_an_image_older_than_v1_is_held_back() -> None:
    spec = instance({"schedulerImage": "k8s.gcr.io/scheduler-plugins/kube-scheduler:v0.22.6"}).spec
    check = check_config(spec, configmap(VALID_CONFIG), NAMESPACE)
    assert check.reason == "ConfigVersionUnsupported"
    assert (
        "reads only kubescheduler.config.k8s.io/v1beta2, kubescheduler.config.k8s.io/v1beta1" in check.message
    )
    assert "use an image built for the cluster's Kubernetes minor version" in check.message


def test_unknown_fields_are_refused_for_an_upstream_image_as_its_strict_decoder_would() -> None:
    text = VALID_CONFIG.replace("profiles:", "leaderElect: false\nprofiles:", 1).replace(
        "type: Prometheus", "type: Prometheus\n            Token: abc"
    )
    check = check_config(instance({"schedulerImage": PLUGINS_1_34}).spec, configmap(text), NAMESPACE)
    assert check.blocks_rollout and check.reason == "ConfigInvalid"
    assert "kube-scheduler 1.34 decodes its configuration strictly" in check.message
    assert "unknown field `leaderElect`" in check.message and "unknown field `Token`" in check.message


def test_plugins_we_do_not_ship_still_only_warn_for_an_upstream_image() -> None:
    """scheduler-plugins has plugins we lack: the loader's word on them does not block."""
    text = VALID_CONFIG.replace(
        "- name: TargetLoadPacking\n        args:",
        "- name: Peaks\n        args: {}\n      - name: TargetLoadPacking\n        args:",
    )
    text = text.replace(
        "          - name: TargetLoadPacking", "          - name: TargetLoadPacking\n          - name: Peaks"
    )
    check = check_config(instance({"schedulerImage": PLUGINS_1_34}).spec, configmap(text), NAMESPACE)
    assert check.state == "unverified", check.message


def test_an_untagged_upstream_image_with_a_beta_config_gets_a_warning() -> None:
    spec = instance({"schedulerImage": "registry.k8s.io/kube-scheduler@sha256:" + "0" * 64}).spec
    check = check_config(spec, configmap(SEED_V1BETA3), NAMESPACE)
    assert check.state == "valid"
    assert any("its tag does not say which Kubernetes release" in note for note in check.notes)
