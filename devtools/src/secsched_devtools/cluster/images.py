"""`make images`: OCI archives of the scheduler and the operator, built without a container engine.

No engine or registry is reachable where this runs, so the image is assembled from parts:
a Debian root filesystem from mmdebstrap, a virtualenv with the pinned dependency wheels
(downloaded by pip on the host, installed offline inside the tree), then one thin layer with
the project's own wheel, written as an OCI layout by cluster/ocilayout.py. The slow base
(rootfs + dependency venv, and its layer) is cached outside the repository, keyed by
everything that goes into it, so a rebuild after a source change only adds the project
layer. Paths, user and entry points are those of
images/*/Dockerfile, so both ways of building give the same container.

    python -m secsched_devtools.cluster.images [--image scheduler|operator] [--out DIR]
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from secondary_scheduler import __version__
from secsched_devtools.cluster import ocilayout, versions
from secsched_devtools.cluster.hosttools import ToolError, ensure_commands
from secsched_devtools.cluster.ocilayout import Layer
from secsched_devtools.cluster.progress import Step, console, format_elapsed, step
from secsched_devtools.repo import REPO

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org"
SNAPSHOT_MIRROR = "http://snapshot.debian.org/archive"
DEBIAN_PACKAGES = ("python3", "python3-venv", "ca-certificates", "libstdc++6")
"""python3-venv brings Debian's pip wheel, which installs into the venv without landing in it."""
PYTHON_VERSION = "3.11"
"""bookworm's python3; the wheels are chosen for it."""
GLIBC_MINOR = 36
"""bookworm's glibc 2.36: the newest manylinux wheels it can load."""
VENV = "/opt/secsched"
UID = GID = 65532
"""Non-root and numeric, as OpenShift's restricted SCC and runAsNonRoot need."""
BASE_EPOCH = 1767225600
"""2026-01-01: the timestamp of every file of the base (SOURCE_DATE_EPOCH overrides it)."""
RECIPE = 2
"""Bump when the base's recipe below changes, so cached bases are rebuilt."""
PRUNED_TESTS = ("numpy", "scipy")
"""Packages whose bundled test suites (tens of MB) are removed: nothing imports them at run time."""
EXCLUDED_DOCS = ("/usr/share/man/*", "/usr/share/doc/*", "/usr/share/locale/*", "/usr/share/info/*")
CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/root"}
"""The host's environment (PIP_* settings among it) must not leak into the tree's commands."""
IMAGE_ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
    "LANG=C.UTF-8",
)


class ImageBuildError(RuntimeError):
    """A step of the build failed; the message names the tool, the cause and the fix."""


@dataclass(frozen=True)
class ImageSpec:
    """One image: what it installs and how it starts (as its Dockerfile says)."""

    name: str
    extras: tuple[str, ...]
    entrypoint: tuple[str, ...]
    wrapper: bool = False
    """Whether /bin/kube-scheduler runs `secsched scheduler` (the path the operator's Deployment runs)."""

    @property
    def archive_name(self) -> str:
        return f"{self.name}.oci.tar"


IMAGES = {
    "scheduler": ImageSpec("secsched-scheduler", (), ("/bin/kube-scheduler",), wrapper=True),
    "operator": ImageSpec("secsched-operator", ("operator",), ("secsched", "operator", "run")),
}
WRAPPER = '#!/bin/sh\nexec secsched scheduler "$@"\n'


@dataclass(frozen=True)
class BuildOptions:
    """What a build may vary; every field goes into the base's cache key or the project layer."""

    out: Path = REPO / "out" / "images"
    cache: Path = field(default_factory=versions.cache_root)
    debian_snapshot: str | None = None
    """A snapshot.debian.org time stamp (20260101T000000Z) pinning the packages; None: today's mirror."""
    rebuild_base: bool = False

    @property
    def base_epoch(self) -> int:
        return int(os.environ.get("SOURCE_DATE_EPOCH") or BASE_EPOCH)


@dataclass(frozen=True)
class BuiltImage:
    spec: ImageSpec
    archive: Path
    manifest_digest: str
    archive_digest: str
    compressed_bytes: int
    unpacked_bytes: int
    seconds: float
    base_cached: bool
    up_to_date: bool = False


# -- inputs --------------------------------------------------------------------------------


