"""The config check and the conditions it and the Deployment lead to."""

from __future__ import annotations

import datetime
from typing import Any

from tests.unit.operator.opbuilders import NAMESPACE, SEED_CONFIG, configmap, instance

from secondary_scheduler.operator import names
from secondary_scheduler.operator.configcheck import check_config, is_our_image
from secondary_scheduler.operator.status import Outcome, conditions, merge, status_body

NOW = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.UTC)
FOREIGN = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.28.9"


def deployment(
    replicas: int = 1, available: int = 1, updated: int = 1, generation: int = 2
) -> dict[str, Any]:
    return {
        "metadata": {"name": "secondary-scheduler", "namespace": NAMESPACE, "generation": generation},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": generation,
            "replicas": replicas,
            "updatedReplicas": updated,
            "availableReplicas": available,
            "readyReplicas": available,
        },
    }


def by_type(outcome: Outcome) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in conditions(outcome)}


# -- config check ------------------------------------------------------------------------


def test_seed_config_with_placeholders_is_refused_with_the_loaders_message() -> None:
    check = check_config(instance().spec, configmap(SEED_CONFIG.read_text()), NAMESPACE)
    assert check.state == "invalid" and check.reason == "ConfigInvalid"
    assert "configmap/secondary-scheduler-config:config.yaml:23: " in check.message
    assert "${PROM_URL}" in check.message and "left unsubstituted" in check.message


def test_seed_config_filled_in_is_valid_with_warnings() -> None:
    text = (
        SEED_CONFIG.read_text().replace("${PROM_URL}", "https://p.example").replace("${PROM_TOKEN}", "t0k3n")
    )
    check = check_config(instance().spec, configmap(text), NAMESPACE)
    assert check.state == "valid" and not check.blocks_rollout
    assert any("v1beta3 is deprecated" in note for note in check.notes)
    assert any("prefer tokenFile or tokenSecretRef" in note for note in check.notes)


def test_missing_key_and_unset_name() -> None:
    check = check_config(instance().spec, {"metadata": {}, "data": {"scheduler.yaml": ""}}, NAMESPACE)
    assert check.reason == "ConfigKeyMissing" and "its keys: scheduler.yaml" in check.message
    unset = check_config(instance({"schedulerConfig": ""}).spec, None, NAMESPACE)
    assert unset.reason == "SchedulerConfigNotSet" and unset.blocks_rollout


def test_foreign_image_is_checked_leniently() -> None:
    coscheduling = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: secondary-scheduler\n  plugins:\n    queueSort:\n      enabled:\n"
        "      - name: Coscheduling\n"
    )
    ours = check_config(instance().spec, configmap(coscheduling), NAMESPACE)
    assert ours.state == "invalid"
    theirs = check_config(instance({"schedulerImage": FOREIGN}).spec, configmap(coscheduling), NAMESPACE)
    assert theirs.state == "unverified" and not theirs.blocks_rollout and theirs.notes
    broken_yaml = check_config(instance({"schedulerImage": FOREIGN}).spec, configmap("a: [b"), NAMESPACE)
    assert broken_yaml.state == "invalid"


def test_our_image_is_recognised_by_repository() -> None:
    assert is_our_image(names.SCHEDULER_IMAGE)
    assert is_our_image(names.SCHEDULER_IMAGE.rsplit(":", 1)[0] + "@sha256:" + "0" * 64)
    assert not is_our_image(FOREIGN)


# -- conditions --------------------------------------------------------------------------


def test_healthy() -> None:
    state = by_type(Outcome(NAMESPACE, 3, "Managed", deployment=deployment()))
    assert state["Available"][:2] == ("True", "AsExpected")
    assert state["Progressing"][:2] == ("False", "AsExpected")
    assert state["Degraded"][:2] == ("False", "AsExpected")


def test_rolling_out() -> None:
    state = by_type(
        Outcome(NAMESPACE, 3, "Managed", deployment=deployment(replicas=3, available=1, updated=2))
    )
    assert state["Progressing"][:2] == ("True", "RollingOut")
    assert "2 of 3 replicas updated" in state["Progressing"][2]
    assert state["Available"][0] == "True"


def test_bad_config_is_degraded_and_says_what_to_fix() -> None:
    check = check_config(instance().spec, configmap(SEED_CONFIG.read_text()), NAMESPACE)
    state = by_type(Outcome(NAMESPACE, 3, "Managed", config=check, deployment=deployment()))
    assert state["Degraded"][:2] == ("True", "ConfigInvalid")
    assert "left as it is" in state["Degraded"][2]
    assert state["Available"][0] == "True"  # the old scheduler keeps running


def test_missing_configmap_without_deployment() -> None:
    check = check_config(instance().spec, None, NAMESPACE)
    state = by_type(Outcome(NAMESPACE, 3, "Managed", config=check))
    assert state["Degraded"][:2] == ("True", "ConfigMapMissing")
    assert state["Available"][:2] == ("False", "NotDeployed")
    assert "kubectl create" in state["Available"][2]


def test_unmanaged_and_removed() -> None:
    unmanaged = by_type(Outcome(NAMESPACE, 3, "Unmanaged", deployment=deployment()))
    assert unmanaged["Progressing"][:2] == ("False", "Unmanaged")
    assert unmanaged["Degraded"][:2] == ("False", "Unmanaged")
    removed = by_type(Outcome(NAMESPACE, 3, "Removed"))
    assert removed["Available"][:2] == ("False", "Removed")
    assert "set it to Managed" in removed["Available"][2]


def test_invalid_spec_and_apply_failure() -> None:
    spec_error = by_type(Outcome(NAMESPACE, 3, "Managed", spec_error="spec.logLevel: must be one of"))
    assert spec_error["Degraded"][:2] == ("True", "InvalidSpec")
    failed = by_type(Outcome(NAMESPACE, 3, "Managed", apply_error="cannot apply Role x: 403 Forbidden"))
    assert failed["Degraded"][:2] == ("True", "ApplyFailed") and "RBAC" in failed["Degraded"][2]


def test_transition_time_moves_only_on_status_change() -> None:
    earlier = "2026-04-01T00:00:00Z"
    previous = [
        {
            "type": "Available",
            "status": "True",
            "lastTransitionTime": earlier,
            "reason": "AsExpected",
            "message": "",
        },
        {
            "type": "Degraded",
            "status": "True",
            "lastTransitionTime": earlier,
            "reason": "ConfigInvalid",
            "message": "",
        },
    ]
    merged = {
        c["type"]: c
        for c in merge(previous, conditions(Outcome(NAMESPACE, 3, "Managed", deployment=deployment())), NOW)
    }
    assert merged["Available"]["lastTransitionTime"] == earlier
    assert merged["Degraded"]["lastTransitionTime"] == "2026-05-01T12:00:00Z"
    assert merged["Progressing"]["lastTransitionTime"] == "2026-05-01T12:00:00Z"


def test_status_body_has_ready_replicas_generation_and_deployment_generation() -> None:
    body = status_body(
        Outcome(NAMESPACE, 9, "Managed", deployment=deployment(replicas=3, available=2)), {}, NOW
    )
    assert body["observedGeneration"] == 9
    assert body["readyReplicas"] == 2
    assert body["generations"] == [
        {
            "group": "apps",
            "resource": "deployments",
            "namespace": NAMESPACE,
            "name": "secondary-scheduler",
            "lastGeneration": 2,
        }
    ]
    assert [c["type"] for c in body["conditions"]] == ["Available", "Progressing", "Degraded"]
