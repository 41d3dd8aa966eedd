"""deploy/, bundle/ and images/ agree with each other and with the code."""

from __future__ import annotations

from typing import Any

import yaml
from tests.unit.operator.opbuilders import BUNDLE, DEPLOY, REPO, load_yaml_docs, of_kind, render

from secondary_scheduler.operator import names


def docs(name: str) -> list[dict[str, Any]]:
    return load_yaml_docs(DEPLOY / name)


def csv() -> dict[str, Any]:
    (document,) = load_yaml_docs(BUNDLE / "manifests" / "secsched-operator.clusterserviceversion.yaml")
    return document


KUBE_SYSTEM_RBAC = "03a_kube-system_role.yaml"
"""Outside the seeds' layout: the operator's rights in kube-system (the scheduler's auth reader)."""


def test_deploy_layout_follows_the_seeds() -> None:
    files = sorted(path.name for path in DEPLOY.glob("*.yaml"))
    assert [name[:3] for name in files] == [
        "00_",
        "01_",
        "02_",
        "03_",
        "03_",
        "03a",
        "04_",
        "05_",
        "06_",
        "07_",
    ]
    for name in files:
        for document in docs(name):
            expected = names.AUTH_NAMESPACE if name == KUBE_SYSTEM_RBAC else names.DEFAULT_NAMESPACE
            assert document.get("metadata", {}).get("namespace", expected) == expected


def test_bundle_crd_is_the_deploy_crd() -> None:
    assert load_yaml_docs(
        BUNDLE / "manifests" / "secondaryschedulers.operator.openshift.io.crd.yaml"
    ) == docs("00_secondary-scheduler-operator.crd.yaml")


def test_csv_rbac_and_deployment_are_deploys() -> None:
    install = csv()["spec"]["install"]["spec"]
    (cluster_role,) = docs("02_clusterrole.yaml")
    role = next(d for d in docs("03_role.yaml") if d["kind"] == "Role")
    kube_system = next(d for d in docs(KUBE_SYSTEM_RBAC) if d["kind"] == "Role")
    # OLM puts `permissions` (and any Role in manifests/) in the operator's namespace only:
    # the kube-system rules become cluster rules, still restricted to the same names.
    assert len(install["clusterPermissions"]) == 1
    assert install["clusterPermissions"][0]["rules"] == cluster_role["rules"] + kube_system["rules"]
    assert all(rule["resourceNames"] for rule in kube_system["rules"])
    assert install["permissions"][0]["rules"] == role["rules"]
    (deployment,) = docs("05_deployment.yaml")
    assert install["deployments"][0]["spec"] == deployment["spec"]
    assert install["deployments"][0]["name"] == deployment["metadata"]["name"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert install["clusterPermissions"][0]["serviceAccountName"] == account
    assert install["permissions"][0]["serviceAccountName"] == account


def test_bindings_point_at_the_operator_account() -> None:
    (account,) = docs("04_serviceaccount.yaml")
    for name in ("03_clusterrolebinding.yaml", "03_role.yaml", KUBE_SYSTEM_RBAC):
        for binding in (d for d in docs(name) if d["kind"].endswith("Binding")):
            assert binding["subjects"] == [
                {
                    "kind": "ServiceAccount",
                    "name": account["metadata"]["name"],
                    "namespace": names.DEFAULT_NAMESPACE,
                }
            ]


def test_images_named_in_one_place() -> None:
    (deployment,) = docs("05_deployment.yaml")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == names.OPERATOR_IMAGE
    (cr,) = docs("07_secondary-scheduler-operator.cr.yaml")
    assert cr["spec"]["schedulerImage"] == names.SCHEDULER_IMAGE
    related = {item["image"] for item in csv()["spec"]["relatedImages"]}
    assert related == {names.OPERATOR_IMAGE, names.SCHEDULER_IMAGE}
    assert csv()["metadata"]["annotations"]["containerImage"] == names.OPERATOR_IMAGE


def test_example_configmap_is_the_seed_config_with_its_placeholder() -> None:
    (configmap,) = docs("06_configmap.yaml")
    assert configmap["metadata"]["name"] == "secondary-scheduler-config"
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    (entry,) = config["profiles"][0]["pluginConfig"]
    assert entry["name"] == "TargetLoadPacking"
    assert entry["args"]["metricProvider"] == {"type": "Prometheus", "address": "${PROM_URL}"}


def test_bundle_metadata_matches_the_csv_package() -> None:
    annotations = yaml.safe_load((BUNDLE / "metadata" / "annotations.yaml").read_text())["annotations"]
    assert annotations["operators.operatorframework.io.bundle.mediatype.v1"] == "registry+v1"
    assert annotations["operators.operatorframework.io.bundle.manifests.v1"] == "manifests/"
    assert csv()["metadata"]["name"].startswith(
        annotations["operators.operatorframework.io.bundle.package.v1"]
    )
    owned = csv()["spec"]["customresourcedefinitions"]["owned"][0]
    assert owned["name"] == names.CRD_NAME and owned["kind"] == names.KIND


def test_scheduler_image_provides_bin_kube_scheduler() -> None:
    dockerfile = (REPO / "images" / "scheduler" / "Dockerfile").read_text()
    assert dockerfile.startswith("#") and "FROM python:3.11-slim" in dockerfile
    assert 'exec secsched scheduler "$@"' in dockerfile and "/bin/kube-scheduler" in dockerfile
    assert "\nUSER 65532" in dockerfile
    operator = (REPO / "images" / "operator" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["secsched", "operator", "run"]' in operator and "\nUSER 65532" in operator


def test_the_operator_may_keep_exactly_the_rendered_auth_reader_binding() -> None:
    """deploy/'s kube-system Role names what render.plan creates there, and binds exactly the
    Role that binding refers to: `bind`, not that Role's rules (the operator cannot read the
    ConfigMap itself)."""
    role, binding = docs(KUBE_SYSTEM_RBAC)
    assert (role["kind"], binding["kind"]) == ("Role", "RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    rendered = of_kind(render(), "RoleBinding", names.AUTH_READER_BINDING)
    assert role["rules"] == [
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["rolebindings"],
            "resourceNames": [rendered["metadata"]["name"]],
            "verbs": ["get", "create", "patch", "update", "delete"],
        },
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["roles"],
            "resourceNames": [rendered["roleRef"]["name"]],
            "verbs": ["bind"],
        },
    ]
    assert rendered["metadata"]["namespace"] == role["metadata"]["namespace"] == names.AUTH_NAMESPACE
