"""The desired objects: one pure function from (CR, ConfigMap, cluster facts) to a plan.

The reconciler applies exactly `plan(...).objects`; `secsched operator render` prints them.
Keeping the two on one function is what makes render's output trustworthy for dry runs and
GitOps. Cluster facts (how many nodes match the HA selector, whether ServiceMonitor and
service-ca exist) are inputs, so rendering never talks to a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from secondary_scheduler.kube.client import JSON
from secondary_scheduler.operator import names
from secondary_scheduler.operator.certs import ServingCert
from secondary_scheduler.operator.configcheck import ConfigCheck, check_config
from secondary_scheduler.operator.rbac import DerivedRbac, derive
from secondary_scheduler.operator.spec import Instance

RBAC_API = "rbac.authorization.k8s.io/v1"
SERVICE_MONITOR_API = "monitoring.coreos.com/v1"
DEFAULT_RESOURCES: JSON = {"requests": {"cpu": "15m", "memory": "50Mi"}}
RELEASE_ANNOTATIONS = {
    "include.release.openshift.io/self-managed-high-availability": "true",
    "include.release.openshift.io/single-node-developer": "true",
}
"""Upstream's release-payload markers; meaningless off OpenShift, kept for identical objects."""
LEADER_ELECTION_ARGS = (
    "--leader-elect=true",
    "--leader-elect-lease-duration=137s",
    "--leader-elect-renew-deadline=107s",
    "--leader-elect-resource-lock=leases",
    f"--leader-elect-resource-name={names.OPERAND}",
)


@dataclass(frozen=True)
class ClusterFacts:
    """What the plan depends on beyond the CR and the ConfigMap."""

    matching_nodes: int = 0
    """Nodes matching the HA nodeSelector (all nodes without one); used in HighlyAvailable mode."""
    service_monitor: bool = False
    """monitoring.coreos.com/v1 ServiceMonitor is served (Prometheus Operator or OpenShift)."""
    service_ca: bool = True
    """OpenShift's service-ca will create the serving-cert Secret for the `metrics` Service."""
    serving_cert: ServingCert | None = None
    """Without service-ca: the certificate to store in that Secret ourselves."""


@dataclass(frozen=True)
class ObjectRef:
    api_version: str
    kind: str
    name: str
    namespace: str | None = None


AUTH_READER_REF = ObjectRef(RBAC_API, "RoleBinding", names.AUTH_READER_BINDING, names.AUTH_NAMESPACE)
BEST_EFFORT = (AUTH_READER_REF,)
"""What the operator may lack the rights to (RBAC that predates it): see `Plan.best_effort`."""


@dataclass(frozen=True)
class Plan:
    objects: tuple[JSON, ...]
    """Everything to apply, in order (RBAC before the Deployment that needs it)."""
    absent: tuple[ObjectRef, ...]
    """Optional objects not wanted now (no derived RBAC, no token Secret): delete if present."""
    config: ConfigCheck
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What a person has to do by hand (RBAC the operator may not grant)."""
    best_effort: tuple[ObjectRef, ...] = field(default_factory=tuple)
    """Objects in `objects` the scheduler runs without, only less capable: when the API server
    forbids one (an operator installed with older RBAC) the rollout goes on, with a warning."""

    @property
    def deployment(self) -> JSON | None:
        return next((obj for obj in self.objects if obj["kind"] == "Deployment"), None)


def replicas_for(instance: Instance, matching_nodes: int) -> int:
    """Upstream's HA table: one per matching node, capped at maxReplicas, never below one."""
    if not instance.spec.highly_available:
        return 1
    return max(1, min(matching_nodes, instance.spec.max_replicas))


def ha_node_selector(instance: Instance) -> dict[str, str]:
    """The selector whose matching nodes count as HA capacity (empty: every node)."""
    if not instance.spec.highly_available:
        return {}
    return dict(instance.spec.ha_topology.node_selector or {})


