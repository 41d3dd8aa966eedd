"""CR validation: upstream's rules (enum, pattern, minimum, the CEL rule) and ours, each naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from tests.unit.operator.opbuilders import DEPLOY, NAMESPACE, cr, instance, load_yaml_docs

from secondary_scheduler.operator import names
from secondary_scheduler.operator.spec import (
    HA_RULE,
    HA_RULE_MESSAGE,
    PLACEMENT_RULE,
    PLACEMENT_RULE_MESSAGE,
    SecondarySchedulerSpec,
    SpecError,
    parse_instance,
)


def problems(spec: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        instance(spec)
    return caught.value.problems


def test_minimal_cr_gets_upstream_defaults() -> None:
    spec = instance().spec
    assert spec.state == "Managed"
    assert spec.verbosity == 2
    assert not spec.highly_available
    assert spec.image == names.SCHEDULER_IMAGE
    assert spec.max_replicas == 3


def test_force_is_managed() -> None:
    assert instance({"managementState": "Force"}).spec.state == "Managed"


def test_cel_rule_ha_topology_only_in_ha_mode() -> None:
    topology = {"mode": "SingleReplica", "highlyAvailableTopology": {"maxReplicas": 2}}
    assert problems({"topology": topology}) == [f"spec.topology: {HA_RULE_MESSAGE}"]
    # Mode left out defaults to SingleReplica, as the CRD's default does.
    assert problems({"topology": {"highlyAvailableTopology": {}}}) == [f"spec.topology: {HA_RULE_MESSAGE}"]
    ok = instance({"topology": {"mode": "HighlyAvailable", "highlyAvailableTopology": {"maxReplicas": 2}}})
    assert ok.spec.max_replicas == 2


def test_placement_extension_only_outside_ha_mode() -> None:
    spec = {"topology": {"mode": "HighlyAvailable"}, "nodeSelector": {"a": "b"}}
    assert problems(spec) == [f"spec: {PLACEMENT_RULE_MESSAGE}"]
    assert instance({"nodeSelector": {"a": "b"}}).spec.placement == ({"a": "b"}, None)


def test_max_replicas_zero_is_refused() -> None:
    topology = {"mode": "HighlyAvailable", "highlyAvailableTopology": {"maxReplicas": 0}}
    assert problems({"topology": topology}) == [
        "spec.topology.highlyAvailableTopology.maxReplicas: must be >= 1, got 0"
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"logLevel": "Verbose"},
            "spec.logLevel: expected '', 'Normal', 'Debug', 'Trace' or 'TraceAll', "
            'got the string "Verbose"',
        ),
        (
            {"managementState": "managed"},
            "spec.managementState: expected 'Managed', 'Unmanaged', 'Force' or 'Removed', "
            'got the string "managed" (did you mean Managed?)',
        ),
        ({"schedulerImage": 7}, "spec.schedulerImage: expected a string, got 7: quote it"),
        (
            {"schedulerConfg": "x"},
            "spec.schedulerConfg: unknown field `schedulerConfg`: did you mean `schedulerConfig`",
        ),
        (
            {"topology": {"Mode": "SingleReplica"}},
            "spec.topology.Mode: unknown field `Mode`: did you mean `mode`? Field names are case-sensitive",
        ),
        (
            {"resources": {"requests": {"cpu": "lots"}}},
            "spec.resources.requests: cpu: 'lots' is not a Kubernetes",
        ),
        ({"tolerations": [{"operator": "Exists", "value": "x"}]}, "spec.tolerations[0]: value must be empty"),
        ({"tolerations": [{"value": "x"}]}, "spec.tolerations[0]: an empty key matches every taint"),
        ({"nodeSelector": {"a": 1}}, "spec.nodeSelector.a: expected a string, got 1: quote it"),
        ({"schedulerConfig": "../secrets/x"}, "spec.schedulerConfig: '../secrets/x' is not a ConfigMap name"),
    ],
)
def test_messages_name_the_field(spec: dict[str, Any], expected: str) -> None:
    found = problems(spec)
    assert any(problem.startswith(expected) for problem in found), found


def test_every_problem_is_reported_at_once() -> None:
    assert len(problems({"logLevel": "x", "operatorLogLevel": "y", "schedulerImage": 1})) == 3


def test_not_a_secondary_scheduler() -> None:
    with pytest.raises(SpecError, match=r"expected apiVersion operator\.openshift\.io/v1"):
        parse_instance({"apiVersion": "v1", "kind": "ConfigMap", "spec": {}})
    with pytest.raises(SpecError, match="spec: required"):
        parse_instance({"apiVersion": "operator.openshift.io/v1", "kind": "SecondaryScheduler"})


def test_identity_comes_from_metadata() -> None:
    parsed = parse_instance(cr(name="other", generation=9))
    assert (parsed.name, parsed.generation, parsed.namespace) == ("other", 9, NAMESPACE)
    assert parse_instance(cr(namespace=None), "elsewhere").namespace == "elsewhere"


# -- the CRD says the same ----------------------------------------------------------------


def crd_schema() -> dict[str, Any]:
    (crd,) = load_yaml_docs(DEPLOY / "00_secondary-scheduler-operator.crd.yaml")
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


def test_crd_carries_upstreams_cel_rule_and_ours() -> None:
    spec = crd_schema()["properties"]["spec"]
    topology_rules = spec["properties"]["topology"]["x-kubernetes-validations"]
    assert topology_rules == [{"rule": HA_RULE, "message": HA_RULE_MESSAGE}]
    assert spec["x-kubernetes-validations"] == [{"rule": PLACEMENT_RULE, "message": PLACEMENT_RULE_MESSAGE}]


def test_crd_identity_and_status_subresource() -> None:
    (crd,) = load_yaml_docs(DEPLOY / "00_secondary-scheduler-operator.crd.yaml")
    assert crd["metadata"]["name"] == names.CRD_NAME
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    assert version["schema"]["openAPIV3Schema"]["required"] == ["spec"]


def _schema_fields(model: type[BaseModel], schema: dict[str, Any], at: str) -> list[str]:
    """Fields of `model` missing from `schema`, recursively through nested models."""
    missing = []
    properties = schema.get("properties", {})
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if alias not in properties:
            missing.append(f"{at}.{alias}")
            continue
        nested = _nested_model(info.annotation)
        if nested is not None:
            child = properties[alias]
            missing += _schema_fields(nested, child.get("items", child), f"{at}.{alias}")
    return missing


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        found = _nested_model(argument)
        if found is not None:
            return found
    return None


def test_crd_schema_has_every_field_the_operator_reads() -> None:
    spec_schema = crd_schema()["properties"]["spec"]
    assert _schema_fields(SecondarySchedulerSpec, spec_schema, "spec") == []
    assert set(spec_schema["properties"]) == {
        info.alias or name for name, info in SecondarySchedulerSpec.model_fields.items()
    }


def test_crd_enums_match_the_model() -> None:
    properties = crd_schema()["properties"]["spec"]["properties"]
    assert properties["logLevel"]["enum"] == ["", "Normal", "Debug", "Trace", "TraceAll"]
    assert properties["topology"]["properties"]["mode"]["enum"] == ["", "SingleReplica", "HighlyAvailable"]
    assert properties["managementState"]["pattern"] == "^(Managed|Unmanaged|Force|Removed)$"
    ha = properties["topology"]["properties"]["highlyAvailableTopology"]["properties"]
    assert ha["maxReplicas"]["minimum"] == 1


def test_example_cr_is_valid() -> None:
    (example,) = load_yaml_docs(DEPLOY / "07_secondary-scheduler-operator.cr.yaml")
    parsed = parse_instance(example)
    assert (parsed.name, parsed.namespace) == (names.INSTANCE_NAME, names.DEFAULT_NAMESPACE)
    assert parsed.spec.image == names.SCHEDULER_IMAGE