def requirements(extras: Sequence[str], pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The pinned requirements of the base install plus ``extras`` (extras naming extras followed)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    own = re.compile(rf"^{re.escape(project['name'])}\[(?P<extras>[^\]]+)\]$")
    found: list[str] = list(project.get("dependencies", []))
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        if extra not in optional:
            raise ImageBuildError(
                f"pyproject.toml: no extra {extra!r}: add it to [project.optional-dependencies]"
            )
        seen.add(extra)
        for requirement in optional[extra]:
            nested = own.match(requirement.replace(" ", ""))
            if nested:
                todo += nested["extras"].split(",")
            else:
                found.append(requirement)
    unpinned = [requirement for requirement in found if "==" not in requirement]
    if unpinned:
        raise ImageBuildError(f"pyproject.toml: unpinned requirements {unpinned}: pin them (name==version)")
    return sorted(set(found), key=str.lower)


def debian_architecture() -> str:
    machine = platform.machine()
    known = {"x86_64": "amd64", "aarch64": "arm64"}
    if machine not in known:
        raise ImageBuildError(f"{machine}: no image recipe for this architecture (only x86_64 and aarch64)")
    return known[machine]


def apt_sources(snapshot: str | None) -> list[str]:
    """The suite with its updates and security fixes, from today's mirror or a fixed snapshot."""
    if snapshot is None:
        debian, security = f"{DEBIAN_MIRROR}/debian", f"{DEBIAN_MIRROR}/debian-security"
    else:
        if not re.fullmatch(r"\d{8}T\d{6}Z", snapshot):
            raise ImageBuildError(f"--debian-snapshot {snapshot!r}: expected a time like 20260101T000000Z")
        debian, security = (
            f"{SNAPSHOT_MIRROR}/debian/{snapshot}",
            f"{SNAPSHOT_MIRROR}/debian-security/{snapshot}",
        )
    return [
        f"deb {debian} {DEBIAN_SUITE} main",
        f"deb {debian} {DEBIAN_SUITE}-updates main",
        f"deb {security} {DEBIAN_SUITE}-security main",
    ]


def base_key(spec: ImageSpec, options: BuildOptions, pins: list[str]) -> str:
    """What the cached base is made of: suite, sources, packages, pins, extras, recipe, epoch, arch."""
    parts = {
        "recipe": RECIPE,
        "suite": DEBIAN_SUITE,
        "sources": apt_sources(options.debian_snapshot),
        "packages": DEBIAN_PACKAGES,
        "python": PYTHON_VERSION,
        "pins": pins,
        "extras": spec.extras,
        "wrapper": WRAPPER if spec.wrapper else "",
        "env": IMAGE_ENV,
        "epoch": options.base_epoch,
        "arch": debian_architecture(),
    }
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
    extras = "-".join(spec.extras) or "base"
    return f"{DEBIAN_SUITE}-{extras}-{digest}"


def source_epoch() -> int:
    """SOURCE_DATE_EPOCH, else the last commit's time: the project layer's timestamps."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    done = subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not done.stdout.strip():
        console.print(f"note: no git history at {REPO}: the project layer is dated {BASE_EPOCH} (2026-01-01)")
        return BASE_EPOCH
    return int(done.stdout.strip())


# -- running tools -------------------------------------------------------------------------


def run(args: Sequence[str], current: Step, what: str, fix: str, env: dict[str, str] | None = None) -> str:
    """Run a tool, showing its latest output line as progress; its output, or an error naming it."""
    process = subprocess.Popen(
        list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert process.stdout is not None
    lines: list[str] = []
    tail: deque[str] = deque(maxlen=25)
    for line in process.stdout:
        lines.append(line)
        tail.append(line.rstrip())
        if line.strip():
            current.update(f"{what}: {line.strip()[:100]}")
    if process.wait() != 0:
        raise ImageBuildError(
            f"{Path(args[0]).name} failed ({what}, exit {process.returncode}): {fix}\n" + "\n".join(tail)
        )
    return "".join(lines)


def in_tree(rootfs: Path, args: Sequence[str], current: Step, what: str, fix: str) -> str:
    """Run a command of the image's own tree (its python, its pip) under chroot, with a clean environment."""
    return run(["chroot", str(rootfs), *args], current, what, fix, env=dict(CHROOT_ENV))


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """One build of a cache entry at a time (make images and a test may start together)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def clamp_mtimes(tree: Path, epoch: int) -> None:
    """Every file dated ``epoch``: layer tarballs (and their digests) then depend on content only."""
    os.utime(tree, (epoch, epoch), follow_symlinks=False)
    for directory, dirs, files in os.walk(tree):
        for name in dirs + files:
            os.utime(os.path.join(directory, name), (epoch, epoch), follow_symlinks=False)


def tree_bytes(tree: Path) -> int:
    total = 0
    for directory, _, files in os.walk(tree):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


# -- the cached base -----------------------------------------------------------------------


def pip_download(pins: list[str], wheels: Path, current: Step) -> None:
    """The pinned wheels (and their dependencies) for the tree's Python and glibc, from PyPI on the host."""
    machine = platform.machine()
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 4, -1)]
    platforms += [f"manylinux2014_{machine}", f"manylinux2010_{machine}", f"manylinux1_{machine}"]
    args = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--progress-bar=off"]
    args += ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp"]
    args += [f"--platform={name}" for name in platforms]
    args += ["--dest", str(wheels), *pins]
    run(
        args,
        current,
        "pip download",
        "check the network to PyPI (or PIP_INDEX_URL), and that every pin has a wheel for "
        f"CPython {PYTHON_VERSION} on manylinux (glibc 2.{GLIBC_MINOR})",
    )