def plan(
    instance: Instance, configmap: JSON | None, facts: ClusterFacts, *, deploy_anyway: bool = False
) -> Plan:
    """Everything the operator wants to exist for `instance`, given its ConfigMap (None: missing).

    `deploy_anyway` includes the Deployment even when the config would hold it back: never for
    the operator, only for `secsched operator render --allow-invalid`.
    """
    spec = instance.spec
    namespace = instance.namespace
    config = check_config(spec, configmap, namespace)
    rbac = derive(config.document, spec.image)
    objects: list[JSON] = [
        _namespaced(instance, "v1", "ServiceAccount", names.OPERAND),
        _cluster_role_binding(instance, names.CRB_KUBE_SCHEDULER, "system:kube-scheduler", owned=True),
        _cluster_role_binding(instance, names.CRB_VOLUME_SCHEDULER, "system:volume-scheduler", owned=True),
        _auth_reader_binding(instance),
        _service(instance),
        _prometheus_role(instance),
        _role_binding(instance, names.PROMETHEUS_ROLE, "prometheus-k8s", "openshift-monitoring"),
        _operand_role(instance),
        _role_binding(instance, names.OPERAND_ROLE, names.OPERAND, namespace),
    ]
    absent: list[ObjectRef] = []
    if facts.service_monitor:
        objects.append(_service_monitor(instance))
    if rbac.rules:
        objects.append(_plugins_cluster_role(rbac))
        objects.append(
            _cluster_role_binding(instance, names.PLUGINS_CLUSTER_ROLE, names.PLUGINS_CLUSTER_ROLE)
        )
    else:
        absent += [
            ObjectRef(RBAC_API, "ClusterRoleBinding", names.PLUGINS_CLUSTER_ROLE),
            ObjectRef(RBAC_API, "ClusterRole", names.PLUGINS_CLUSTER_ROLE),
        ]
    local_secrets = sorted(name for ns, name in rbac.secrets if ns == namespace)
    if local_secrets:
        objects.append(_secrets_role(instance, local_secrets))
        objects.append(_role_binding(instance, names.SECRETS_ROLE, names.OPERAND, namespace, upstream=False))
    else:
        absent += [
            ObjectRef(RBAC_API, "RoleBinding", names.SECRETS_ROLE, namespace),
            ObjectRef(RBAC_API, "Role", names.SECRETS_ROLE, namespace),
        ]
    notes = tuple(
        f"the scheduler reads its metrics token from Secret {ns}/{name}, outside namespace {namespace}: "
        f"grant it yourself with `kubectl create role {names.SECRETS_ROLE} -n {ns} --verb=get "
        f"--resource=secrets --resource-name={name}` and `kubectl create rolebinding {names.SECRETS_ROLE} "
        f"-n {ns} --role={names.SECRETS_ROLE} --serviceaccount={namespace}:{names.OPERAND}`"
        for ns, name in rbac.secrets
        if ns != namespace
    )
    if not facts.service_ca and facts.serving_cert is not None:
        objects.append(_serving_cert_secret(instance, facts.serving_cert))
    if not config.blocks_rollout or deploy_anyway:
        objects.append(_deployment(instance, configmap or {}, replicas_for(instance, facts.matching_nodes)))
    return Plan(tuple(objects), tuple(absent), config, notes, BEST_EFFORT)


def managed_refs(namespace: str) -> tuple[ObjectRef, ...]:
    """Every object the operator may create for an instance in `namespace`, Deployment first
    (so the scheduler stops before its permissions go)."""
    return (
        ObjectRef("apps/v1", "Deployment", names.OPERAND, namespace),
        ObjectRef(SERVICE_MONITOR_API, "ServiceMonitor", names.SERVICE_MONITOR, namespace),
        ObjectRef("v1", "Service", names.SERVICE, namespace),
        ObjectRef("v1", "Secret", names.SERVING_CERT_SECRET, namespace),
        ObjectRef(RBAC_API, "RoleBinding", names.SECRETS_ROLE, namespace),
        ObjectRef(RBAC_API, "Role", names.SECRETS_ROLE, namespace),
        ObjectRef(RBAC_API, "RoleBinding", names.OPERAND_ROLE, namespace),
        ObjectRef(RBAC_API, "Role", names.OPERAND_ROLE, namespace),
        ObjectRef(RBAC_API, "RoleBinding", names.PROMETHEUS_ROLE, namespace),
        ObjectRef(RBAC_API, "Role", names.PROMETHEUS_ROLE, namespace),
        ObjectRef(RBAC_API, "ClusterRoleBinding", names.PLUGINS_CLUSTER_ROLE),
        ObjectRef(RBAC_API, "ClusterRole", names.PLUGINS_CLUSTER_ROLE),
        ObjectRef(RBAC_API, "ClusterRoleBinding", names.CRB_VOLUME_SCHEDULER),
        AUTH_READER_REF,
        ObjectRef(RBAC_API, "ClusterRoleBinding", names.CRB_KUBE_SCHEDULER),
        ObjectRef("v1", "ServiceAccount", names.OPERAND, namespace),
    )


