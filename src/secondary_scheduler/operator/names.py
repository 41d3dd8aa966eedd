"""Every name the operator shares with upstream or with users, in one place.

The names, labels and annotation keys below are upstream's (so an existing install keeps
working); the ones under `secsched.io` are ours and mark what upstream does not have.
"""

from __future__ import annotations

from typing import Final

from secondary_scheduler import __version__

GROUP: Final = "operator.openshift.io"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "SecondaryScheduler"
PLURAL: Final = "secondaryschedulers"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

DEFAULT_NAMESPACE: Final = "openshift-secondary-scheduler-operator"
INSTANCE_NAME: Final = "cluster"
"""Upstream reconciles only the CR of this name in the operator's namespace; so do we."""

IMAGE_REPOSITORY: Final = "quay.io/secondary-scheduler"
SCHEDULER_IMAGE: Final = f"{IMAGE_REPOSITORY}/secsched-scheduler:v{__version__}"
"""`spec.schedulerImage` when the CR leaves it empty: our scheduler, whose image provides
/bin/kube-scheduler (images/scheduler/Dockerfile)."""
OPERATOR_IMAGE: Final = f"{IMAGE_REPOSITORY}/secsched-operator:v{__version__}"

OPERAND: Final = "secondary-scheduler"
"""The Deployment, its ServiceAccount, its container, its `app` label and its lease."""
SERVICE: Final = "metrics"
SERVING_CERT_SECRET: Final = "secondary-scheduler-serving-cert"
CRB_KUBE_SCHEDULER: Final = "secondary-scheduler-system-kube-scheduler"
CRB_VOLUME_SCHEDULER: Final = "secondary-scheduler-system-volume-scheduler"
AUTH_NAMESPACE: Final = "kube-system"
AUTH_READER_ROLE: Final = "extension-apiserver-authentication-reader"
"""kube-apiserver's Role in kube-system: read the ConfigMap extension-apiserver-authentication."""
AUTH_READER_BINDING: Final = "secondary-scheduler-extension-apiserver-authentication-reader"
"""Ours, in kube-system: the secure port's delegated authentication reads the client CA and the
front-proxy settings from that ConfigMap, as kube-scheduler's installs grant it."""
PROMETHEUS_ROLE: Final = "prometheus-k8s"
OPERAND_ROLE: Final = "secondary-scheduler-operand"
SERVICE_MONITOR: Final = "secondary-scheduler"

# Ours: the RBAC derived from the scheduler configuration (see rbac.py).
PLUGINS_CLUSTER_ROLE: Final = "secondary-scheduler-plugins"
SECRETS_ROLE: Final = "secondary-scheduler-secrets"

APP_LABEL: Final = {"app": OPERAND}
MANAGED_BY_KEY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "secsched-operator"
FIELD_MANAGER: Final = "secsched-operator"

GENERATION_ANNOTATION_PREFIX: Final = f"{PLURAL}.{GROUP}/"
"""Pod-template annotation `secondaryschedulers.operator.openshift.io/<cr name>: <generation>`."""
CONFIGMAP_ANNOTATION_PREFIX: Final = "configmaps/"
"""Pod-template annotation `configmaps/<name>: <resourceVersion>`: a new config rolls the pods."""
SERVING_CERT_ANNOTATION: Final = "service.beta.openshift.io/serving-cert-secret-name"
SELF_SIGNED_ANNOTATION: Final = "secsched.io/self-signed"
"""On a serving-cert Secret we made ourselves because no service-ca runs in the cluster."""
DERIVED_FROM_ANNOTATION: Final = "secsched.io/derived-from"
FINALIZER: Final = "secsched.io/cleanup"
KOPF_PREFIX: Final = "secsched.io"

CONFIG_KEY: Final = "config.yaml"
SECURE_PORT: Final = 10259