def mmdebstrap(rootfs: Path, options: BuildOptions, current: Step) -> None:
    args = ["mmdebstrap", "--mode=root", "--variant=essential", f"--architectures={debian_architecture()}"]
    args += [f"--include={','.join(DEBIAN_PACKAGES)}"]
    # Merged /usr from mmdebstrap's own hook (usr-is-merged), not the usrmerge package, which
    # would pull in perl (50 MB) for a one-time conversion.
    hooks = Path("/usr/share/mmdebstrap/hooks/merged-usr")
    if not hooks.is_dir():
        raise ImageBuildError(f"{hooks} is missing: mmdebstrap 1.0 or newer is needed (apt-get install it)")
    args += [f"--hook-dir={hooks}"]
    args += [f"--dpkgopt=path-exclude={pattern}" for pattern in EXCLUDED_DOCS]
    args += ["--dpkgopt=path-include=/usr/share/doc/*/copyright"]
    if options.debian_snapshot:
        args += ['--aptopt=Acquire::Check-Valid-Until "false"']
    args += [DEBIAN_SUITE, str(rootfs), *apt_sources(options.debian_snapshot)]
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(options.base_epoch)}
    where = "snapshot.debian.org" if options.debian_snapshot else DEBIAN_MIRROR
    run(args, current, "mmdebstrap", f"check that {where} is reachable (HTTP) and the suite exists", env=env)


def install_dependencies(rootfs: Path, spec: ImageSpec, pins: list[str], wheels: Path, current: Step) -> None:
    """The venv at VENV with the pinned wheels, installed offline by Debian's pip wheel (which stays out)."""
    inside = Path("/tmp/wheels")
    shutil.copytree(wheels, rootfs / inside.relative_to("/"))
    (rootfs / "tmp/requirements.txt").write_text("\n".join(pins) + "\n")
    in_tree(rootfs, ["python3", "-m", "venv", "--without-pip", VENV], current, "python3 -m venv", "see above")
    pip_wheel = sorted((rootfs / "usr/share/python-wheels").glob("pip-*.whl"))
    if not pip_wheel:
        raise ImageBuildError(
            "the tree has no /usr/share/python-wheels/pip-*.whl: is python3-venv installed?"
        )
    in_tree(
        rootfs,
        [
            f"{VENV}/bin/python",
            f"/usr/share/python-wheels/{pip_wheel[-1].name}/pip",
            "install",
            "--no-index",
            "--no-compile",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
            f"--find-links={inside}",
            "-r",
            "/tmp/requirements.txt",
        ],
        current,
        "pip install (offline)",
        "a wheel is missing or incompatible: check the pins in pyproject.toml",
    )
    shutil.rmtree(rootfs / inside.relative_to("/"))
    (rootfs / "tmp/requirements.txt").unlink()
    site = rootfs / VENV.lstrip("/") / f"lib/python{PYTHON_VERSION}/site-packages"
    for package in PRUNED_TESTS:
        for tests in sorted((site / package).rglob("tests")) if (site / package).exists() else []:
            if tests.is_dir() and (tests / "__init__.py").exists():
                shutil.rmtree(tests)