# -- objects ---------------------------------------------------------------------------


def _labels(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**(extra or {}), names.MANAGED_BY_KEY: names.MANAGED_BY}


def _namespaced(
    instance: Instance,
    api_version: str,
    kind: str,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> JSON:
    metadata: JSON = {"name": name, "namespace": instance.namespace, "labels": _labels(labels)}
    if annotations:
        metadata["annotations"] = annotations
    if instance.uid:  # a CR read from a file has none yet: no ownerReference can point at it
        metadata["ownerReferences"] = [instance.owner_reference()]
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def _cluster_role_binding(instance: Instance, name: str, role: str, owned: bool = False) -> JSON:
    """Cluster-scoped, so a namespaced CR cannot own it for the garbage collector; upstream's two
    carry the ownerReference anyway (kept, for identical objects), and our finalizer deletes all."""
    metadata: JSON = {"name": name, "labels": _labels()}
    if owned and instance.uid:
        metadata["ownerReferences"] = [instance.owner_reference()]
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRoleBinding",
        "metadata": metadata,
        "subjects": [{"kind": "ServiceAccount", "name": names.OPERAND, "namespace": instance.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
    }


def _auth_reader_binding(instance: Instance) -> JSON:
    """`get` on ConfigMap kube-system/extension-apiserver-authentication for the scheduler.

    In another namespace than the CR, so no ownerReference (the garbage collector would delete
    it at once): like the ClusterRoleBindings, the finalizer and Removed delete it."""
    return {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": {
            "name": names.AUTH_READER_BINDING,
            "namespace": names.AUTH_NAMESPACE,
            "labels": _labels(),
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.AUTH_READER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": names.OPERAND, "namespace": instance.namespace}],
    }


def _role_binding(
    instance: Instance, name: str, account: str, account_namespace: str, upstream: bool = True
) -> JSON:
    annotations = dict(RELEASE_ANNOTATIONS) if upstream else None
    binding = _namespaced(instance, RBAC_API, "RoleBinding", name, annotations=annotations)
    binding["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
    binding["subjects"] = [{"kind": "ServiceAccount", "name": account, "namespace": account_namespace}]
    return binding


def _prometheus_role(instance: Instance) -> JSON:
    role = _namespaced(
        instance, RBAC_API, "Role", names.PROMETHEUS_ROLE, annotations=dict(RELEASE_ANNOTATIONS)
    )
    role["rules"] = [
        {"apiGroups": [""], "resources": ["services", "endpoints", "pods"], "verbs": ["get", "list", "watch"]}
    ]
    return role


def _operand_role(instance: Instance) -> JSON:
    role = _namespaced(instance, RBAC_API, "Role", names.OPERAND_ROLE, annotations=dict(RELEASE_ANNOTATIONS))
    role["rules"] = [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [names.OPERAND],
            "verbs": ["get", "list", "watch", "create", "update", "patch"],
        }
    ]
    return role


def _secrets_role(instance: Instance, secrets: list[str]) -> JSON:
    role = _namespaced(instance, RBAC_API, "Role", names.SECRETS_ROLE)
    role["rules"] = [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": secrets, "verbs": ["get"]}
    ]
    return role


def _plugins_cluster_role(rbac: DerivedRbac) -> JSON:
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": {
            "name": names.PLUGINS_CLUSTER_ROLE,
            "labels": _labels(),
            "annotations": {names.DERIVED_FROM_ANNOTATION: "; ".join(rbac.reasons)},
        },
        "rules": [dict(rule) for rule in rbac.rules],
    }


def _service(instance: Instance) -> JSON:
    service = _namespaced(
        instance,
        "v1",
        "Service",
        names.SERVICE,
        labels=dict(names.APP_LABEL),
        annotations={
            **RELEASE_ANNOTATIONS,
            names.SERVING_CERT_ANNOTATION: names.SERVING_CERT_SECRET,
            "exclude.release.openshift.io/internal-openshift-hosted": "true",
        },
    )
    service["spec"] = {
        "ports": [
            {"name": "https", "port": names.SECURE_PORT, "protocol": "TCP", "targetPort": names.SECURE_PORT}
        ],
        "selector": dict(names.APP_LABEL),
        "sessionAffinity": "None",
        "type": "ClusterIP",
    }
    return service


