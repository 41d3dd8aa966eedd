"""Builders shared by the operator's unit tests: CRs, ConfigMaps and a valid scheduler config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from secondary_scheduler.operator.render import ClusterFacts, Plan, plan
from secondary_scheduler.operator.spec import Instance, parse_instance

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
BUNDLE = REPO / "bundle"
NAMESPACE = "openshift-secondary-scheduler-operator"
UID = "4f3c2a10-0000-4000-8000-000000000001"

VALID_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: secondary-scheduler
    plugins:
      score:
        disabled:
          - name: NodeResourcesBalancedAllocation
        enabled:
          - name: TargetLoadPacking
    pluginConfig:
      - name: TargetLoadPacking
        args:
          targetUtilization: 70
          metricProvider:
            type: Prometheus
            address: http://prometheus.example:9090
            insecureSkipVerify: false
"""


def cr(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """A SecondaryScheduler as the API server returns it (uid, generation), with `spec`."""
    metadata = {"name": "cluster", "namespace": NAMESPACE, "uid": UID, "generation": 3, **meta}
    return {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "SecondaryScheduler",
        "metadata": metadata,
        "spec": {"schedulerConfig": "secondary-scheduler-config", **(spec or {})},
    }


def instance(spec: dict[str, Any] | None = None, **meta: Any) -> Instance:
    return parse_instance(cr(spec, **meta))


def configmap(text: str = VALID_CONFIG, resource_version: str = "4711") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "secondary-scheduler-config",
            "namespace": NAMESPACE,
            "resourceVersion": resource_version,
        },
        "data": {"config.yaml": text},
    }


def render(spec: dict[str, Any] | None = None, facts: ClusterFacts | None = None, **kw: Any) -> Plan:
    """The plan for a CR with `spec` and a valid ConfigMap (or `configmap=`)."""
    source = kw.pop("configmap", configmap())
    return plan(instance(spec, **kw), source, facts or ClusterFacts())


def of_kind(result: Plan, kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        o for o in result.objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container(result: Plan) -> dict[str, Any]:
    deployment = result.deployment
    assert deployment is not None
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


SEED_CONFIG = Path(__file__).with_name("seed_000_config.yaml")
"""Seed 000's TargetLoadPacking config (v1beta3), verbatim: ${PROM_URL} and ${PROM_TOKEN} left in."""