def finish_tree(rootfs: Path, spec: ImageSpec, epoch: int, current: Step) -> None:
    """The Dockerfile's paths, no build leftovers, fixed dates, bytecode that never needs rewriting."""
    for name in ("dev", "proc", "sys", "tmp", "run"):
        directory = rootfs / name
        if directory.is_dir():
            for child in directory.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    for leftover in ("var/log/dpkg.log", "var/log/apt", "var/cache/ldconfig/aux-cache", "var/cache/apt"):
        path = rootfs / leftover
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    # A name for UID 65532 (as distroless's `nonroot`): getpass.getuser() (kopf's identity) and
    # anything else calling getpwuid() fail for a UID that /etc/passwd does not know.
    with open(rootfs / "etc/passwd", "a") as passwd:
        passwd.write(f"nonroot:x:{UID}:{GID}:nonroot:/nonexistent:/usr/sbin/nologin\n")
    with open(rootfs / "etc/group", "a") as group:
        group.write(f"nonroot:x:{GID}:\n")
    local_bin = rootfs / "usr/local/bin"
    local_bin.mkdir(parents=True, exist_ok=True)
    (local_bin / "secsched").unlink(missing_ok=True)
    (local_bin / "secsched").symlink_to(f"{VENV}/bin/secsched")
    if spec.wrapper:
        # /bin is /usr/bin in bookworm (merged /usr); the Deployment runs /bin/kube-scheduler.
        wrapper = rootfs / "usr/bin/kube-scheduler"
        wrapper.write_text(WRAPPER)
        wrapper.chmod(0o755)
    clamp_mtimes(rootfs, epoch)
    # Timestamps changed, so Debian's bytecode would be stale; unchecked-hash pycs are never
    # revalidated (the root filesystem is read-only) and do not depend on dates.
    targets = ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages", VENV]
    in_tree(
        rootfs,
        ["python3", "-m", "compileall", "-q", "-f", "--invalidation-mode=unchecked-hash", *targets],
        current,
        "compileall",
        "a module of the tree does not compile: see above",
    )
    clamp_mtimes(rootfs, epoch)


def image_config(spec: ImageSpec) -> dict[str, Any]:
    """The Dockerfile's USER, ENV, WORKDIR and ENTRYPOINT, plus labels."""
    return {
        "User": f"{UID}:{GID}",
        "Env": list(IMAGE_ENV),
        "Entrypoint": list(spec.entrypoint),
        "WorkingDir": "/tmp",
        "Labels": {
            "org.opencontainers.image.title": spec.name,
            "org.opencontainers.image.version": __version__,
            "org.opencontainers.image.base.name": f"debian:{DEBIAN_SUITE}",
        },
    }


def build_base(
    spec: ImageSpec, options: BuildOptions, pins: list[str], directory: Path
) -> tuple[Layer, bool]:
    """The cached base of ``spec`` in ``directory`` (rootfs/, its layer in layout/); whether it was there."""
    done = directory / "base-layer.json"
    if done.exists() and not options.rebuild_base:
        return Layer(**json.loads(done.read_text())), True
    for part in ("rootfs", "layout", "wheels", done.name):
        path = directory / part
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    rootfs, layout, wheels = directory / "rootfs", directory / "layout", directory / "wheels"
    with step(f"{spec.name}: download {len(pins)} pinned wheels and their dependencies") as current:
        pip_download(pins, wheels, current)
    with step(f"{spec.name}: Debian {DEBIAN_SUITE} root filesystem (mmdebstrap)") as current:
        mmdebstrap(rootfs, options, current)
    with step(f"{spec.name}: dependency venv at {VENV}, offline") as current:
        install_dependencies(rootfs, spec, pins, wheels, current)
        shutil.rmtree(wheels)
    with step(f"{spec.name}: finish the tree (paths, dates, bytecode)") as current:
        finish_tree(rootfs, spec, options.base_epoch, current)
    with step(f"{spec.name}: pack the base layer ({tree_bytes(rootfs) >> 20} MiB, gzip)"):
        ocilayout.init(layout)
        created_by = f"mmdebstrap {DEBIAN_SUITE} {' '.join(DEBIAN_PACKAGES)}; pip install {' '.join(pins)}"
        layer = ocilayout.write_layer(layout, rootfs, options.base_epoch, created_by)
    done.write_text(json.dumps(layer.to_json(), indent=1))
    return layer, False


# -- the project layer and the archive -----------------------------------------------------


