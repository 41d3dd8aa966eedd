"""The SecondaryScheduler custom resource, validated: upstream's fields plus our extensions.

The API server already checks a CR against the CRD's schema, but `secsched operator render`
reads CRs from files, and some rules (quantities, toleration combinations) are beyond an
OpenAPI schema. So the same checks run here, and each message names the field to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from secondary_scheduler.apivalidation import (
    INT32_MAX,
    INT64_MAX,
    check_resources,
    dns_label_problem,
    dns_subdomain_problem,
    is_dns_subdomain,
    label_value_problem,
    qualified_name_problem,
    quantity_problem,
)
from secondary_scheduler.config.diagnose import error_messages
from secondary_scheduler.operator import names

LogLevel = Literal["", "Normal", "Debug", "Trace", "TraceAll"]
ManagementState = Literal["Managed", "Unmanaged", "Force", "Removed"]
TopologyMode = Literal["", "SingleReplica", "HighlyAvailable"]

VERBOSITY: dict[str, int] = {"Normal": 2, "Debug": 4, "Trace": 6, "TraceAll": 8}
"""logLevel -> kube-scheduler's -v; an empty or unknown level is Normal, as upstream."""
DEFAULT_MAX_REPLICAS = 3

HA_RULE = "self.mode == 'HighlyAvailable' || !has(self.highlyAvailableTopology)"
HA_RULE_MESSAGE = "highlyAvailableTopology can only be set when mode is HighlyAvailable"
PLACEMENT_RULE = (
    "!has(self.topology) || !has(self.topology.mode) || self.topology.mode != 'HighlyAvailable' || "
    "(!has(self.nodeSelector) && !has(self.tolerations))"
)
PLACEMENT_RULE_MESSAGE = (
    "nodeSelector and tolerations apply outside HighlyAvailable mode; in HighlyAvailable mode "
    "set topology.highlyAvailableTopology.nodeSelector and .tolerations instead"
)


class CrModel(BaseModel):
    """camelCase as in YAML, no type coercion, unknown fields reported (a typo is never ignored)."""

    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class Toleration(CrModel):
    key: str = ""
    operator: Literal["", "Exists", "Equal", "Lt", "Gt"] = ""
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    toleration_seconds: int | None = Field(default=None, ge=-(2**63), le=INT64_MAX)

    @model_validator(mode="after")
    def _consistent(self) -> Toleration:
        # The pod API rejects these at creation time, long after the CR was accepted.
        if self.key and (problem := qualified_name_problem(self.key)):
            raise ValueError(f"key: {problem}")
        if self.value and (problem := label_value_problem(self.value)):
            raise ValueError(f"value: {problem} (a taint value is at most 63 letters, digits, '-', '_', '.')")
        if self.operator == "Exists" and self.value:
            raise ValueError("value must be empty when operator is Exists")
        if not self.key and self.operator != "Exists":
            raise ValueError("an empty key matches every taint and needs operator: Exists")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds only applies with effect: NoExecute")
        return self

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_defaults=True)