def _service_monitor(instance: Instance) -> JSON:
    monitor = _namespaced(
        instance,
        SERVICE_MONITOR_API,
        "ServiceMonitor",
        names.SERVICE_MONITOR,
        annotations={**RELEASE_ANNOTATIONS, "exclude.release.openshift.io/internal-openshift-hosted": "true"},
    )
    monitor["spec"] = {
        "endpoints": [
            {
                "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                "interval": "30s",
                "metricRelabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": ["exported_namespace"],
                        "targetLabel": "pod_namespace",
                    }
                ],
                "path": "/metrics",
                "port": "https",
                "scheme": "https",
                "tlsConfig": {
                    "caFile": "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
                    "serverName": f"{names.SERVICE}.{instance.namespace}.svc",
                },
            }
        ],
        "namespaceSelector": {"matchNames": [instance.namespace]},
        "selector": {"matchLabels": dict(names.APP_LABEL)},
    }
    return monitor


def _serving_cert_secret(instance: Instance, cert: ServingCert) -> JSON:
    secret = _namespaced(
        instance,
        "v1",
        "Secret",
        names.SERVING_CERT_SECRET,
        annotations={names.SELF_SIGNED_ANNOTATION: "true"},
    )
    secret["type"] = "kubernetes.io/tls"
    secret["data"] = cert.secret_data()
    return secret


def scheduler_args(instance: Instance) -> list[str]:
    """The container's args, in upstream's order: files, leader election, -v, then TLS flags."""
    return [
        f"--config=/etc/kubernetes/{names.CONFIG_KEY}",
        "--tls-cert-file=/certs-dir/tls.crt",
        "--tls-private-key-file=/certs-dir/tls.key",
        *LEADER_ELECTION_ARGS,
        f"--leader-elect-resource-namespace={instance.namespace}",
        "--leader-elect-retry-period=26s",
        f"-v={instance.spec.verbosity}",
        *instance.spec.tls_args(),
    ]


def _probe() -> JSON:
    return {
        "httpGet": {"scheme": "HTTPS", "port": names.SECURE_PORT, "path": "/healthz"},
        "initialDelaySeconds": 45,
        "timeoutSeconds": 10,
    }


def _deployment(instance: Instance, configmap: JSON, replicas: int) -> JSON:
    spec = instance.spec
    config_version = str((configmap.get("metadata") or {}).get("resourceVersion") or "0")
    container: JSON = {
        "name": names.OPERAND,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "image": spec.image,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "command": ["/bin/kube-scheduler"],
        "args": scheduler_args(instance),
        "env": [{"name": "ENABLE_OPENSHIFT_AUTH", "value": "true"}],
        "resources": spec.resources.manifest() if spec.resources else DEFAULT_RESOURCES,
        "ports": [{"containerPort": names.SECURE_PORT, "protocol": "TCP"}],
        "livenessProbe": _probe(),
        "readinessProbe": _probe(),
        "volumeMounts": [
            {"mountPath": "/etc/kubernetes", "name": "etckubernetes"},
            {"mountPath": "/tmp", "name": "tmp"},
            {"mountPath": "/certs-dir", "name": "certs-dir"},
        ],
    }
    pod: JSON = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumes": [
            {"name": "etckubernetes", "configMap": {"name": spec.scheduler_config}},
            {"name": "tmp", "emptyDir": {}},
            {"name": "certs-dir", "secret": {"secretName": names.SERVING_CERT_SECRET}},
        ],
        "restartPolicy": "Always",
        "containers": [container],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": dict(names.APP_LABEL)},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "serviceAccountName": names.OPERAND,
    }
    node_selector, tolerations = spec.placement
    if node_selector is not None:
        pod["nodeSelector"] = dict(node_selector)
    if tolerations is not None:
        pod["tolerations"] = [toleration.manifest() for toleration in tolerations]
    if spec.priority_class_name:
        pod["priorityClassName"] = spec.priority_class_name
    deployment = _namespaced(instance, "apps/v1", "Deployment", names.OPERAND, labels=dict(names.APP_LABEL))
    deployment["spec"] = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(names.APP_LABEL)},
        "template": {
            "metadata": {
                "labels": dict(names.APP_LABEL),
                "annotations": {
                    "openshift.io/required-scc": "restricted-v2",
                    f"{names.GENERATION_ANNOTATION_PREFIX}{instance.name}": str(instance.generation),
                    f"{names.CONFIGMAP_ANNOTATION_PREFIX}{spec.scheduler_config}": config_version,
                },
            },
            "spec": pod,
        },
    }
    return deployment
