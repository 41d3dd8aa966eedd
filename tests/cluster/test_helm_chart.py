"""charts/secondary-scheduler, judged by the real helm: `helm lint` and `helm template` with the
default values and with others, and the rendered objects checked against what the operator
renders for the same scheduler (operator/render.py), since both must run it the same way.

No cluster is needed; installing the chart on one is tests/cluster/test_helm_install.py.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.config.loader import load_config
from secondary_scheduler.kube.manifests import substitute
from secondary_scheduler.operator import names, rbac
from secondary_scheduler.operator.render import ClusterFacts, plan
from secondary_scheduler.operator.spec import parse_instance
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secsched_devtools.cluster import versions
from tests.cluster.helmchart import CHART, DEPLOY, by_kind, helm_binary, one, render, run_helm

NS = names.DEFAULT_NAMESPACE
TRIMARAN_PROFILE: dict[str, Any] = {
    "schedulerName": "load-aware",
    "plugins": {
        "score": {
            "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
            "enabled": [{"name": "TargetLoadPacking"}],
        }
    },
    "pluginConfig": [
        {
            "name": "TargetLoadPacking",
            "args": {
                "targetUtilization": 70,
                "metricProvider": {
                    "type": "Prometheus",
                    "address": "https://prometheus.monitoring.svc:9091",
                    "tokenSecretRef": {"namespace": "monitoring", "name": "prometheus-token", "key": "token"},
                },
            },
        }
    ],
}
CUSTOM: dict[str, Any] = {
    "fullnameOverride": "loadaware",
    "scheduler": {
        "image": {"repository": "registry.example.com/secsched", "tag": "v9.9.9", "pullPolicy": "Always"},
        "imagePullSecrets": [{"name": "registry-pull"}],
        "replicas": 3,
        "verbosity": 4,
        "profiles": [
            TRIMARAN_PROFILE,
            {
                "schedulerName": "low-risk",
                "plugins": {"score": {"enabled": [{"name": "LowRiskOverCommitment"}]}},
            },
            {
                "schedulerName": "gang",
                "plugins": {
                    "multiPoint": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "PrioritySort"}],
                    }
                },
            },
        ],
        "extraConfig": {"percentageOfNodesToScore": 50},
        "tls": {"secretName": "my-serving-cert"},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                            ]
                        }
                    ]
                }
            }
        },
        "priorityClassName": "system-cluster-critical",
    },
    "rbac": {"extraRules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}]},
    "operator": {"enabled": True, "image": {"tag": "v1.2.3"}},
}


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("helm-home")


@pytest.fixture(scope="module")
def default(helm: Path, home: Path) -> list[dict[str, Any]]:
    return render(helm, home)


@pytest.fixture(scope="module")
def custom(helm: Path, home: Path) -> list[dict[str, Any]]:
    return render(helm, home, CUSTOM, namespace="scheduling")


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(main)


def operator_deployment(namespace: str = NS) -> dict[str, Any]:
    """What the operator deploys for deploy/'s CR and example ConfigMap (its Prometheus filled in)."""
    cr = yaml.safe_load((DEPLOY / "07_secondary-scheduler-operator.cr.yaml").read_text())
    configmap = yaml.safe_load(
        substitute((DEPLOY / "06_configmap.yaml").read_text(), {"PROM_URL": "http://prometheus:9090"})
    )
    deployment = plan(parse_instance(cr, namespace), configmap, ClusterFacts()).deployment
    assert deployment is not None
    return deployment