PROJECT_FILES = ("pyproject.toml", "README.md", "src")
"""What the runtime wheel is built from, as images/*/Dockerfile copies it: not the checkout itself,
where a build/ directory an earlier in-place build left would put its stale modules in the wheel,
and never devtools/ (this tooling, which no image holds)."""


def project_sources(target: Path) -> Path:
    """A clean copy of PROJECT_FILES in ``target`` (no caches, no egg-info), to build the wheel from."""
    target.mkdir(parents=True)
    for name in PROJECT_FILES:
        source = REPO / name
        if source.is_dir():
            ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
            shutil.copytree(source, target / name, ignore=ignored)
        else:
            shutil.copy2(source, target / name)
    return target


def stray_files(wheel: Path, sources: Path = REPO / "src") -> list[str]:
    """The wheel's files that are not the runtime package's sources (nor its dist-info): a module
    no longer in src/, the dev tooling, anything an image must not carry."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    return [
        name
        for name in names
        if not name.split("/")[0].endswith(".dist-info")
        and not (name.startswith("secondary_scheduler/") and (sources / name).is_file())
    ]


def project_wheel(directory: Path, current: Step) -> Path:
    """The runtime package's wheel, built from a clean copy of this checkout's sources (pure
    Python: one wheel serves both images); refused if it holds anything else."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(source_epoch())}
    with tempfile.TemporaryDirectory(prefix="secsched-sources-") as scratch:
        sources = project_sources(Path(scratch) / "project")
        args = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check"]
        args += ["-w", str(directory), str(sources)]
        run(
            args,
            current,
            "pip wheel",
            "the project does not build: run `pip wheel --no-deps .` to see why",
            env=env,
        )
    found = sorted(directory.glob("secondary_scheduler-*.whl"))
    if not found:
        raise ImageBuildError(f"pip wheel made no secondary_scheduler wheel in {directory}")
    if stray := stray_files(found[-1]):
        raise ImageBuildError(
            f"{found[-1].name} holds {len(stray)} file(s) that are not src/secondary_scheduler's "
            f"({', '.join(stray[:5])}): an image carries the runtime package only"
        )
    return found[-1]


def wheel_digest(wheel: Path) -> str:
    """The wheel's content (names and bytes, not zip dates), to tell whether an image is current."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            digest.update(name.encode() + b"\0" + archive.read(name))
    return digest.hexdigest()


def stage_project(rootfs: Path, wheel: Path, stage: Path, current: Step) -> None:
    """The project installed into ``stage`` (a --root for pip), run by the tree's own venv python."""
    inside_stage = Path("/.stage")
    work = rootfs / inside_stage.relative_to("/")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    try:
        shutil.copy2(wheel, work / wheel.name)
        pip_wheel = sorted((rootfs / "usr/share/python-wheels").glob("pip-*.whl"))[-1]
        pip = [f"{VENV}/bin/python", f"/usr/share/python-wheels/{pip_wheel.name}/pip", "install"]
        pip += ["--no-deps", "--no-index", "--no-compile", "--no-cache-dir", "--disable-pip-version-check"]
        pip += ["--root-user-action=ignore", f"--root={inside_stage}/root", f"{inside_stage}/{wheel.name}"]
        in_tree(rootfs, pip, current, "pip install the project", "see pip's message above")
        compile_ = [f"{VENV}/bin/python", "-m", "compileall", "-q", "--invalidation-mode=unchecked-hash"]
        compile_ += [f"-s={inside_stage}/root", "-p=/", f"{inside_stage}/root{VENV}"]
        in_tree(rootfs, compile_, current, "compileall", "a module does not compile: see above")
        shutil.move(work / "root", stage)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_image(spec: ImageSpec, options: BuildOptions, wheel: Path) -> BuiltImage:
    """One image: the cached base (built if missing) plus the project layer, as an OCI archive."""
    started = time.monotonic()
    pins = requirements(spec.extras)
    directory = options.cache / f"images-{base_key(spec, options, pins)}"
    archive = options.out / spec.archive_name
    stamp = options.out / f"{spec.name}.inputs.json"
    epoch = source_epoch()
    inputs = {"base": directory.name, "wheel": wheel_digest(wheel), "epoch": epoch}
    with locked(directory):
        base, cached = build_base(spec, options, pins, directory)
        recorded = json.loads(stamp.read_text()) if stamp.exists() else {}
        if archive.exists() and recorded.get("inputs") == inputs:
            return BuiltImage(
                spec,
                archive,
                recorded["manifest"],
                recorded["archive"],
                archive.stat().st_size,
                recorded["unpacked"],
                time.monotonic() - started,
                cached,
                up_to_date=True,
            )
        with tempfile.TemporaryDirectory(prefix=f"{spec.name}-", dir=options.cache) as scratch:
            layout, stage = Path(scratch) / "layout", Path(scratch) / "stage"
            with step(f"{spec.name}: project layer ({wheel.name})") as current:
                stage_project(directory / "rootfs", wheel, stage, current)
                clamp_mtimes(stage, epoch)
                ocilayout.init(layout)
                os.link(
                    ocilayout.blob_path(directory / "layout", base.digest),
                    ocilayout.blob_path(layout, base.digest),
                )
                project = ocilayout.write_layer(layout, stage, epoch, f"pip install {wheel.name}")
                created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
                manifest = ocilayout.write_image(
                    layout,
                    [base, project],
                    image_config(spec),
                    created,
                    f"v{__version__}",
                    debian_architecture(),
                )
            with step(f"{spec.name}: write {archive}"):
                options.out.mkdir(parents=True, exist_ok=True)
                ocilayout.write_archive(layout, archive, epoch)
        unpacked = base.unpacked + project.unpacked
        digest = ocilayout.file_digest(archive)
        record = {"inputs": inputs, "manifest": manifest, "archive": digest, "unpacked": unpacked}
        stamp.write_text(json.dumps(record, indent=1) + "\n")
    return BuiltImage(
        spec, archive, manifest, digest, archive.stat().st_size, unpacked, time.monotonic() - started, cached
    )


