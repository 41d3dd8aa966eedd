"""render.plan: the objects, names, args and fields upstream's operator creates, plus ours."""

from __future__ import annotations

import pytest
from tests.unit.operator.opbuilders import NAMESPACE, UID, configmap, container, instance, of_kind, render

from secondary_scheduler.operator import certs, names
from secondary_scheduler.operator.render import ClusterFacts, ObjectRef, managed_refs, plan, replicas_for

UPSTREAM_ARGS = [
    "--config=/etc/kubernetes/config.yaml",
    "--tls-cert-file=/certs-dir/tls.crt",
    "--tls-private-key-file=/certs-dir/tls.key",
    "--leader-elect=true",
    "--leader-elect-lease-duration=137s",
    "--leader-elect-renew-deadline=107s",
    "--leader-elect-resource-lock=leases",
    "--leader-elect-resource-name=secondary-scheduler",
    f"--leader-elect-resource-namespace={NAMESPACE}",
    "--leader-elect-retry-period=26s",
]


def test_objects_are_upstreams_in_dependency_order() -> None:
    kinds = [(o["kind"], o["metadata"]["name"]) for o in render().objects]
    assert kinds == [
        ("ServiceAccount", "secondary-scheduler"),
        ("ClusterRoleBinding", "secondary-scheduler-system-kube-scheduler"),
        ("ClusterRoleBinding", "secondary-scheduler-system-volume-scheduler"),
        ("RoleBinding", "secondary-scheduler-extension-apiserver-authentication-reader"),
        ("Service", "metrics"),
        ("Role", "prometheus-k8s"),
        ("RoleBinding", "prometheus-k8s"),
        ("Role", "secondary-scheduler-operand"),
        ("RoleBinding", "secondary-scheduler-operand"),
        ("ClusterRole", "secondary-scheduler-plugins"),  # ours: listing Scheduled Events
        ("ClusterRoleBinding", "secondary-scheduler-plugins"),
        ("Deployment", "secondary-scheduler"),
    ]


def test_command_and_args_match_upstream() -> None:
    main = container(render())
    assert main["command"] == ["/bin/kube-scheduler"]
    assert main["args"] == [*UPSTREAM_ARGS, "-v=2"]
    assert main["image"] == names.SCHEDULER_IMAGE


@pytest.mark.parametrize(
    ("level", "flag"),
    [("Normal", "-v=2"), ("Debug", "-v=4"), ("Trace", "-v=6"), ("TraceAll", "-v=8"), ("", "-v=2")],
)
def test_log_levels(level: str, flag: str) -> None:
    assert container(render({"logLevel": level}))["args"][-1] == flag


def test_tls_profile_from_observed_config_follows_v() -> None:
    observed = {
        "servingInfo": {
            "cipherSuites": ["TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
            "minTLSVersion": "VersionTLS12",
        }
    }
    args = container(render({"observedConfig": observed}))["args"]
    assert args[-3:] == [
        "-v=2",
        "--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "--tls-min-version=VersionTLS12",
    ]


def test_tls_args_only_for_what_is_set() -> None:
    args = container(render({"observedConfig": {"servingInfo": {"minTLSVersion": "VersionTLS13"}}}))["args"]
    assert args[-2:] == ["-v=2", "--tls-min-version=VersionTLS13"]
    assert container(render({"observedConfig": {"servingInfo": {"cipherSuites": []}}}))["args"][-1] == "-v=2"
    assert container(render({"observedConfig": {}}))["args"][-1] == "-v=2"


def test_pod_security_volumes_probes_and_resources() -> None:
    result = render()
    deployment = result.deployment
    assert deployment is not None
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    main = pod["containers"][0]
    assert main["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert pod["volumes"] == [
        {"name": "etckubernetes", "configMap": {"name": "secondary-scheduler-config"}},
        {"name": "tmp", "emptyDir": {}},
        {"name": "certs-dir", "secret": {"secretName": "secondary-scheduler-serving-cert"}},
    ]
    mounts = {m["name"]: m["mountPath"] for m in main["volumeMounts"]}
    assert mounts == {"etckubernetes": "/etc/kubernetes", "tmp": "/tmp", "certs-dir": "/certs-dir"}
    assert main["resources"] == {"requests": {"cpu": "15m", "memory": "50Mi"}}
    assert main["ports"] == [{"containerPort": 10259, "protocol": "TCP"}]
    for probe in (main["livenessProbe"], main["readinessProbe"]):
        assert probe["httpGet"] == {"scheme": "HTTPS", "port": 10259, "path": "/healthz"}
    assert pod["serviceAccountName"] == "secondary-scheduler"
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["weight"] == 100
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"] == {"matchLabels": {"app": "secondary-scheduler"}}
    assert deployment["spec"]["selector"] == {"matchLabels": {"app": "secondary-scheduler"}}
    assert deployment["metadata"]["labels"]["app"] == "secondary-scheduler"
    assert "nodeSelector" not in pod and "tolerations" not in pod and "priorityClassName" not in pod


def test_template_annotations_carry_generation_and_configmap_version() -> None:
    result = render(generation=7, configmap=configmap(resource_version="991"))
    assert result.deployment is not None
    annotations = result.deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["secondaryschedulers.operator.openshift.io/cluster"] == "7"
    assert annotations["configmaps/secondary-scheduler-config"] == "991"


def test_changed_config_or_cr_changes_the_pod_template() -> None:
    first = render(configmap=configmap(resource_version="1"))
    second = render(configmap=configmap(resource_version="2"))
    assert first.deployment is not None and second.deployment is not None
    assert first.deployment["spec"]["template"] != second.deployment["spec"]["template"]
    same = render(configmap=configmap(resource_version="1"))
    assert same.objects == first.objects


def test_every_namespaced_object_is_owned_by_the_cr() -> None:
    owner = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "SecondaryScheduler",
        "name": "cluster",
        "uid": UID,
    }
    for obj in render().objects:
        if obj["metadata"].get("namespace") == names.AUTH_NAMESPACE:
            continue  # the one object elsewhere: see test_the_auth_reader_binding_...
        if obj["metadata"].get("namespace"):
            assert obj["metadata"]["namespace"] == NAMESPACE
            assert obj["metadata"]["ownerReferences"] == [owner], obj["kind"]
    # Upstream's two ClusterRoleBindings carry it too (the finalizer, not the GC, removes them).
    crb = of_kind(render(), "ClusterRoleBinding", names.CRB_KUBE_SCHEDULER)
    assert crb["metadata"]["ownerReferences"] == [owner]