def rule_set(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Rules as (group, resource, verb) triples: equal sets grant the same."""
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_helm_is_cached_apart_from_the_control_plane(helm: Path) -> None:
    """Adding (or bumping) helm must never change the control plane's cache key: a rebuild of
    that costs over 20 minutes."""
    assert helm == versions.cache_root() / f"helm-{versions.HELM}" / "bin" / "helm"
    assert "helm" not in versions.version_tag() and versions.HELM not in versions.version_tag()
    assert helm.parent != versions.bin_dir()


# -- lint ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [None, CUSTOM], ids=["default", "custom"])
def test_helm_lint_passes_strictly(helm: Path, home: Path, values: dict[str, Any] | None) -> None:
    args = ["lint", "--strict", str(CHART)]
    if values is not None:
        path = home / "lint-values.yaml"
        path.write_text(yaml.safe_dump(values))
        args += ["--values", str(path)]
    result = run_helm(helm, home, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("scheduler.replicas=two", "at '/scheduler/replicas': got string, want integer"),
        ("scheduler.image.pullPolicy=Sometimes", "at '/scheduler/image/pullPolicy'"),
        ("scheduler.leaderElection.leaseDuration=long", "at '/scheduler/leaderElection/leaseDuration'"),
    ],
)
def test_mistyped_values_are_refused_by_the_schema(helm: Path, home: Path, flag: str, message: str) -> None:
    result = run_helm(helm, home, "template", "x", str(CHART), "--namespace", "s", "--set", flag)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_chart_without_profiles_is_refused(helm: Path, home: Path) -> None:
    result = run_helm(
        helm, home, "template", "x", str(CHART), "--set", "scheduler.profiles=null", "--namespace", "s"
    )
    assert result.returncode != 0
    assert "scheduler.profiles: at least one profile is needed" in result.stderr


# -- default values: the scheduler alone ---------------------------------------------------------


def test_default_values_render_the_scheduler_and_its_rbac_only(default: list[dict[str, Any]]) -> None:
    kinds = sorted(f"{obj['kind']}/{obj['metadata']['name']}" for obj in default)
    assert kinds == sorted(
        [
            "ClusterRole/secondary-scheduler-plugins",  # our image's own: listing Events
            "ClusterRoleBinding/secondary-scheduler-kube-scheduler",
            "ClusterRoleBinding/secondary-scheduler-plugins",
            "ClusterRoleBinding/secondary-scheduler-volume-scheduler",
            "ConfigMap/secondary-scheduler-config",
            "CustomResourceDefinition/secondaryschedulers.operator.openshift.io",
            *(
                f"CustomResourceDefinition/{crd['metadata']['name']}"
                for crd in deploy_crds().values()
                if crd["metadata"]["name"] != names.CRD_NAME
            ),
            "Deployment/secondary-scheduler",
            "Role/secondary-scheduler-leader-election",
            "RoleBinding/secondary-scheduler-leader-election",
            "RoleBinding/secondary-scheduler-scheduling-auth-reader",
            "Secret/secondary-scheduler-serving-cert",
            "ServiceAccount/secondary-scheduler",
        ]
    )
    bindings = by_kind(default, "ClusterRoleBinding")
    assert {b["roleRef"]["name"] for b in bindings.values()} == {
        "system:kube-scheduler",
        "system:volume-scheduler",
        "secondary-scheduler-plugins",
    }
    plugins = by_kind(default, "ClusterRole")["secondary-scheduler-plugins"]
    assert plugins["rules"] == [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list"]}]
    for binding in bindings.values():
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "secondary-scheduler", "namespace": "scheduling"}
        ]
    reader = one(default, "RoleBinding", "secondary-scheduler-scheduling-auth-reader")
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    secret = one(default, "Secret", "secondary-scheduler-serving-cert")
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"tls.crt", "tls.key"}


def test_the_default_config_is_one_plain_profile_our_loader_accepts(default: list[dict[str, Any]]) -> None:
    text = one(default, "ConfigMap", "secondary-scheduler-config")["data"]["config.yaml"]
    document = yaml.safe_load(text)
    assert document["kind"] == "KubeSchedulerConfiguration"
    assert document["leaderElection"] == {"leaderElect": False}
    assert [p["schedulerName"] for p in document["profiles"]] == ["secondary-scheduler"]
    load_config(text, "chart ConfigMap", catalog=IN_TREE_CATALOG)


def test_the_deployment_runs_the_scheduler_as_the_operators_does(default: list[dict[str, Any]]) -> None:
    ours = one(default, "Deployment", "secondary-scheduler")
    theirs = operator_deployment()
    main, reference = container(ours), container(theirs)
    assert main["command"] == reference["command"] == ["/bin/kube-scheduler"]
    assert main["image"] == names.SCHEDULER_IMAGE
    assert ours["spec"]["replicas"] == 1
    assert "--leader-elect=false" in main["args"]
    unchanged = [arg for arg in reference["args"] if not arg.startswith("--leader-elect")]
    assert [arg for arg in main["args"] if not arg.startswith("--leader-elect")] == unchanged
    assert {(m["name"], m["mountPath"]) for m in main["volumeMounts"]} == {
        (m["name"], m["mountPath"]) for m in reference["volumeMounts"]
    }
    pod, reference_pod = ours["spec"]["template"]["spec"], theirs["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert {name: set(v) - {"name"} for name, v in volumes.items()} == {
        v["name"]: set(v) - {"name"} for v in reference_pod["volumes"]
    }
    assert volumes["etckubernetes"]["configMap"]["name"] == "secondary-scheduler-config"
    assert volumes["certs-dir"]["secret"]["secretName"] == "secondary-scheduler-serving-cert"
    for probe in ("livenessProbe", "readinessProbe"):
        assert (
            main[probe]["httpGet"]
            == reference[probe]["httpGet"]
            == {
                "scheme": "HTTPS",
                "port": 10259,
                "path": "/healthz",
            }
        )
    assert main["resources"] == reference["resources"]
    assert pod["serviceAccountName"] == "secondary-scheduler"


def test_the_scheduler_runs_as_65532_read_only_with_no_capabilities(default: list[dict[str, Any]]) -> None:
    pod = one(default, "Deployment", "secondary-scheduler")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container({"spec": {"template": {"spec": pod}}})["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    reference = container(operator_deployment())["securityContext"]
    assert reference.items() <= security.items()


# -- other values ---------------------------------------------------------------------------------


def test_replicas_above_one_turn_on_leader_election_with_the_operators_flags(helm: Path, home: Path) -> None:
    """Same release name and namespace as the operator's scheduler: the args are its args."""
    objects = render(helm, home, {"scheduler": {"replicas": 2}}, namespace=NS)
    main = container(one(objects, "Deployment", "secondary-scheduler"))
    assert main["args"] == container(operator_deployment())["args"]
    role = one(objects, "Role", "secondary-scheduler-leader-election")
    assert role["rules"][0]["resourceNames"] == ["secondary-scheduler"]
    assert role["rules"][0]["resources"] == ["leases"]


def test_custom_values_reach_the_deployment(custom: list[dict[str, Any]]) -> None:
    deployment = one(custom, "Deployment", "loadaware")
    values = CUSTOM["scheduler"]
    pod = deployment["spec"]["template"]["spec"]
    main = container(deployment)
    assert deployment["metadata"]["namespace"] == "scheduling"
    assert deployment["spec"]["replicas"] == 3
    assert main["image"] == "registry.example.com/secsched:v9.9.9"
    assert main["imagePullPolicy"] == "Always"
    assert main["resources"] == values["resources"]
    assert pod["nodeSelector"] == values["nodeSelector"]
    assert pod["tolerations"] == values["tolerations"]
    assert pod["affinity"] == values["affinity"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["imagePullSecrets"] == [{"name": "registry-pull"}]
    assert pod["serviceAccountName"] == "loadaware"
    assert "-v=4" in main["args"]
    assert "--leader-elect=true" in main["args"]
    assert "--leader-elect-resource-name=loadaware" in main["args"]
    assert "--leader-elect-resource-namespace=scheduling" in main["args"]
    assert {v["name"]: v for v in pod["volumes"]}["certs-dir"]["secret"]["secretName"] == "my-serving-cert"
    assert not by_kind(custom, "Secret"), "a Secret named by tls.secretName is the user's, not made"
    config = yaml.safe_load(one(custom, "ConfigMap", "loadaware-config")["data"]["config.yaml"])
    assert config["profiles"] == values["profiles"]
    assert config["percentageOfNodesToScore"] == 50
    load_config(
        one(custom, "ConfigMap", "loadaware-config")["data"]["config.yaml"],
        "chart ConfigMap",
        catalog=IN_TREE_CATALOG,
    )


def test_a_new_config_rolls_the_pods(helm: Path, home: Path, default: list[dict[str, Any]]) -> None:
    before = one(default, "Deployment", "secondary-scheduler")["spec"]["template"]["metadata"]["annotations"]
    changed = render(helm, home, {"scheduler": {"profiles": [{"schedulerName": "other"}]}})
    after = one(changed, "Deployment", "secondary-scheduler")["spec"]["template"]["metadata"]["annotations"]
    assert before["checksum/config"] != after["checksum/config"]


def test_plugin_rbac_is_what_the_operator_derives(custom: list[dict[str, Any]]) -> None:
    """The chart's values-driven rules grant what operator/rbac.py derives from the same config
    (plus rbac.extraRules), and the tokenSecretRef gets `get` on that Secret alone."""
    config = yaml.safe_load(one(custom, "ConfigMap", "loadaware-config")["data"]["config.yaml"])
    derived = rbac.derive(config, names.SCHEDULER_IMAGE)
    role = one(custom, "ClusterRole", "loadaware-plugins")
    assert rule_set(role["rules"]) == rule_set([*derived.rules, *CUSTOM["rbac"]["extraRules"]])
    assert ("metrics.k8s.io", "nodes", "get") in rule_set(role["rules"]), "LowRiskOverCommitment's default"
    binding = one(custom, "ClusterRoleBinding", "loadaware-plugins")
    assert binding["roleRef"]["name"] == "loadaware-plugins"
    secrets = one(custom, "Role", "loadaware-secrets")
    assert (secrets["metadata"]["namespace"], secrets["rules"]) == (
        "monitoring",
        [
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["prometheus-token"],
                "verbs": ["get"],
            }
        ],
    )
    assert derived.secrets == (("monitoring", "prometheus-token"),)
    binding = one(custom, "RoleBinding", "loadaware-secrets")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "loadaware", "namespace": "scheduling"}]


