"""The operator on a real control plane, installed from deploy/ as the OpenShift notes describe.

`kubectl apply -f deploy/` installs the CRD, RBAC, the example ConfigMap and the CR `cluster`;
the operator then runs in this process (kopf's operator API, on a thread with an event loop
of its own) with the token of its own ServiceAccount, so every call it makes is held to
deploy/'s least-privilege RBAC. The tests share that one installation and run in file order,
each leaving the CR Managed and healthy. KWOK reports the scheduler's pods Running, but
nothing runs in them; the end-to-end test therefore starts `secsched scheduler` itself,
exactly as the Deployment would.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from secondary_scheduler.kube import kubeconfig as kubeconfig_loader
from secondary_scheduler.kube.client import ApiClient, ApiError, plural_of, resource_path
from secondary_scheduler.kube.wait import wait_for
from secondary_scheduler.operator import controller, names
from secondary_scheduler.operator.render import ObjectRef, managed_refs
from secsched_devtools.cluster.kubeconfigs import write_token_kubeconfig
from secsched_devtools.cluster.localcluster import LocalCluster, free_port
from tests.unit.operator.opbuilders import SEED_CONFIG

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NS = names.DEFAULT_NAMESPACE
CONFIGMAP = "secondary-scheduler-config"
CR_PATH = f"/apis/operator.openshift.io/v1/namespaces/{NS}/secondaryschedulers/cluster"
DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NS}/deployments/secondary-scheduler"
CONFIGMAP_PATH = f"/api/v1/namespaces/{NS}/configmaps/{CONFIGMAP}"
CLUSTER_BINDINGS = (names.CRB_KUBE_SCHEDULER, names.CRB_VOLUME_SCHEDULER)
AUTH_READER_PATH = (
    f"/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/{names.AUTH_READER_BINDING}"
)
RESYNC = 5.0


# -- helpers -------------------------------------------------------------------------------


async def get(api: ApiClient, path: str) -> dict[str, Any] | None:
    try:
        return await api.get(path)
    except ApiError as error:
        if error.not_found:
            return None
        raise


def seed_config(prom_url: str, **args: Any) -> str:
    """Seed 000's TargetLoadPacking config for this cluster: its Prometheus, no inline token."""
    document = yaml.safe_load(
        "\n".join(
            line for line in SEED_CONFIG.read_text().splitlines() if "${PROM_TOKEN}" not in line
        ).replace("${PROM_URL}", prom_url)
    )
    document["profiles"][0]["pluginConfig"][0]["args"].update(args)
    return yaml.safe_dump(document, sort_keys=False)


