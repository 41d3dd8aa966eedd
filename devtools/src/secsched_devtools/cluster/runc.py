"""Run an OCI image archive with runc the way the kubelet would run a Deployment's container.

There is no kubelet here (KWOK's nodes run nothing), so a test that wants to know whether an
image works *as deployed* translates the pod template itself: command and args over the
image's entrypoint, the image's environment plus the container's, the security context
(user, read-only root, capabilities, no privilege escalation, a RuntimeDefault-like seccomp
filter), and every volume mount from a directory the caller filled as the kubelet would
(ConfigMap, Secret, the ServiceAccount token) or a tmpfs (emptyDir). The container shares
the host's network namespace, so the local apiserver on 127.0.0.1 is reachable; what
cannot be honoured (resource limits on this machine's hybrid cgroups) is reported, not hidden.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from secondary_scheduler.kube.client import JSON
from secsched_devtools.cluster.hosttools import ensure_commands

RUNC_ROOT = Path("/run/secsched-runc")
"""runc's state directory for our containers only (so cleanup never touches anyone else's)."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
)
"""containerd's default set, which `capabilities.drop`/`add` start from."""
DENIED_SYSCALLS = (
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "delete_module",
    "finit_module",
    "init_module",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "mount",
    "move_mount",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "ptrace",
    "quotactl",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "umount2",
    "unshare",
    "userfaultfd",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
)
"""What RuntimeDefault (containerd's profile) refuses an unprivileged container, as a deny list."""


class RuncError(RuntimeError):
    """The image or the pod template cannot be run as the kubelet would; the message says why."""


@dataclass(frozen=True)
class Image:
    """An image archive unpacked for runc: its root filesystem and its OCI config."""

    rootfs: Path
    config: JSON

    @property
    def process(self) -> JSON:
        return dict(self.config.get("config") or {})


@dataclass
class PodContext:
    """What the kubelet supplies besides the template: files for volumes, env it injects, facts."""

    namespace: str
    volumes: dict[str, Path] = field(default_factory=dict)
    """Volume name (configMap/secret) -> a directory holding its files."""
    service_account: Path | None = None
    """A directory with token, ca.crt and namespace, mounted at SERVICE_ACCOUNT_DIR."""
    env: dict[str, str] = field(default_factory=dict)
    """KUBERNETES_SERVICE_HOST/PORT and the like, added after the container's own env."""
    notes: list[str] = field(default_factory=list)
    """What could not be honoured exactly (reported by the caller)."""