def test_the_values_rule_table_is_the_operators() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["rbac"]
    assert {name: rule_set(rules) for name, rules in values["pluginRules"].items()} == {
        name: rule_set(list(need.rules)) for name, need in rbac.PLUGIN_NEEDS.items()
    }
    assert rule_set(values["metricsServerRules"]) == rule_set(list(rbac.METRICS_SERVER.rules))
    assert rule_set(values["schedulerRules"]) == rule_set(list(rbac.SCHEDULED_EVENTS.rules))


# -- the operator ---------------------------------------------------------------------------------


def deploy_objects() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(DEPLOY.glob("0[2-5]*_*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


def test_operator_enabled_renders_deploys_operator_in_the_release_namespace(
    custom: list[dict[str, Any]],
) -> None:
    for reference in deploy_objects():
        # kube-system objects (deploy/03a) stay there; the rest move to the release namespace.
        wanted = reference["metadata"].get("namespace")
        if wanted is not None and wanted != "kube-system":
            wanted = "scheduling"
        same_name = [
            obj
            for obj in custom
            if obj["kind"] == reference["kind"] and obj["metadata"]["name"] == reference["metadata"]["name"]
        ]
        [ours] = [obj for obj in same_name if obj["metadata"].get("namespace") == wanted]
        for key in ("rules", "roleRef"):
            assert ours.get(key) == reference.get(key), f"{reference['kind']} {key}"
        if "subjects" in reference:
            assert ours["subjects"] == [{**s, "namespace": "scheduling"} for s in reference["subjects"]]
    deployment = one(custom, "Deployment", "secondary-scheduler-operator")
    reference = next(doc for doc in deploy_objects() if doc["kind"] == "Deployment")
    main, theirs = container(deployment), container(reference)
    assert main["image"] == "quay.io/secondary-scheduler/secsched-operator:v1.2.3"
    for key in ("args", "env", "ports", "livenessProbe", "volumeMounts", "resources"):
        assert main[key] == theirs[key], key
    assert theirs["securityContext"].items() <= main["securityContext"].items()
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_operator_alone(helm: Path, home: Path) -> None:
    objects = render(helm, home, {"scheduler": {"enabled": False}, "operator": {"enabled": True}}, crds=False)
    assert {obj["metadata"]["name"] for obj in objects} == {"secondary-scheduler-operator"}
    assert len(objects) == len(deploy_objects())


# -- CRDs ------------------------------------------------------------------------------------------


def deploy_crds() -> dict[str, dict[str, Any]]:
    """deploy/'s CRDs by file name: the SecondaryScheduler's and those of deploy/crds/."""
    files = [*DEPLOY.glob("*.crd.yaml"), *sorted((DEPLOY / "crds").glob("*.yaml"))]
    return {path.name: yaml.safe_load(path.read_text()) for path in files}


def _chart_crd_files() -> Iterator[Path]:
    yield from sorted((CHART / "crds").glob("*.yaml"))


def test_the_charts_crds_are_deploys_byte_for_byte() -> None:
    sources = {path.name: path for path in [*DEPLOY.glob("*.crd.yaml"), *(DEPLOY / "crds").glob("*.yaml")]}
    chart = {path.name: path for path in _chart_crd_files()}
    assert sorted(chart) == sorted(sources), (
        "copy deploy/*.crd.yaml and deploy/crds/*.yaml into the chart's crds/"
    )
    for name, path in chart.items():
        assert path.read_bytes() == sources[name].read_bytes(), f"crds/{name} differs from deploy/"


def test_crds_render_with_include_crds(default: list[dict[str, Any]]) -> None:
    rendered = by_kind(default, "CustomResourceDefinition")
    assert sorted(rendered) == sorted(crd["metadata"]["name"] for crd in deploy_crds().values())
    for crd in deploy_crds().values():
        assert rendered[crd["metadata"]["name"]] == copy.deepcopy(crd)