def build(names: Sequence[str], options: BuildOptions) -> list[BuiltImage]:
    """Build the named images (IMAGES keys), the project wheel once for all of them."""
    if os.geteuid() != 0:
        raise ImageBuildError(
            "the image build runs mmdebstrap and chroot, which need root: run `sudo make images`"
        )
    ensure_commands(["mmdebstrap"])
    if shutil.which("chroot") is None:
        raise ImageBuildError("chroot is not on PATH: install coreutils")
    options.cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="secsched-wheel-", dir=options.cache) as scratch:
        with step("project wheel (pip wheel .)") as current:
            wheel = project_wheel(Path(scratch), current)
        return [build_image(IMAGES[name], options, wheel) for name in names]


def describe(image: BuiltImage) -> str:
    state = "up to date" if image.up_to_date else ("base cached" if image.base_cached else "base built")
    return (
        f"{image.archive}  ({state}, {format_elapsed(image.seconds)})\n"
        f"  manifest {image.manifest_digest}\n"
        f"  archive  {image.archive_digest}\n"
        f"  size     {image.compressed_bytes / 1e6:.1f} MB compressed, "
        f"{image.unpacked_bytes / 1e6:.1f} MB unpacked"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m secsched_devtools.cluster.images", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--image", choices=sorted(IMAGES), action="append", help="Build only this one (repeatable)."
    )
    parser.add_argument("--out", type=Path, default=BuildOptions.out, help="Where the .oci.tar archives go.")
    parser.add_argument(
        "--cache", type=Path, default=None, help="Cache directory (default ~/.cache/secondary-scheduler)."
    )
    parser.add_argument(
        "--debian-snapshot",
        metavar="YYYYMMDDTHHMMSSZ",
        help="Install Debian packages as of this snapshot.debian.org time.",
    )
    parser.add_argument(
        "--rebuild-base",
        action="store_true",
        help="Rebuild the cached base (e.g. for Debian security updates).",
    )
    args = parser.parse_args(argv)
    options = BuildOptions(
        out=args.out.resolve(),
        cache=args.cache or versions.cache_root(),
        debian_snapshot=args.debian_snapshot,
        rebuild_base=args.rebuild_base,
    )
    if options.debian_snapshot is None:
        console.print(
            f"note: Debian packages come from today's {DEBIAN_MIRROR} (bookworm, -updates, -security), "
            "not a fixed snapshot; pass --debian-snapshot for one (snapshot.debian.org must be reachable)",
            soft_wrap=True,
        )
    try:
        built = build(args.image or sorted(IMAGES, reverse=True), options)
    except (ImageBuildError, ToolError) as error:
        console.print(f"error: images: {error}", markup=False, highlight=False, soft_wrap=True)
        return 1
    for image in built:
        console.print(describe(image), markup=False, highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