def test_cluster_role_bindings_bind_the_scheduler_account() -> None:
    result = render()
    for name, role in (
        (names.CRB_KUBE_SCHEDULER, "system:kube-scheduler"),
        (names.CRB_VOLUME_SCHEDULER, "system:volume-scheduler"),
    ):
        binding = of_kind(result, "ClusterRoleBinding", name)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "secondary-scheduler", "namespace": NAMESPACE}
        ]


def test_the_auth_reader_binding_lets_the_scheduler_read_the_client_ca_in_kube_system() -> None:
    """As kube-scheduler's installs: the secure port's delegated authentication reads ConfigMap
    kube-system/extension-apiserver-authentication through kube-apiserver's own Role."""
    result = render()
    binding = of_kind(result, "RoleBinding", names.AUTH_READER_BINDING)
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "secondary-scheduler", "namespace": NAMESPACE}
    ]
    # Another namespace than the CR's: an ownerReference would have the GC delete it at once.
    assert "ownerReferences" not in binding["metadata"]
    assert binding["metadata"]["labels"] == {names.MANAGED_BY_KEY: names.MANAGED_BY}
    ref = ObjectRef("rbac.authorization.k8s.io/v1", "RoleBinding", names.AUTH_READER_BINDING, "kube-system")
    assert result.best_effort == (ref,)
    # The finalizer and Removed delete it, after the Deployment, with the cluster-scoped bindings.
    refs = managed_refs(NAMESPACE)
    assert ref in refs and refs.index(ref) > refs.index(
        ObjectRef("apps/v1", "Deployment", names.OPERAND, NAMESPACE)
    )
    # Every Deployment-holding state keeps it before the Deployment; a held-back config keeps it.
    kinds = [(o["kind"], o["metadata"]["name"]) for o in result.objects]
    assert kinds.index(("RoleBinding", names.AUTH_READER_BINDING)) < kinds.index(
        ("Deployment", names.OPERAND)
    )
    held = render(configmap=configmap("kind: Nonsense\n"))
    assert held.deployment is None
    of_kind(held, "RoleBinding", names.AUTH_READER_BINDING)


def test_the_auth_reader_binding_names_the_instance_namespace() -> None:
    result = plan(instance(namespace="elsewhere"), configmap(), ClusterFacts())
    binding = of_kind(result, "RoleBinding", names.AUTH_READER_BINDING)
    assert binding["metadata"]["namespace"] == "kube-system"
    assert binding["subjects"][0]["namespace"] == "elsewhere"


def test_lease_role_service_and_prometheus_role() -> None:
    result = render()
    role = of_kind(result, "Role", names.OPERAND_ROLE)
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["secondary-scheduler"],
            "verbs": ["get", "list", "watch", "create", "update", "patch"],
        }
    ]
    service = of_kind(result, "Service", "metrics")
    assert service["spec"]["selector"] == {"app": "secondary-scheduler"}
    assert service["spec"]["ports"][0]["name"] == "https" and service["spec"]["ports"][0]["port"] == 10259
    annotations = service["metadata"]["annotations"]
    assert (
        annotations["service.beta.openshift.io/serving-cert-secret-name"]
        == "secondary-scheduler-serving-cert"
    )
    binding = of_kind(result, "RoleBinding", "prometheus-k8s")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "openshift-monitoring"}
    ]