class HighlyAvailableTopology(CrModel):
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None
    max_replicas: int | None = Field(default=None, ge=1, le=INT32_MAX)

    @field_validator("node_selector")
    @classmethod
    def _labels(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return _check_node_selector(value)


class Topology(CrModel):
    mode: TopologyMode = "SingleReplica"
    highly_available_topology: HighlyAvailableTopology | None = None

    @model_validator(mode="after")
    def _ha_rule(self) -> Topology:
        """Upstream's CEL rule, for CRs that never met the API server."""
        if self.mode != "HighlyAvailable" and self.highly_available_topology is not None:
            raise ValueError(HA_RULE_MESSAGE)
        return self


class ResourceRequirements(CrModel):
    requests: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None

    @field_validator("requests", "limits")
    @classmethod
    def _quantities(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for resource, quantity in (value or {}).items():
            if problem := qualified_name_problem(resource):
                raise ValueError(f"{resource}: the resource name {problem}")
            # The CRD's schema: integer or string (int-or-string), so 0.5 must be written "500m".
            if isinstance(quantity, bool) or not isinstance(quantity, str | int):
                raise ValueError(
                    f"{resource}: a quantity is a string or an integer (e.g. 500m, 1Gi); got {quantity!r}"
                )
            if problem := quantity_problem(quantity):
                raise ValueError(f"{resource}: {problem}")
        return value

    @model_validator(mode="after")
    def _requests_within_limits(self) -> ResourceRequirements:
        """The API server refuses a container whose request exceeds its limit."""
        requests = check_resources(self.requests, "requests", [])
        limits = check_resources(self.limits, "limits", [])
        for resource, limit in limits.items():
            if resource in requests and requests[resource] > limit:
                raise ValueError(f"requests.{resource} must not exceed limits.{resource}")
        return self

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class SecondarySchedulerSpec(CrModel):
    management_state: ManagementState | None = None
    log_level: LogLevel = "Normal"
    operator_log_level: LogLevel = "Normal"
    observed_config: dict[str, Any] | None = None
    unsupported_config_overrides: dict[str, Any] | None = None
    scheduler_config: str = ""
    scheduler_image: str = ""
    topology: Topology | None = None
    # Ours (documented as extensions in docs/operator.md and the CRD's descriptions).
    resources: ResourceRequirements | None = None
    priority_class_name: str = ""
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None

    @field_validator("node_selector")
    @classmethod
    def _labels(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return _check_node_selector(value)

    @field_validator("priority_class_name")
    @classmethod
    def _priority_class(cls, value: str) -> str:
        if value and (problem := dns_subdomain_problem(value)):
            raise ValueError(f"{problem} (a PriorityClass name, e.g. system-cluster-critical)")
        return value

    @field_validator("scheduler_image")
    @classmethod
    def _image(cls, value: str) -> str:
        if value != value.strip() or any(char.isspace() for char in value):
            raise ValueError(f"{value!r}: an image reference has no spaces (e.g. quay.io/org/image:tag)")
        return value

    @field_validator("scheduler_config")
    @classmethod
    def _configmap_name(cls, value: str) -> str:
        if value and not is_dns_subdomain(value):
            raise ValueError(
                f"{value!r} is not a ConfigMap name (lower-case letters, digits, '-' and '.', "
                "starting and ending with a letter or digit)"
            )
        return value

    @model_validator(mode="after")
    def _placement_rule(self) -> SecondarySchedulerSpec:
        if self.highly_available and (self.node_selector is not None or self.tolerations is not None):
            raise ValueError(PLACEMENT_RULE_MESSAGE)
        return self

    @property
    def state(self) -> ManagementState:
        """Force means Managed for a single operand; unset means Managed, as upstream."""
        return "Managed" if self.management_state in (None, "Force") else self.management_state

    @property
    def highly_available(self) -> bool:
        return self.topology is not None and self.topology.mode == "HighlyAvailable"

    @property
    def image(self) -> str:
        return self.scheduler_image or names.SCHEDULER_IMAGE

    @property
    def verbosity(self) -> int:
        return VERBOSITY.get(self.log_level, 2)

    @property
    def ha_topology(self) -> HighlyAvailableTopology:
        topology = self.topology.highly_available_topology if self.topology else None
        return topology or HighlyAvailableTopology()

    @property
    def max_replicas(self) -> int:
        return self.ha_topology.max_replicas or DEFAULT_MAX_REPLICAS

    @property
    def placement(self) -> tuple[dict[str, str] | None, list[Toleration] | None]:
        """The pod's nodeSelector and tolerations: HA topology's in HA mode, our extension's otherwise."""
        if self.highly_available:
            return self.ha_topology.node_selector, self.ha_topology.tolerations
        return self.node_selector, self.tolerations

    def tls_args(self) -> list[str]:
        """kube-scheduler TLS flags from observedConfig.servingInfo, cipher suites first, as upstream."""
        serving = (self.observed_config or {}).get("servingInfo")
        if not isinstance(serving, dict):
            return []
        args = []
        suites = serving.get("cipherSuites")
        if isinstance(suites, list) and suites and all(isinstance(s, str) for s in suites):
            args.append(f"--tls-cipher-suites={','.join(suites)}")
        minimum = serving.get("minTLSVersion")
        if isinstance(minimum, str) and minimum:
            args.append(f"--tls-min-version={minimum}")
        return args


def _check_node_selector(value: dict[str, str] | None) -> dict[str, str] | None:
    """The API server validates a pod's nodeSelector as labels: the Deployment would be refused."""
    for key, label in (value or {}).items():
        if problem := qualified_name_problem(key):
            raise ValueError(f"{key}: the label key {problem}")
        if problem := label_value_problem(label):
            raise ValueError(f"{key}: {problem} (a label value is at most 63 letters, digits, '-', '_', '.')")
    return value


@dataclass(frozen=True)
class Instance:
    """One SecondaryScheduler as the operator sees it: identity, generation, validated spec."""

    name: str
    namespace: str
    uid: str
    generation: int
    spec: SecondarySchedulerSpec

    def owner_reference(self) -> dict[str, str]:
        """Upstream's ownerReference: no controller or blockOwnerDeletion flags."""
        return {"apiVersion": names.API_VERSION, "kind": names.KIND, "name": self.name, "uid": self.uid}


class SpecError(ValueError):
    """The CR cannot be used; each problem reads `spec.field: what to change`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def parse_instance(body: dict[str, Any], default_namespace: str = names.DEFAULT_NAMESPACE) -> Instance:
    """The CR in `body` (as the API returns it, or as written in a file); SpecError if unusable."""
    if body.get("apiVersion", names.API_VERSION) != names.API_VERSION or body.get("kind", names.KIND) != (
        names.KIND
    ):
        raise SpecError(
            [
                f"expected apiVersion {names.API_VERSION}, kind {names.KIND}; got {body.get('apiVersion')}, "
                f"{body.get('kind')}"
            ]
        )
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise SpecError(["metadata: must be a mapping (name, namespace)"])
    for key in ("name", "namespace", "uid"):
        if meta.get(key) is not None and not isinstance(meta.get(key), str):
            raise SpecError([f"metadata.{key}: must be a string; got {meta.get(key)!r}"])
    namespace = str(meta.get("namespace") or default_namespace)
    if problem := dns_label_problem(namespace):
        raise SpecError([f"metadata.namespace: {problem} (a namespace name, e.g. {names.DEFAULT_NAMESPACE})"])
    generation = meta.get("generation")
    if generation is not None and (isinstance(generation, bool) or not isinstance(generation, int)):
        raise SpecError([f"metadata.generation: must be an integer; got {generation!r}"])
    raw_spec = body.get("spec")
    if not isinstance(raw_spec, dict):
        raise SpecError(["spec: required (a mapping with at least schedulerConfig)"])
    try:
        spec = SecondarySchedulerSpec.model_validate(raw_spec)
    except ValidationError as error:
        raise SpecError(error_messages(SecondarySchedulerSpec, error, ("spec",))) from error
    return Instance(
        name=str(meta.get("name") or names.INSTANCE_NAME),
        namespace=namespace,
        uid=str(meta.get("uid") or ""),
        generation=int(meta.get("generation") or 1),
        spec=spec,
    )
