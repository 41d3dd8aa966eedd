"""The image recipe without building anything: the extras split, the runc bundle, reproducible layers."""

from __future__ import annotations

import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from secondary_scheduler.operator import names
from secondary_scheduler.operator.render import ClusterFacts, plan
from secondary_scheduler.operator.spec import parse_instance
from secsched_devtools.cluster import images, ocilayout, runc

CR = {
    "apiVersion": "operator.openshift.io/v1",
    "kind": "SecondaryScheduler",
    "metadata": {"name": "cluster", "namespace": names.DEFAULT_NAMESPACE},
    "spec": {"schedulerConfig": "secondary-scheduler-config", "schedulerImage": "example/secsched:1"},
}
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: s
"""


def package_names(pins: list[str]) -> set[str]:
    return {pin.split("==")[0].lower() for pin in pins}


def test_the_scheduler_image_installs_only_what_the_scheduler_imports() -> None:
    base = package_names(images.requirements(()))
    assert not base & {"kopf", "httpx", "rich", "matplotlib", "pytest", "scipy"}
    assert {"numpy", "aiohttp", "pydantic"} <= base


def test_the_operator_image_adds_kopf_and_dev_pulls_everything() -> None:
    base = package_names(images.requirements(()))
    assert package_names(images.requirements(("operator",))) - base == {"kopf"}
    dev = package_names(images.requirements(("dev",)))
    assert {"kopf", "rich", "matplotlib", "pytest", "mypy"} <= dev
    assert "httpx" not in dev  # the dev tooling's own (devtools/pyproject.toml), in no image


def test_an_unknown_extra_is_refused() -> None:
    with pytest.raises(images.ImageBuildError, match="no extra 'nope'"):
        images.requirements(("nope",))


def test_the_base_key_changes_with_the_pins_and_the_extras() -> None:
    options = images.BuildOptions()
    scheduler, operator = images.IMAGES["scheduler"], images.IMAGES["operator"]
    pins = images.requirements(())
    assert images.base_key(scheduler, options, pins) == images.base_key(scheduler, options, pins)
    assert images.base_key(scheduler, options, pins) != images.base_key(scheduler, options, [*pins, "x==1"])
    assert images.base_key(scheduler, options, pins) != images.base_key(operator, options, pins)


def deployment() -> dict[str, object]:
    instance = parse_instance(CR, names.DEFAULT_NAMESPACE)
    configmap = {"metadata": {"name": "secondary-scheduler-config"}, "data": {names.CONFIG_KEY: CONFIG}}
    found = plan(instance, configmap, ClusterFacts(), deploy_anyway=True).deployment
    assert found is not None
    return found


def test_the_bundle_follows_the_operators_deployment(tmp_path: Path) -> None:
    pod_spec = deployment()["spec"]["template"]["spec"]  # type: ignore[index]
    container = pod_spec["containers"][0]
    image = runc.Image(
        tmp_path / "rootfs",
        {"config": {"User": "65532:65532", "Entrypoint": ["/bin/kube-scheduler"], "Env": ["PATH=/usr/bin"]}},
    )
    context = runc.PodContext(
        namespace="ns",
        volumes={"etckubernetes": tmp_path / "cm", "certs-dir": tmp_path / "certs"},
        service_account=tmp_path / "sa",
        env={"KUBERNETES_SERVICE_HOST": "127.0.0.1"},
    )
    spec = runc.runtime_spec(pod_spec, container, image, context)
    process = spec["process"]
    assert process["args"] == ["/bin/kube-scheduler", *container["args"]]
    assert process["user"]["uid"] == 65532 and process["user"]["gid"] == 65532
    assert process["noNewPrivileges"] is True
    assert all(caps == [] for caps in process["capabilities"].values())
    assert {"KUBERNETES_SERVICE_HOST=127.0.0.1", "ENABLE_OPENSHIFT_AUTH=true"} <= set(process["env"])
    assert spec["root"]["readonly"] is True
    mounts = {mount["destination"]: mount for mount in spec["mounts"]}
    assert mounts["/etc/kubernetes"]["source"] == str(tmp_path / "cm")
    assert "ro" in mounts["/etc/kubernetes"]["options"]
    assert mounts["/certs-dir"]["source"] == str(tmp_path / "certs")
    assert mounts["/tmp"]["type"] == "tmpfs"
    assert mounts[runc.SERVICE_ACCOUNT_DIR]["source"] == str(tmp_path / "sa")
    assert "mount" in spec["linux"]["seccomp"]["syscalls"][0]["names"]


def test_run_as_non_root_refuses_a_root_image(tmp_path: Path) -> None:
    pod_spec = deployment()["spec"]["template"]["spec"]  # type: ignore[index]
    image = runc.Image(tmp_path, {"config": {"User": "0"}})
    with pytest.raises(runc.RuncError, match="runAsNonRoot"):
        runc.user_of(pod_spec, pod_spec["containers"][0], image)


def test_command_and_args_override_the_image_as_kubernetes_does(tmp_path: Path) -> None:
    image = runc.Image(tmp_path, {"config": {"Entrypoint": ["secsched", "operator", "run"], "Cmd": ["--x"]}})
    assert runc.argv({"args": ["--y"]}, image) == ["secsched", "operator", "run", "--y"]
    assert runc.argv({}, image) == ["secsched", "operator", "run", "--x"]
    assert runc.argv({"command": ["/bin/sh"]}, image) == ["/bin/sh"]


def test_layers_and_archives_are_reproducible(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "opt/app").mkdir(parents=True)
    (tree / "opt/app/a.py").write_text("print(1)\n")
    (tree / "opt/app/link").symlink_to("a.py")
    digests = []
    for attempt in range(2):
        layout = tmp_path / f"layout{attempt}"
        ocilayout.init(layout)
        layer = ocilayout.write_layer(layout, tree, 1700000000, "test")
        created = "2023-11-14T22:13:20Z"
        manifest = ocilayout.write_image(layout, [layer], {"User": "1"}, created, "v1", "amd64")
        ocilayout.write_archive(layout, tmp_path / f"image{attempt}.tar", 1700000000)
        digests.append((layer.digest, manifest, ocilayout.file_digest(tmp_path / f"image{attempt}.tar")))
        (tree / "opt/app/a.py").touch()  # a new mtime must not change anything
    assert digests[0] == digests[1]
    with tarfile.open(tmp_path / "image0.tar") as archive:
        index = json.load(archive.extractfile("index.json"))  # type: ignore[arg-type]
    assert index["manifests"][0]["annotations"][ocilayout.REF_NAME] == "v1"
    assert layer.unpacked == len("print(1)\n")


def test_the_wheel_is_built_from_a_clean_copy_of_the_runtime_sources(tmp_path: Path) -> None:
    """Not from the checkout: its build/ (an earlier in-place build's leftovers) and devtools/
    never reach the wheel the images install."""
    copy = images.project_sources(tmp_path / "project")
    assert sorted(path.name for path in copy.iterdir()) == sorted(images.PROJECT_FILES)
    assert (copy / "src" / "secondary_scheduler" / "cli" / "main.py").is_file()
    assert not list(copy.rglob("__pycache__")) and not list(copy.rglob("*.egg-info"))
    assert not list(copy.rglob("secsched_devtools"))


def test_a_wheel_holding_more_than_the_runtime_sources_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "secondary_scheduler-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in (
            "secondary_scheduler/cli/main.py",
            "secondary_scheduler-0.1.0.dist-info/METADATA",
            "secondary_scheduler/cluster/localcluster.py",  # a stale build's leftover
            "secsched_devtools/demo/main.py",
        ):
            archive.writestr(name, "")
    assert images.stray_files(wheel) == [
        "secondary_scheduler/cluster/localcluster.py",
        "secsched_devtools/demo/main.py",
    ]