def test_service_monitor_only_where_served() -> None:
    assert not [o for o in render().objects if o["kind"] == "ServiceMonitor"]
    monitor = of_kind(render(facts=ClusterFacts(service_monitor=True)), "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["tlsConfig"]["serverName"] == f"metrics.{NAMESPACE}.svc"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}


@pytest.mark.parametrize(
    ("nodes", "max_replicas", "expected"),
    [(1, None, 1), (3, None, 3), (5, None, 3), (5, 5, 5), (5, 4, 4), (2, 5, 2), (0, None, 1), (0, 2, 1)],
)
def test_ha_replicas_table(nodes: int, max_replicas: int | None, expected: int) -> None:
    topology: dict[str, object] = {"mode": "HighlyAvailable"}
    if max_replicas is not None:
        topology["highlyAvailableTopology"] = {"maxReplicas": max_replicas}
    result = render({"topology": topology}, ClusterFacts(matching_nodes=nodes))
    assert result.deployment is not None and result.deployment["spec"]["replicas"] == expected


def test_single_replica_ignores_node_count() -> None:
    assert replicas_for(instance({"topology": {"mode": "SingleReplica"}}), 5) == 1
    deployment = render(facts=ClusterFacts(matching_nodes=5)).deployment
    assert deployment is not None and deployment["spec"]["replicas"] == 1


def test_ha_selector_and_tolerations_go_into_the_pod() -> None:
    toleration = {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}
    spec = {
        "topology": {
            "mode": "HighlyAvailable",
            "highlyAvailableTopology": {
                "nodeSelector": {"node-role.kubernetes.io/master": ""},
                "tolerations": [toleration],
            },
        }
    }
    result = render(spec, ClusterFacts(matching_nodes=3))
    assert result.deployment is not None
    pod = result.deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/master": ""}
    assert pod["tolerations"] == [toleration]


def test_extensions_resources_priority_and_placement_outside_ha() -> None:
    spec = {
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"node-role.kubernetes.io/infra": ""},
        "tolerations": [{"key": "infra", "operator": "Equal", "value": "reserved", "effect": "NoSchedule"}],
    }
    result = render(spec)
    assert result.deployment is not None
    pod = result.deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == spec["resources"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/infra": ""}
    assert pod["tolerations"] == spec["tolerations"]


def test_custom_image_is_used_verbatim() -> None:
    image = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.28.9"
    assert container(render({"schedulerImage": image}))["image"] == image


def test_bad_config_holds_the_deployment_back_but_keeps_the_rest() -> None:
    result = render(configmap=configmap("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Nope\n"))
    assert result.deployment is None
    assert result.config.blocks_rollout and result.config.reason == "ConfigInvalid"
    assert of_kind(result, "ServiceAccount")


def test_missing_configmap_holds_the_deployment_back() -> None:
    result = plan(instance(), None, ClusterFacts())
    assert result.deployment is None
    assert result.config.reason == "ConfigMapMissing"
    assert (
        "kubectl create -n openshift-secondary-scheduler-operator configmap secondary-scheduler-config"
        in (result.config.message)
    )


def test_self_signed_serving_cert_only_without_service_ca() -> None:
    assert not [o for o in render().objects if o["kind"] == "Secret"]
    cert = certs.generate(NAMESPACE)
    secret = of_kind(render(facts=ClusterFacts(service_ca=False, serving_cert=cert)), "Secret")
    assert secret["metadata"]["name"] == "secondary-scheduler-serving-cert"
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["annotations"] == {names.SELF_SIGNED_ANNOTATION: "true"}
    assert certs.reusable(secret["data"], NAMESPACE)
    assert not certs.reusable(secret["data"], "another-namespace")


def test_derived_rbac_objects_appear_and_disappear() -> None:
    events = {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list"]}
    assert of_kind(render(), "ClusterRole", names.PLUGINS_CLUSTER_ROLE)["rules"] == [events]
    nothing_enabled = configmap(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: secondary-scheduler\n  plugins:\n    multiPoint:\n      disabled:\n"
        "      - name: '*'\n"
    )
    foreign = render({"schedulerImage": "registry.k8s.io/kube-scheduler:v1.34.1"}, configmap=nothing_enabled)
    assert (
        ObjectRef("rbac.authorization.k8s.io/v1", "ClusterRole", names.PLUGINS_CLUSTER_ROLE) in foreign.absent
    )
    metrics_server = configmap(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: secondary-scheduler\n  plugins:\n    score:\n      enabled:\n"
        "      - name: TargetLoadPacking\n"
    )
    result = render(configmap=metrics_server)
    role = of_kind(result, "ClusterRole", names.PLUGINS_CLUSTER_ROLE)
    assert role["rules"] == [
        {"apiGroups": ["metrics.k8s.io"], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
        events,
    ]
    binding = of_kind(result, "ClusterRoleBinding", names.PLUGINS_CLUSTER_ROLE)
    assert binding["roleRef"]["name"] == names.PLUGINS_CLUSTER_ROLE
    assert "ownerReferences" not in binding["metadata"]


def test_no_owner_references_without_a_uid() -> None:
    result = render(uid="")
    assert all("ownerReferences" not in o["metadata"] for o in result.objects)
