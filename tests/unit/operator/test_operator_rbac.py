"""RBAC derived from the scheduler configuration: what each plugin and provider needs, nothing else."""

from __future__ import annotations

from typing import Any

import yaml
from tests.unit.operator.opbuilders import NAMESPACE, SEED_CONFIG, VALID_CONFIG, configmap, of_kind, render

from secondary_scheduler.operator import names
from secondary_scheduler.operator.rbac import SCHEDULED_EVENTS, derive

FOREIGN = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.28.9"
EVENTS = SCHEDULED_EVENTS.rules
"""What our image always needs: listing Scheduled Events when it starts to lead."""


def config(*profiles: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": list(profiles),
    }


def profile(*enabled: str, point: str = "multiPoint", **extra: Any) -> dict[str, Any]:
    return {
        "schedulerName": "secondary-scheduler",
        "plugins": {point: {"enabled": [{"name": name} for name in enabled]}},
        **extra,
    }


def groups(rules: tuple[dict[str, Any], ...]) -> set[tuple[str, str]]:
    return {(rule["apiGroups"][0], resource) for rule in rules for resource in rule["resources"]}


def test_prometheus_trimaran_config_needs_nothing_but_the_events_list() -> None:
    assert derive(yaml.safe_load(VALID_CONFIG), names.SCHEDULER_IMAGE).rules == EVENTS
    seed = yaml.safe_load(SEED_CONFIG.read_text())
    assert derive(seed, names.SCHEDULER_IMAGE).rules == EVENTS
    assert not groups(derive(seed, FOREIGN).rules) & groups(EVENTS)  # upstream's image writes none


def test_our_image_may_list_events_and_nothing_more_of_them() -> None:
    (rule,) = EVENTS
    assert rule == {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list"]}


def test_metrics_server_provider_reads_metrics_api() -> None:
    for args in (
        {},
        {"metricProvider": {"type": "KubernetesMetricsServer"}},
        {"metricProvider": {"type": ""}},
    ):
        document = config(
            profile(
                "LoadVariationRiskBalancing",
                pluginConfig=[{"name": "LoadVariationRiskBalancing", "args": args}],
            )
        )
        derived = derive(document, names.SCHEDULER_IMAGE)
        assert groups(derived.rules) - groups(EVENTS) == {
            ("metrics.k8s.io", "nodes"),
            ("metrics.k8s.io", "pods"),
        }, args
        assert derived.rules[0]["verbs"] == ["get", "list"]
        assert "metrics.k8s.io" in derived.reasons[0]


def test_load_watcher_needs_no_metrics_api() -> None:
    document = config(
        profile(
            "TargetLoadPacking",
            pluginConfig=[{"name": "TargetLoadPacking", "args": {"watcherAddress": "http://lw:2020"}}],
        )
    )
    assert derive(document, names.SCHEDULER_IMAGE).rules == EVENTS


def test_plugin_configured_but_not_enabled_needs_nothing() -> None:
    document = config({"schedulerName": "x", "pluginConfig": [{"name": "TargetLoadPacking", "args": {}}]})
    assert derive(document, names.SCHEDULER_IMAGE).rules == EVENTS


def test_coscheduling_reads_and_updates_podgroups() -> None:
    derived = derive(config(profile("Coscheduling", point="queueSort")), FOREIGN)
    podgroups = [rule for rule in derived.rules if rule["resources"] == ["podgroups"]]
    assert podgroups == [
        {
            "apiGroups": ["scheduling.x-k8s.io"],
            "resources": ["podgroups"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        }
    ]
    assert ("scheduling.x-k8s.io", "podgroups/status") in groups(derived.rules)


def test_volume_plugins_read_storage_classes_and_csi_objects() -> None:
    derived = derive(config(profile("VolumeBinding")), names.SCHEDULER_IMAGE)
    assert {
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
    } == groups(derived.rules) - groups(EVENTS)


def test_foreign_image_runs_kube_schedulers_default_volume_plugins() -> None:
    """The KubeVirt notes' StorageClasses: an upstream image enables the volume plugins by default."""
    assert ("storage.k8s.io", "storageclasses") in groups(derive(config(profile()), FOREIGN).rules)
    assert derive(config(profile()), names.SCHEDULER_IMAGE).rules == EVENTS
    everything_off = profile()
    everything_off["plugins"]["multiPoint"]["disabled"] = [{"name": "*"}]
    assert derive(config(everything_off), FOREIGN).rules == ()


def test_rules_are_not_repeated_across_profiles() -> None:
    one = profile("VolumeBinding", "VolumeZone")
    two = {**profile("NodeVolumeLimits"), "schedulerName": "other"}
    derived = derive(config(one, two), names.SCHEDULER_IMAGE)
    assert len(derived.rules) == 3 and len(derived.reasons) == 2  # the volumes' two, and Events


def test_token_secret_ref_gets_a_role_for_that_secret_only() -> None:
    provider = {
        "type": "Prometheus",
        "address": "https://prometheus.example",
        "tokenSecretRef": {"namespace": NAMESPACE, "name": "prom-token", "key": "token"},
    }
    text = yaml.safe_dump(
        config(
            profile(
                "TargetLoadPacking",
                pluginConfig=[{"name": "TargetLoadPacking", "args": {"metricProvider": provider}}],
            )
        )
    )
    result = render(configmap=configmap(text))
    role = of_kind(result, "Role", names.SECRETS_ROLE)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["prom-token"], "verbs": ["get"]}
    ]
    binding = of_kind(result, "RoleBinding", names.SECRETS_ROLE)
    assert binding["subjects"][0]["name"] == "secondary-scheduler"
    assert result.notes == ()


def test_token_secret_elsewhere_is_left_to_a_person() -> None:
    provider = {
        "type": "Prometheus",
        "address": "https://p",
        "tokenSecretRef": {"namespace": "monitoring", "name": "t", "key": "k"},
    }
    text = yaml.safe_dump(
        config(
            profile(
                "TargetLoadPacking",
                pluginConfig=[{"name": "TargetLoadPacking", "args": {"metricProvider": provider}}],
            )
        )
    )
    result = render(configmap=configmap(text))
    assert not [o for o in result.objects if o["metadata"]["name"] == names.SECRETS_ROLE]
    (note,) = result.notes
    assert "kubectl create role secondary-scheduler-secrets -n monitoring --verb=get" in note


def test_no_document_no_rules() -> None:
    assert derive(None, FOREIGN).rules == ()
    assert derive({"profiles": "nonsense"}, FOREIGN).rules == ()