async def put_config(api: ApiClient, text: str, name: str = CONFIGMAP) -> str:
    """What `oc create configmap NAME --from-file=config.yaml` makes (or replaces); its resourceVersion."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}}
    applied = await api.apply({**configmap, "data": {"config.yaml": text}}, "test")
    return str(applied["metadata"]["resourceVersion"])


async def patch_spec(api: ApiClient, spec: dict[str, Any]) -> None:
    await api.patch(CR_PATH, {"spec": spec})


async def condition(api: ApiClient, kind: str) -> dict[str, Any]:
    cr = await api.get(CR_PATH)
    return next((c for c in (cr.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


async def wait_condition(
    api: ApiClient, kind: str, status: str, reason: str | None = None, timeout: float = 60
) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = await condition(api, kind)
        if found.get("status") == status and (reason is None or found.get("reason") == reason):
            return found
        return None

    return await wait_for(probe, f"condition {kind}={status} ({reason or 'any reason'})", timeout)


async def settled(api: ApiClient, replicas: int = 1, timeout: float = 90) -> dict[str, Any]:
    """The Deployment once its rollout is complete, with `replicas` replicas, and the CR agrees."""

    async def probe() -> dict[str, Any] | None:
        deployment = await get(api, DEPLOYMENT_PATH)
        if deployment is None:
            return None
        spec, status = deployment["spec"], deployment.get("status") or {}
        done = (
            spec["replicas"] == replicas
            and status.get("observedGeneration") == deployment["metadata"]["generation"]
            and status.get("updatedReplicas") == replicas
            and status.get("availableReplicas") == replicas
            and status.get("replicas") == replicas
        )
        return deployment if done else None

    deployment = await wait_for(probe, f"the scheduler Deployment to settle at {replicas} replicas", timeout)

    async def caught_up() -> bool:
        """The operator has acted on the CR's latest spec and its ConfigMap's latest version."""
        cr = await api.get(CR_PATH)
        name = cr["spec"]["schedulerConfig"]
        configmap = await api.get(f"/api/v1/namespaces/{NS}/configmaps/{name}")
        annotations = template_annotations(await api.get(DEPLOYMENT_PATH))
        generation = cr["metadata"]["generation"]
        return (
            cr.get("status", {}).get("observedGeneration") == generation
            and annotations.get("secondaryschedulers.operator.openshift.io/cluster") == str(generation)
            and annotations.get(f"configmaps/{name}") == configmap["metadata"]["resourceVersion"]
        )

    await wait_for(caught_up, "the operator to act on the latest CR and ConfigMap", timeout)
    deployment = await wait_for(probe, f"the scheduler Deployment to settle at {replicas} replicas", timeout)
    await wait_condition(api, "Available", "True", "AsExpected")
    await wait_condition(api, "Progressing", "False", "AsExpected")
    return deployment


async def pod_names(api: ApiClient) -> set[str]:
    pods = await api.list_all(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": "app=secondary-scheduler"})
    return {pod["metadata"]["name"] for pod in pods["items"] if not pod["metadata"].get("deletionTimestamp")}


def template_annotations(deployment: dict[str, Any]) -> dict[str, str]:
    return dict(deployment["spec"]["template"]["metadata"]["annotations"])


async def posted(api: ApiClient, reasons: set[str], name: str = "cluster", timeout: float = 30) -> None:
    """Until the object has Events with these reasons (the operator posts them while it
    reconciles, and what the test waited for before may show a moment earlier)."""

    async def all_there() -> bool:
        return reasons <= await event_reasons(api, name)

    await wait_for(all_there, f"Events {sorted(reasons)} on {name}", timeout)


class _Resyncs(logging.Handler):
    """Counts the operator's "periodic resync" log records (it runs in this process)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "periodic resync":
            self.count += 1


async def periodic_resync_done() -> None:
    """Until a periodic resync that began from now has finished its reconcile: reconciles run
    one at a time, so the second resync logged from now on comes after the first one's."""
    logger = logging.getLogger(controller.__name__)
    resyncs, level = _Resyncs(), logger.level
    logger.addHandler(resyncs)
    logger.setLevel(logging.DEBUG)
    try:

        async def two() -> bool:
            return resyncs.count >= 2

        await wait_for(two, "a periodic resync of the operator, reconciled", RESYNC * 4, interval=0.2)
    finally:
        logger.removeHandler(resyncs)
        logger.setLevel(level)


async def event_reasons(api: ApiClient, name: str = "cluster") -> set[str]:
    events = await api.list_all(
        f"/api/v1/namespaces/{NS}/events", {"fieldSelector": f"involvedObject.name={name}"}
    )
    return {event["reason"] for event in events["items"]}