def unpack(archive: Path, directory: Path) -> Image:
    """The archive's single image, unpacked with umoci into ``directory``/rootfs."""
    ensure_commands(["umoci"])
    layout = directory / "layout"
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="data")
    index = json.loads((layout / "index.json").read_text())
    manifests = index.get("manifests") or []
    if len(manifests) != 1:
        raise RuncError(f"{archive}: expected one image in the archive, found {len(manifests)}")
    tag = manifests[0].get("annotations", {}).get("org.opencontainers.image.ref.name")
    rootfs = directory / "rootfs"
    done = subprocess.run(
        ["umoci", "raw", "unpack", f"--image={layout}:{tag}", str(rootfs)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuncError(f"umoci raw unpack {archive} failed: {done.stderr.strip()}")
    manifest = json.loads(_blob(layout, manifests[0]["digest"]).read_text())
    config = json.loads(_blob(layout, manifest["config"]["digest"]).read_text())
    shutil.rmtree(layout)
    return Image(rootfs, config)


def _blob(layout: Path, digest: str) -> Path:
    algorithm, value = digest.split(":", 1)
    return layout / "blobs" / algorithm / value


def argv(container: JSON, image: Image) -> list[str]:
    """Kubernetes' rule: command replaces ENTRYPOINT (and drops CMD); args replace CMD."""
    entrypoint = list(image.process.get("Entrypoint") or [])
    cmd = list(image.process.get("Cmd") or [])
    if container.get("command"):
        return [*container["command"], *(container.get("args") or [])]
    args = container.get("args")
    return [*entrypoint, *(cmd if args is None else list(args))]


def environment(container: JSON, image: Image, context: PodContext) -> list[str]:
    """The image's env, then the container's (fieldRef metadata.namespace resolved), then the kubelet's."""
    values: dict[str, str] = {}
    for entry in image.process.get("Env") or []:
        name, _, value = entry.partition("=")
        values[name] = value
    for variable in container.get("env") or []:
        if "value" in variable:
            values[variable["name"]] = str(variable["value"])
            continue
        field_path = ((variable.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if field_path != "metadata.namespace":
            raise RuncError(
                f"env {variable['name']}: only value and fieldRef metadata.namespace are supported"
            )
        values[variable["name"]] = context.namespace
    values.update(context.env)
    values.setdefault("HOME", "/")
    return [f"{name}={value}" for name, value in values.items()]


def user_of(pod_spec: JSON, container: JSON, image: Image) -> tuple[int, int]:
    """runAsUser/runAsGroup, else the image's numeric USER; runAsNonRoot refuses root as the kubelet does."""
    pod_context = pod_spec.get("securityContext") or {}
    own = container.get("securityContext") or {}
    image_user = str(image.process.get("User") or "0")
    name, _, group = image_user.partition(":")
    uid = own.get("runAsUser", pod_context.get("runAsUser"))
    if uid is None:
        if not name.isdigit():
            raise RuncError(f"image USER {image_user!r} is not numeric: runAsNonRoot cannot verify it")
        uid = int(name)
    gid = own.get("runAsGroup", pod_context.get("runAsGroup"))
    if gid is None:
        gid = int(group) if group.isdigit() else 0
    if own.get("runAsNonRoot", pod_context.get("runAsNonRoot")) and uid == 0:
        raise RuncError("runAsNonRoot is set but the container would run as UID 0")
    return int(uid), int(gid)


def capabilities(container: JSON) -> list[str]:
    wanted = (container.get("securityContext") or {}).get("capabilities") or {}
    dropped = {f"CAP_{name}" if name != "ALL" else name for name in wanted.get("drop") or []}
    kept = [] if "ALL" in dropped else [cap for cap in DEFAULT_CAPABILITIES if cap not in dropped]
    return sorted({*kept, *(f"CAP_{name}" for name in wanted.get("add") or [])})


def seccomp(pod_spec: JSON, container: JSON) -> JSON | None:
    profile = ((container.get("securityContext") or {}).get("seccompProfile")) or (
        (pod_spec.get("securityContext") or {}).get("seccompProfile")
    )
    if not profile or profile.get("type") == "Unconfined":
        return None
    if profile.get("type") != "RuntimeDefault":
        raise RuncError(f"seccompProfile {profile.get('type')!r}: only RuntimeDefault is supported here")
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_AARCH64"],
        "syscalls": [{"names": list(DENIED_SYSCALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
    }


def mounts(pod_spec: JSON, container: JSON, context: PodContext) -> list[JSON]:
    """/proc, /dev and /sys as a runtime gives them, then the container's volume mounts."""
    found: list[JSON] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
        },
        {
            "destination": "/dev/shm",
            "type": "tmpfs",
            "source": "shm",
            "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
        },
        {
            "destination": "/dev/mqueue",
            "type": "mqueue",
            "source": "mqueue",
            "options": ["nosuid", "noexec", "nodev"],
        },
        {
            "destination": "/sys",
            "type": "sysfs",
            "source": "sysfs",
            "options": ["nosuid", "noexec", "nodev", "ro"],
        },
    ]
    volumes = {volume["name"]: volume for volume in pod_spec.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise RuncError(f"volumeMount {mount['name']!r} names no volume of the pod")
        read_only = bool(mount.get("readOnly"))
        if "emptyDir" in volume:
            options = ["nosuid", "nodev", "mode=1777"]
            found.append(
                {"destination": mount["mountPath"], "type": "tmpfs", "source": "tmpfs", "options": options}
            )
            continue
        if "configMap" in volume or "secret" in volume:
            read_only = True  # the kubelet always mounts these read-only
        source = context.volumes.get(mount["name"])
        if source is None:
            raise RuncError(
                f"volume {mount['name']!r} ({', '.join(volume)}) has no directory in the PodContext"
            )
        options = ["rbind", "nosuid", "nodev", "ro" if read_only else "rw"]
        found.append(
            {"destination": mount["mountPath"], "type": "bind", "source": str(source), "options": options}
        )
    if context.service_account is not None and pod_spec.get("automountServiceAccountToken", True):
        options = ["rbind", "nosuid", "nodev", "ro"]
        found.append(
            {
                "destination": SERVICE_ACCOUNT_DIR,
                "type": "bind",
                "source": str(context.service_account),
                "options": options,
            }
        )
    return found


def runtime_spec(pod_spec: JSON, container: JSON, image: Image, context: PodContext) -> JSON:
    """The config.json of an OCI bundle running ``container`` of ``pod_spec`` from ``image``."""
    own = container.get("securityContext") or {}
    uid, gid = user_of(pod_spec, container, image)
    caps = capabilities(container)
    if container.get("resources"):
        context.notes.append("resources are not enforced (no cgroup limits under runc on this machine)")
    linux: JSON = {
        "namespaces": [{"type": kind} for kind in ("pid", "ipc", "uts", "mount")],
        "maskedPaths": [
            "/proc/acpi",
            "/proc/kcore",
            "/proc/keys",
            "/proc/latency_stats",
            "/proc/timer_list",
            "/proc/timer_stats",
            "/proc/sched_debug",
            "/proc/scsi",
            "/sys/firmware",
        ],
        "readonlyPaths": [
            "/proc/asound",
            "/proc/bus",
            "/proc/fs",
            "/proc/irq",
            "/proc/sys",
            "/proc/sysrq-trigger",
        ],
    }
    filter_ = seccomp(pod_spec, container)
    if filter_ is not None:
        linux["seccomp"] = filter_
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": uid, "gid": gid, "additionalGids": [gid]},
            "args": argv(container, image),
            "env": environment(container, image, context),
            "cwd": container.get("workingDir") or image.process.get("WorkingDir") or "/",
            "capabilities": {kind: caps for kind in ("bounding", "effective", "permitted")},
            "noNewPrivileges": own.get("allowPrivilegeEscalation") is False,
        },
        "root": {"path": str(image.rootfs), "readonly": bool(own.get("readOnlyRootFilesystem"))},
        "hostname": container["name"],
        "mounts": mounts(pod_spec, container, context),
        "linux": linux,
    }


def write_files(directory: Path, files: Mapping[str, str | bytes]) -> Path:
    """A volume's files as the kubelet writes them: world-readable (0644), in a 0755 directory."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for name, content in files.items():
        path = directory / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        path.chmod(0o644)
    return directory


@dataclass
class Container:
    """A running container: its id, its bundle, the runc process and where its output goes."""

    id: str
    bundle: Path
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _runc(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runc", f"--root={RUNC_ROOT}", *args], capture_output=True, text=True, check=False)


@contextmanager
def running(bundle: Path, spec: JSON, name: str) -> Iterator[Container]:
    """Start the bundle with `runc run` (runc stays its parent); kill and delete it on the way out."""
    ensure_commands(["runc"])
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "config.json").write_text(json.dumps(spec, indent=1))
    container_id = f"{name}-{uuid.uuid4().hex[:8]}"
    log = bundle / "container.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            ["runc", f"--root={RUNC_ROOT}", "run", f"--bundle={bundle}", container_id],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield Container(container_id, bundle, process, log)
    finally:
        stop(container_id, process)


def stop(container_id: str, process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM as the kubelet sends it, SIGKILL after ``grace`` seconds, then delete the container."""
    if process.poll() is None:
        _runc(["kill", container_id, "TERM"])
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _runc(["kill", "--all", container_id, "KILL"])
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    _runc(["delete", "--force", container_id])


def leftover_containers() -> list[str]:
    """Ids of containers still known to our runc root (a test asserts there are none)."""
    if not RUNC_ROOT.exists():
        return []
    done = _runc(["list", "--quiet"])
    return [line for line in done.stdout.split() if line]


def remove_tree(path: Path) -> None:
    """Remove an unpacked image (root-owned files from umoci)."""
    if path.exists():
        shutil.rmtree(path, onerror=lambda *_: os.sync())
