"""Validation as kube-scheduler's and the API server's: configs, pods, nodes, snapshots."""

from __future__ import annotations

import pytest

from secondary_scheduler.apivalidation import check_node, check_pod, quantity_problem
from secondary_scheduler.config import ConfigError, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

HEADER = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    "leaderElection: {leaderElect: false}\n"
)
TLP = """\
profiles:
- schedulerName: s
  plugins: {score: {enabled: [{name: TargetLoadPacking}]}}
  pluginConfig:
  - name: TargetLoadPacking
    args: ARGS
"""


def errors(body: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(HEADER + body, "c.yaml", catalog=IN_TREE_CATALOG)
    return [problem.render("c.yaml") for problem in caught.value.problems]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("clientConnection: {burst: -1}\n", "clientConnection.burst: must be non-negative"),
        ("clientConnection: {qps: -5}\n", "clientConnection.qps: must not be negative"),
        ("clientConnection: {burst: 2147483648}\n", "out of range for burst (an int32"),
        ("parallelism: 2147483648\n", "parallelism: must be <= 2147483647"),
        ("parallelism: 99999999999999999999999\n", "Kubernetes integers are at most 64-bit"),
        ("podInitialBackoffSeconds: 1e3\n", "podInitialBackoffSeconds: expected an integer, got 1000.0"),
        (TLP.replace("ARGS", "{targetUtilization: 250}"), "250 is not a CPU utilisation target"),
        (
            TLP.replace("ARGS", '{metricProvider: {type: Prometheus, address: "prom:9090"}}'),
            "is not an http(s) URL with a host: write the scheme, e.g. https://prom:9090",
        ),
        (
            TLP.replace("ARGS", '{watcherAddress: "watcher:2020"}'),
            "watcherAddress 'watcher:2020' is not an http(s) URL",
        ),
        (TLP.replace("ARGS", '{defaultRequestsMultiplier: "-2"}'), "must be a finite number of 0 or more"),
        (
            'clientConnection: {kubeconfig: "REPLACE_ME_WITH_KUBE_CONFIG_PATH"}\n',
            "a placeholder from the documentation",
        ),
        (
            TLP.replace("ARGS", '{watcherAddress: "<Replace with Watcher Address>"}'),
            "angle-bracket placeholder",
        ),
        (TLP.replace("ARGS", '{watcherAddress: "{{ .Values.watcher }}"}'), "template expression"),
        ('clientConnection: {kubeconfig: "$(KUBECONFIG)"}\n', "Kubernetes $(VAR) reference"),
        ('clientConnection: {kubeconfig: "${KUBECONFIG}"}\n', "shell placeholder"),
    ],
)
def test_config_rules(body: str, message: str) -> None:
    found = errors(body)
    assert any(message in problem for problem in found), found


def test_a_placeholder_is_reported_once_not_also_as_a_bad_url() -> None:
    found = errors(TLP.replace("ARGS", '{metricProvider: {type: Prometheus, address: "${PROM_URL}"}}'))
    assert len(found) == 1 and "${PROM_URL}" in found[0]


def test_target_utilization_zero_still_defaults_with_a_warning() -> None:
    result = load_config(
        HEADER + TLP.replace("ARGS", "{targetUtilization: 0}"), "c.yaml", catalog=IN_TREE_CATALOG
    )
    assert any("using the default, 40" in warning.message for warning in result.warnings)


def pod(**spec: object) -> dict[str, object]:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec},
    }


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"nodeSelector": "disk=ssd"}, "spec.nodeSelector", "expected a mapping"),
        ({"nodeSelector": {"disk": "a" * 64}}, "spec.nodeSelector.disk", "is not a valid label value"),
        (
            {"tolerations": [{"key": "a", "operator": "Exist"}]},
            "spec.tolerations[0].operator",
            "not a valid value",
        ),
        (
            {"tolerations": [{"operator": "Equal", "value": "x"}]},
            "spec.tolerations[0].operator",
            "must be Exists",
        ),
        (
            {"tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 5}]},
            "spec.tolerations[0].tolerationSeconds",
            "only applies with effect NoExecute",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "z", "operator": "Inn", "values": ["a"]}]}
                            ]
                        }
                    }
                }
            },
            "matchExpressions[0].operator",
            "'Inn' is not a valid value",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "z", "operator": "Gt", "values": ["x"]}]}
                            ]
                        }
                    }
                }
            },
            "matchExpressions[0].values[0]",
            "is not an integer",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}
                }
            },
            "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            "missing",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "spec.topologySpreadConstraints[0].maxSkew",
            "out of range",
        ),
        ({"priority": 2**31}, "spec.priority", "out of range"),
        ({"schedulerName": "Not A Name"}, "spec.schedulerName", "is not a valid name"),
        (
            {"containers": [{"name": "c", "resources": {"requests": {"cpu": ".inf"}}}]},
            "spec.containers[0].resources.requests.cpu",
            "is not a Kubernetes quantity",
        ),
        (
            {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]},
            "spec.containers[0].resources.requests.cpu",
            "is more than the limit",
        ),
        (
            {"containers": [{"name": "c", "ports": [{"containerPort": 70000}]}]},
            "spec.containers[0].ports[0].containerPort",
            "out of range",
        ),
    ],
)
def test_pods_are_checked_as_the_api_server_would(spec: dict[str, object], field: str, message: str) -> None:
    problems = check_pod(pod(**spec))
    assert any(found_field.endswith(field) and message in problem for found_field, problem, _ in problems), (
        problems
    )


def test_a_valid_pod_and_node_pass() -> None:
    assert check_pod(pod(nodeSelector={"kubernetes.io/hostname": "n1"})) == []
    node = {
        "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"taints": [{"key": "dedicated", "value": "vm", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi"},
            "allocatable": {"cpu": "7900m", "memory": "31Gi"},
        },
    }
    assert check_node(node) == []


def test_node_taints() -> None:
    node = {
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": "a"}, {"key": "b", "effect": "Sometimes"}]},
    }
    messages = [problem for _, problem, _ in check_node(node)]
    assert "missing" in messages and any("'Sometimes' is not a valid value" in m for m in messages)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("500m", True),
        ("1Gi", True),
        (2, True),
        (0.5, True),
        ("1e3", True),
        (".inf", False),
        ("-1", False),
        ("1e999999999", False),
        ("1 Gi", False),
        (True, False),
        (float("inf"), False),
        ("99999999999999999999", False),
    ],
)
def test_quantities(value: object, ok: bool) -> None:
    assert (quantity_problem(value) is None) is ok