async def token_kubeconfig(cluster: LocalCluster, api: ApiClient, account: str, path: Path) -> Path:
    """A kubeconfig carrying a TokenRequest token of ServiceAccount NS/`account`."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    token = await api.create(f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token", request)
    return write_token_kubeconfig(path, cluster.api_url, cluster.pki.ca_cert, token["status"]["token"])


async def kubectl(cluster: LocalCluster, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        cluster.binary("kubectl"),
        *args,
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode == 0, f"kubectl {' '.join(args)} failed:\n{output.decode()}"
    return output.decode()


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def admin(cluster: LocalCluster) -> AsyncIterator[ApiClient]:
    async with cluster.api() as client:
        yield client


@pytest.fixture(scope="module")
async def installed(cluster: LocalCluster, admin: ApiClient) -> None:
    """`kubectl apply -f deploy/`, after the CRD is established (kubectl cannot map the CR before)."""
    await kubectl(cluster, "apply", "-f", str(DEPLOY / "00_secondary-scheduler-operator.crd.yaml"))

    async def established() -> bool:
        crd = await admin.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{names.CRD_NAME}")
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        )

    await wait_for(established, "the SecondaryScheduler CRD to be established", 30)
    await kubectl(cluster, "apply", "-f", str(DEPLOY))


@pytest.fixture(scope="module")
async def operator(
    cluster: LocalCluster, admin: ApiClient, installed: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[None]:
    """The operator, in this process, authenticated as its ServiceAccount from deploy/04."""
    kubeconfig = await token_kubeconfig(
        cluster, admin, "secondary-scheduler-operator", tmp_path_factory.mktemp("operator") / "kubeconfig"
    )
    stop, ready = threading.Event(), threading.Event()
    options = controller.OperatorOptions(namespace=NS, kubeconfig=str(kubeconfig), resync_seconds=RESYNC)
    failures: list[BaseException] = []

    def serve() -> None:
        # A loop of its own: on stopping, kopf cancels every task its loop started after it.
        try:
            asyncio.run(controller.run(options, stop_flag=stop, ready_flag=ready))
        except BaseException as error:
            failures.append(error)

    thread = threading.Thread(target=serve, name="secsched-operator", daemon=True)
    thread.start()
    assert await asyncio.to_thread(ready.wait, 30), f"the operator did not start: {failures}"
    yield
    try:  # a CR left behind by a failed test would keep its finalizer without the operator
        await admin.delete(CR_PATH)
        await wait_for(lambda: _gone(admin, CR_PATH), "the CR to be finalized", 30)
    except ApiError as error:
        if not error.not_found:
            raise
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 30)
        assert not thread.is_alive(), "the operator did not stop"
        assert not failures, f"the operator failed: {failures}"
        for logger in ("secondary_scheduler", "kopf", "aiohttp", "secondary_scheduler.kube.http"):
            logging.getLogger(logger).setLevel(logging.NOTSET)


async def _gone(api: ApiClient, path: str) -> bool:
    return await get(api, path) is None


# -- the CRD ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"topology": {"mode": "SingleReplica", "highlyAvailableTopology": {"maxReplicas": 2}}},
            "highlyAvailableTopology can only be set when mode is HighlyAvailable",
        ),
        (
            {"topology": {"mode": "HighlyAvailable", "highlyAvailableTopology": {"maxReplicas": 0}}},
            "maxReplicas",
        ),
        (
            {"topology": {"mode": "HighlyAvailable"}, "nodeSelector": {"a": "b"}},
            "nodeSelector and tolerations apply outside HighlyAvailable mode",
        ),
        ({"logLevel": "Loud"}, "logLevel"),
    ],
)
async def test_api_server_enforces_the_crd_rules(
    admin: ApiClient, installed: None, spec: dict[str, Any], message: str
) -> None:
    body = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "SecondaryScheduler",
        "metadata": {"name": f"rejected-{uuid.uuid4().hex[:6]}", "namespace": NS},
        "spec": spec,
    }
    with pytest.raises(ApiError) as caught:
        await admin.create(f"/apis/operator.openshift.io/v1/namespaces/{NS}/secondaryschedulers", body)
    assert caught.value.status == 422
    assert message in caught.value.message


# -- install and deploy ------------------------------------------------------------------------


async def test_example_config_placeholder_is_reported_and_nothing_deployed(
    admin: ApiClient, operator: None
) -> None:
    degraded = await wait_condition(admin, "Degraded", "True", "ConfigInvalid")
    assert "${PROM_URL}" in degraded["message"] and "config.yaml:22" in degraded["message"]
    available = await condition(admin, "Available")
    assert (available["status"], available["reason"]) == ("False", "NotDeployed")
    assert await get(admin, DEPLOYMENT_PATH) is None
    assert await get(admin, f"/api/v1/namespaces/{NS}/serviceaccounts/secondary-scheduler") is not None
    await posted(admin, {"ConfigInvalid"})


async def test_seed_config_deploys_the_scheduler_as_upstream_does(
    cluster: LocalCluster, admin: ApiClient, operator: None
) -> None:
    version = await put_config(admin, seed_config(cluster.prometheus_url))
    deployment = await settled(admin)
    cr = await admin.get(CR_PATH)
    owner = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "SecondaryScheduler",
        "name": "cluster",
        "uid": cr["metadata"]["uid"],
    }
    assert deployment["metadata"]["ownerReferences"] == [owner]
    pod = deployment["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert main["command"] == ["/bin/kube-scheduler"]
    assert main["args"] == [
        "--config=/etc/kubernetes/config.yaml",
        "--tls-cert-file=/certs-dir/tls.crt",
        "--tls-private-key-file=/certs-dir/tls.key",
        "--leader-elect=true",
        "--leader-elect-lease-duration=137s",
        "--leader-elect-renew-deadline=107s",
        "--leader-elect-resource-lock=leases",
        "--leader-elect-resource-name=secondary-scheduler",
        f"--leader-elect-resource-namespace={NS}",
        "--leader-elect-retry-period=26s",
        "-v=2",
    ]
    assert main["image"] == names.SCHEDULER_IMAGE
    assert main["resources"] == {"requests": {"cpu": "15m", "memory": "50Mi"}}
    assert pod["serviceAccountName"] == "secondary-scheduler"
    assert template_annotations(deployment)[f"configmaps/{CONFIGMAP}"] == version
    assert template_annotations(deployment)["secondaryschedulers.operator.openshift.io/cluster"] == str(
        cr["metadata"]["generation"]
    )
    for name in CLUSTER_BINDINGS:
        binding = await admin.get(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "secondary-scheduler", "namespace": NS}
        ]
    # kube-system's auth reader, granted with deploy/03a's rights (by name, `bind` on the Role).
    reader = await admin.get(AUTH_READER_PATH)
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    assert reader["subjects"] == [{"kind": "ServiceAccount", "name": "secondary-scheduler", "namespace": NS}]
    assert "ownerReferences" not in reader["metadata"]
    lease_role = await admin.get(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles/secondary-scheduler-operand"
    )
    assert lease_role["rules"][0]["resources"] == ["leases"]
    assert lease_role["metadata"]["ownerReferences"] == [owner]
    for path in (
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings/secondary-scheduler-operand",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles/prometheus-k8s",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings/prometheus-k8s",
    ):
        assert (await admin.get(path))["metadata"]["ownerReferences"] == [owner]
    service = await admin.get(f"/api/v1/namespaces/{NS}/services/metrics")
    assert service["spec"]["ports"][0]["port"] == 10259
    assert service["spec"]["selector"] == {"app": "secondary-scheduler"}
    # No service-ca here: the operator made the serving certificate the pod mounts.
    secret = await admin.get(f"/api/v1/namespaces/{NS}/secrets/{names.SERVING_CERT_SECRET}")
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["annotations"][names.SELF_SIGNED_ANNOTATION] == "true"
    # No ServiceMonitor CRD here, so no ServiceMonitor; and the seed's config needs no extra RBAC
    # but what our image always needs: listing Scheduled Events when it starts to lead.
    role = await admin.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{names.PLUGINS_CLUSTER_ROLE}")
    assert role["rules"] == [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list"]}]
    status = cr["status"]
    assert status["observedGeneration"] == cr["metadata"]["generation"]
    assert (await admin.get(CR_PATH))["status"]["readyReplicas"] == 1
    await wait_condition(admin, "Degraded", "False", "AsExpected")
    await posted(admin, {"DeploymentCreated", "ServingCertCreated"})


async def test_the_deployments_scheduler_schedules_a_pod_with_only_the_operators_rbac(
    cluster: LocalCluster, admin: ApiClient, operator: None, namespace: str, tmp_path: Path
) -> None:
    """Run `secsched scheduler` as the Deployment's pod would: its exact args (only file paths
    rewritten, plus --kubeconfig and a free --secure-port so a scheduler elsewhere on this machine
    cannot collide on 10259), as ServiceAccount secondary-scheduler; the delegated authentication
    and authorization kubeconfigs, in-cluster in the pod, are that account's too."""
    deployment = await settled(admin)
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    configmap = await admin.get(CONFIGMAP_PATH)
    (tmp_path / "config.yaml").write_text(configmap["data"]["config.yaml"])
    secret = await admin.get(f"/api/v1/namespaces/{NS}/secrets/{names.SERVING_CERT_SECRET}")
    for key in ("tls.crt", "tls.key"):
        (tmp_path / key).write_bytes(base64.b64decode(secret["data"][key]))
    kubeconfig = await token_kubeconfig(cluster, admin, "secondary-scheduler", tmp_path / "kubeconfig")
    paths = {"/etc/kubernetes/": f"{tmp_path}/", "/certs-dir/": f"{tmp_path}/"}
    args = []
    for arg in main["args"]:
        for mounted, local in paths.items():
            arg = arg.replace(mounted, local)
        args.append(arg)
    secsched = Path(sys.executable).with_name("secsched")
    log_file = tmp_path / "scheduler.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [
                str(secsched),
                "scheduler",
                *args,
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--secure-port={free_port()}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "scheduled-by-secondary"},
            "spec": {
                "schedulerName": "secondary-scheduler",
                "containers": [
                    {
                        "name": "app",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
            },
        }
        await admin.create(f"/api/v1/namespaces/{namespace}/pods", pod)

        async def bound() -> str | None:
            assert process.poll() is None, f"the scheduler exited:\n{log_file.read_text()[-3000:]}"
            current = await admin.get(f"/api/v1/namespaces/{namespace}/pods/scheduled-by-secondary")
            return current["spec"].get("nodeName")

        try:
            node = await wait_for(bound, "the secondary scheduler to bind the pod", timeout=120, interval=0.5)
        except TimeoutError as error:
            raise AssertionError(f"{error}\nscheduler log:\n{log_file.read_text()[-3000:]}") from error
        assert node.startswith("kwok-node-")
        lease = await admin.get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/secondary-scheduler")
        assert lease["spec"].get("holderIdentity"), "the scheduler took part in leader election"
        # The rendered auth reader let it read the client CA: no start-up warning about it.
        log_text = log_file.read_text()
        assert "extension-apiserver-authentication" not in log_text, log_text[-3000:]
        async with ApiClient(kubeconfig_loader.from_kubeconfig(str(kubeconfig))) as scheduler_api:
            configmap = await scheduler_api.get(
                "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
            )
        assert "client-ca-file" in configmap["data"]
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- changes -------------------------------------------------------------------------------------


async def test_config_change_rolls_the_pods_and_its_rbac_follows(
    cluster: LocalCluster, admin: ApiClient, operator: None
) -> None:
    before = await settled(admin)
    old_pods = await pod_names(admin)
    # The metrics-server provider reads metrics.k8s.io: the operator grants exactly that.
    text = seed_config(cluster.prometheus_url, metricProvider={"type": "KubernetesMetricsServer"})
    version = await put_config(admin, text)

    async def rolled() -> dict[str, Any] | None:
        deployment = await get(admin, DEPLOYMENT_PATH)
        if deployment and template_annotations(deployment)[f"configmaps/{CONFIGMAP}"] == version:
            return deployment
        return None

    await wait_for(rolled, "the new ConfigMap version in the pod template", 30)
    await settled(admin)

    async def replaced() -> bool:
        current = await pod_names(admin)
        return bool(current) and not current & old_pods

    await wait_for(replaced, "the scheduler pods to be replaced", 60)
    assert before["metadata"]["generation"] < (await admin.get(DEPLOYMENT_PATH))["metadata"]["generation"]
    role = await admin.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{names.PLUGINS_CLUSTER_ROLE}")
    assert role["rules"] == [
        {"apiGroups": ["metrics.k8s.io"], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["list"]},
    ]
    binding = await admin.get(
        f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{names.PLUGINS_CLUSTER_ROLE}"
    )
    assert binding["subjects"][0]["name"] == "secondary-scheduler"
    await posted(admin, {"RollingOut"})


async def test_bad_config_degrades_and_leaves_the_running_deployment(
    cluster: LocalCluster, admin: ApiClient, operator: None
) -> None:
    good = (await admin.get(CONFIGMAP_PATH))["data"]["config.yaml"]
    before = await settled(admin)
    await put_config(admin, good.replace("targetUtilization: 70", "targetUtilization: seventy"))
    degraded = await wait_condition(admin, "Degraded", "True", "ConfigInvalid")
    assert "targetUtilization" in degraded["message"]
    await periodic_resync_done()  # a periodic resync changes nothing either
    after = await admin.get(DEPLOYMENT_PATH)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert template_annotations(after) == template_annotations(before)
    assert (await condition(admin, "Available"))["status"] == "True"
    version = await put_config(admin, good)
    await wait_condition(admin, "Degraded", "False", "AsExpected")

    async def rolled() -> bool:
        return template_annotations(await admin.get(DEPLOYMENT_PATH))[f"configmaps/{CONFIGMAP}"] == version

    await wait_for(rolled, "the fixed config to roll out", 30)
    await settled(admin)


async def test_missing_configmap_is_reported_and_its_creation_deploys(
    admin: ApiClient, operator: None
) -> None:
    good = (await admin.get(CONFIGMAP_PATH))["data"]["config.yaml"]
    name = f"later-{uuid.uuid4().hex[:6]}"
    await patch_spec(admin, {"schedulerConfig": name})
    missing = await wait_condition(admin, "Degraded", "True", "ConfigMapMissing")
    assert f"kubectl create -n {NS} configmap {name} --from-file=config.yaml" in missing["message"]
    volumes = (await admin.get(DEPLOYMENT_PATH))["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["configMap"]["name"] == CONFIGMAP  # untouched while the new one is missing
    await put_config(admin, good, name)  # its creation alone triggers the rollout
    await wait_condition(admin, "Degraded", "False", "AsExpected", timeout=30)

    async def switched() -> bool:
        deployment = await admin.get(DEPLOYMENT_PATH)
        return deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == name

    await wait_for(switched, "the Deployment to mount the new ConfigMap", 30)
    await patch_spec(admin, {"schedulerConfig": CONFIGMAP})
    await admin.delete(f"/api/v1/namespaces/{NS}/configmaps/{name}")
    await settled(admin)


async def test_manual_edits_are_reverted(admin: ApiClient, operator: None) -> None:
    await settled(admin)
    await admin.patch(DEPLOYMENT_PATH, {"spec": {"replicas": 4}})
    await admin.delete(f"/api/v1/namespaces/{NS}/services/metrics")
    await admin.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{names.CRB_KUBE_SCHEDULER}")
    await admin.delete(AUTH_READER_PATH)
    await settled(admin, replicas=1, timeout=60)
    await wait_for(
        lambda: _exists(admin, f"/api/v1/namespaces/{NS}/services/metrics"), "Service metrics back", 30
    )
    crb = f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{names.CRB_KUBE_SCHEDULER}"
    await wait_for(lambda: _exists(admin, crb), "the ClusterRoleBinding back (periodic resync)", RESYNC * 4)
    await wait_for(
        lambda: _exists(admin, AUTH_READER_PATH),
        "kube-system's RoleBinding back (periodic resync)",
        RESYNC * 4,
    )
    await posted(admin, {"DriftReverted"})


async def _exists(api: ApiClient, path: str) -> bool:
    return await get(api, path) is not None


async def test_operator_log_level_changes_verbosity_while_running(admin: ApiClient, operator: None) -> None:
    ours = logging.getLogger("secondary_scheduler")
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect(level=logging.DEBUG)
    ours.addHandler(handler)
    try:
        assert ours.level == logging.INFO
        await patch_spec(admin, {"operatorLogLevel": "Debug"})
        await wait_for(lambda: _level(ours, logging.DEBUG), "the operator's loggers at DEBUG", 30)
        assert logging.getLogger("kopf").level == logging.INFO
        await patch_spec(admin, {"operatorLogLevel": "TraceAll"})
        await wait_for(lambda: _level(logging.getLogger("aiohttp"), logging.DEBUG), "HTTP logging on", 30)
        assert any(
            r.levelno == logging.DEBUG and r.name.startswith("secondary_scheduler.operator") for r in records
        )
        await patch_spec(admin, {"operatorLogLevel": "Normal"})
        await wait_for(lambda: _level(ours, logging.INFO), "the operator's loggers back at INFO", 30)
        assert logging.getLogger("kopf").level == logging.WARNING
        assert logging.getLogger("aiohttp").level == logging.WARNING
    finally:
        ours.removeHandler(handler)
    await settled(admin)


async def _level(logger: logging.Logger, level: int) -> bool:
    return logger.level == level


async def test_highly_available_toggle_1_3_1(admin: ApiClient, operator: None) -> None:
    await settled(admin, replicas=1)
    await patch_spec(admin, {"topology": {"mode": "HighlyAvailable"}})
    await settled(admin, replicas=3)  # 5 nodes, maxReplicas defaults to 3
    # A selector counts only its nodes (and lands the pods there).
    zone_a = await admin.list_all("/api/v1/nodes", {"labelSelector": "topology.kubernetes.io/zone=zone-a"})
    selector = {"topology.kubernetes.io/zone": "zone-a"}
    await patch_spec(
        admin,
        {
            "topology": {
                "mode": "HighlyAvailable",
                "highlyAvailableTopology": {"nodeSelector": selector, "maxReplicas": 5},
            }
        },
    )
    deployment = await settled(admin, replicas=len(zone_a["items"]))
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == selector
    await patch_spec(admin, {"topology": {"mode": "SingleReplica", "highlyAvailableTopology": None}})
    deployment = await settled(admin, replicas=1)
    assert "nodeSelector" not in deployment["spec"]["template"]["spec"]


async def test_unmanaged_leaves_everything_alone(
    cluster: LocalCluster, admin: ApiClient, operator: None
) -> None:
    before = await settled(admin)
    await patch_spec(admin, {"managementState": "Unmanaged"})
    await wait_condition(admin, "Progressing", "False", "Unmanaged")
    await admin.patch(DEPLOYMENT_PATH, {"spec": {"replicas": 2}})
    good = (await admin.get(CONFIGMAP_PATH))["data"]["config.yaml"]
    version = await put_config(admin, good.replace("targetUtilization: 70", "targetUtilization: 65"))
    await periodic_resync_done()
    after = await admin.get(DEPLOYMENT_PATH)
    assert after["spec"]["replicas"] == 2
    assert template_annotations(after) == template_annotations(before)
    await patch_spec(admin, {"managementState": "Managed"})
    deployment = await settled(admin, replicas=1)
    assert template_annotations(deployment)[f"configmaps/{CONFIGMAP}"] == version


async def test_removed_deletes_the_scheduler_and_keeps_the_cr(admin: ApiClient, operator: None) -> None:
    await settled(admin)
    await patch_spec(admin, {"managementState": "Removed"})
    removed = await wait_condition(admin, "Available", "False", "Removed")
    assert "set it to Managed" in removed["message"]

    async def all_deleted() -> bool:
        return not await _left(admin)

    await wait_for(all_deleted, "every managed object to be deleted", 30)
    assert await get(admin, AUTH_READER_PATH) is None  # kube-system's binding too (in managed_refs)
    assert await get(admin, CR_PATH) is not None
    await patch_spec(admin, {"managementState": "Managed"})
    await settled(admin)


def _path(ref: ObjectRef) -> str:
    return resource_path(ref.api_version, plural_of(ref.kind), ref.namespace, ref.name)


async def _left(api: ApiClient) -> list[str]:
    """The managed objects that still exist."""
    return [f"{ref.kind} {ref.name}" for ref in managed_refs(NS) if not await _gone(api, _path(ref))]


async def test_other_secondary_schedulers_are_ignored_with_a_warning(
    admin: ApiClient, operator: None
) -> None:
    body = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "SecondaryScheduler",
        "metadata": {"name": "second", "namespace": NS},
        "spec": {"schedulerConfig": CONFIGMAP},
    }
    await admin.create(f"/apis/operator.openshift.io/v1/namespaces/{NS}/secondaryschedulers", body)
    await wait_for(lambda: _has_event(admin, "second", "Ignored"), "an Ignored event on the second CR", 30)
    await admin.delete(f"/apis/operator.openshift.io/v1/namespaces/{NS}/secondaryschedulers/second")
    await wait_for(
        lambda: _gone(admin, f"/apis/operator.openshift.io/v1/namespaces/{NS}/secondaryschedulers/second"),
        "the second CR to go (no finalizer on it)",
        15,
    )


async def _has_event(api: ApiClient, name: str, reason: str) -> bool:
    return reason in await event_reasons(api, name)


SERVICE_MONITOR_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "names": {
            "kind": "ServiceMonitor",
            "listKind": "ServiceMonitorList",
            "plural": "servicemonitors",
            "singular": "servicemonitor",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


async def test_service_monitor_only_where_its_crd_exists(admin: ApiClient, operator: None) -> None:
    monitor = f"/apis/monitoring.coreos.com/v1/namespaces/{NS}/servicemonitors/secondary-scheduler"
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/servicemonitors.monitoring.coreos.com"
    await admin.apply(SERVICE_MONITOR_CRD, "test")
    try:
        created = await wait_for(
            lambda: get(admin, monitor), "the ServiceMonitor (periodic resync)", RESYNC * 4
        )
        assert created["spec"]["selector"] == {"matchLabels": {"app": "secondary-scheduler"}}
        assert created["spec"]["endpoints"][0]["tlsConfig"]["serverName"] == f"metrics.{NS}.svc"
        assert created["metadata"]["ownerReferences"][0]["kind"] == "SecondaryScheduler"
    finally:
        await admin.delete(crd)
        await wait_for(lambda: _gone(admin, crd), "the ServiceMonitor CRD to go", 30)


async def test_deleting_the_cr_leaves_nothing_behind(admin: ApiClient, operator: None) -> None:
    await settled(admin)
    cr = await admin.get(CR_PATH)
    assert names.FINALIZER in cr["metadata"]["finalizers"]
    assert await _exists(
        admin, f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{names.PLUGINS_CLUSTER_ROLE}"
    )
    assert await _exists(admin, AUTH_READER_PATH)
    await admin.delete(CR_PATH)
    await wait_for(lambda: _gone(admin, CR_PATH), "the CR to be finalized and deleted", 30)
    assert await _left(admin) == []  # cluster-scoped bindings included: the finalizer deleted them
    assert await _gone(admin, AUTH_READER_PATH)  # and kube-system's, which no ownerReference covers

    async def no_pods_or_replicasets() -> bool:
        selector = {"labelSelector": "app=secondary-scheduler"}
        replicasets = await admin.list_all(f"/apis/apps/v1/namespaces/{NS}/replicasets", selector)
        return not replicasets["items"] and not await pod_names(admin)

    await wait_for(no_pods_or_replicasets, "the scheduler's ReplicaSets and pods to be collected", 60)
