"""`secsched cluster build`: build the control-plane binaries from the Go module proxy.

No binary downloads are possible here, so kube-apiserver & co. are compiled from their Go
modules into a cache outside the repository (see `versions.cache_root`). A binary that is
already in the cache is reused, so a warm run takes a moment.

k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with local
paths, which makes `go install` fail; we therefore build inside a small wrapper module
that requires it (and scheduler-plugins) and replaces every staging module with its tag.
Our Go test harnesses (`BinarySpec.source`, e.g. tests/conformance's reference) are copied
into that module and built there, against the same upstream code at no extra download; a
stamp of their source beside the binary rebuilds them when the source changes.
Tools outside the control plane (helm, the OLM bundle validator) build in wrapper modules of
their own into cache directories of their own (`BinarySpec.cache`), at most 2 jobs at a time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from secsched_devtools.cluster import versions
from secsched_devtools.cluster.progress import console, step


class BuildError(RuntimeError):
    """A binary could not be built; the message says what to do."""


def _go_executable() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise BuildError(
            "Go is not installed, and the local cluster is built from Go modules.\n"
            "Install Go 1.24 or newer (https://go.dev/doc/install, or `apt-get install golang-go`"
            " where that is recent enough), make sure `go` is on PATH, then run "
            "`secsched cluster build` again. Go is needed for the local cluster only."
        )
    return go


def _ldflags() -> str:
    major, minor = versions.KUBERNETES.lstrip("v").split(".")[:2]
    prefix = "k8s.io/component-base/version"
    pairs = {
        "gitVersion": versions.KUBERNETES,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags = " ".join(f"-X {prefix}.{key}={value}" for key, value in pairs.items())
    return f"-s -w {flags}"


def _tool_ldflags(spec: versions.BinarySpec) -> str:
    """helm's Makefile stamps its version and the Kubernetes version `helm template` and
    `helm lint` assume without a cluster (else v1.20, which a chart's kubeVersion refuses);
    we stamp our control plane's."""
    if spec.module != "helm":
        return "-s -w"
    major, minor = versions.KUBERNETES.lstrip("v").split(".")[:2]
    pairs = {
        "helm.sh/helm/v3/internal/version.version": versions.HELM,
        "helm.sh/helm/v3/internal/version.gitTreeState": "clean",
        "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor": major,
        "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor": minor,
        "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor": major,
        "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor": minor,
    }
    return "-s -w " + " ".join(f"-X {key}={value}" for key, value in pairs.items())


def _kubernetes_module_files() -> dict[str, str]:
    replaces = "\n".join(
        f"\tk8s.io/{name} => k8s.io/{name} {versions.STAGING_OVERRIDES.get(name, versions.STAGING)}"
        for name in versions.STAGING_MODULES
    )
    go_mod = (
        "module secsched.local/controlplane\n\ngo 1.24\n\n"
        f"require (\n\tk8s.io/kubernetes {versions.KUBERNETES}\n"
        f"\tsigs.k8s.io/scheduler-plugins {versions.SCHEDULER_PLUGINS}\n)\n\n"
        f"replace (\n{replaces}\n)\n"
    )
    imports = "\n".join(
        f'\t_ "{spec.package}"'
        for spec in versions.BINARIES
        if spec.module == "kubernetes" and spec.source is None
    )
    tools_go = f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
    files = {"go.mod": go_mod, "tools.go": tools_go}
    for spec in versions.BINARIES:
        if spec.module == "kubernetes" and spec.source is not None:
            files.update({f"{spec.name}/{name}": text for name, text in _harness_sources(spec).items()})
    return files


def _harness_sources(spec: versions.BinarySpec) -> dict[str, str]:
    """A test harness's Go files (name -> text), from the package directory that ships them."""
    assert spec.source is not None
    directory = Path(__file__).resolve().parent.parent / spec.source
    sources = {path.name: path.read_text() for path in sorted(directory.glob("*.go"))}
    if not sources:
        raise BuildError(
            f"{directory}: no Go source for {spec.name}; the package is incomplete: reinstall it"
        )
    return sources


def _source_digest(spec: versions.BinarySpec) -> str | None:
    """What a harness binary was built from; None for upstream binaries (their tag pins them)."""
    if spec.source is None:
        return None
    digest = hashlib.sha256()
    for name, text in _harness_sources(spec).items():
        digest.update(f"{name}\0{text}\0".encode())
    return digest.hexdigest()


def installed_path(spec: versions.BinarySpec) -> Path:
    """Where `spec`'s binary is: for a harness, named by its source's digest, so checkouts with
    different harness sources (a branch, a clean clone beside a working tree) share the cache
    without rebuilding over each other; upstream binaries by name (their tag pins them)."""
    digest = _source_digest(spec)
    name = spec.name if digest is None else f"{spec.name}-{digest[:16]}"
    return versions.spec_bin_dir(spec) / name


def binary_path(name: str) -> Path:
    """The cached binary called `name`, as this checkout's sources build it."""
    return installed_path(next(spec for spec in versions.BINARIES if spec.name == name))


def _is_current(spec: versions.BinarySpec) -> bool:
    """Built, and for a harness built from the source we have now (edits rebuild it)."""
    return installed_path(spec).exists()


def _prune_older_harnesses(spec: versions.BinarySpec, keep: int = 3) -> None:
    """Keep the `keep` newest builds of a harness: a few checkouts at once, not every edit ever."""
    builds = sorted(
        versions.spec_bin_dir(spec).glob(f"{spec.name}-*"),
        key=lambda path: path.stat().st_mtime,
        reverse=True,
    )
    for old in builds[keep:]:
        if ".partial-" not in old.name:
            old.unlink(missing_ok=True)


def _etcd_module_files() -> dict[str, str]:
    go_mod = f"module secsched.local/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 {versions.ETCD}\n"
    tools_go = '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n'
    return {"go.mod": go_mod, "tools.go": tools_go}


def _tool_module_files(spec: versions.BinarySpec) -> dict[str, str]:
    """The wrapper module of a tool outside the control plane: helm, or the bundle validator."""
    if spec.module == "helm":
        go_mod = f"module secsched.local/helm\n\ngo 1.24\n\nrequire helm.sh/helm/v3 {versions.HELM}\n"
        tools_go = f'//go:build tools\n\npackage tools\n\nimport _ "{spec.package}"\n'
        return {"go.mod": go_mod, "tools.go": tools_go}
    go_mod = (
        "module secsched.local/operatorframework\n\ngo 1.24\n\n"
        f"require github.com/operator-framework/api {versions.OPERATOR_FRAMEWORK_API}\n"
    )
    return {
        "go.mod": go_mod,
        **{f"{spec.name}/{name}": text for name, text in _harness_sources(spec).items()},
    }


def _run_go(args: list[str], cwd: Path, title: str, env: dict[str, str]) -> None:
    """Run one go command, counting the packages it reports so progress is visible."""
    with step(title) as current:
        process = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert process.stdout is not None
        tail: deque[str] = deque(maxlen=40)
        for seen, line in enumerate(process.stdout, start=1):
            tail.append(line.rstrip())
            current.update(f"{seen} packages/modules so far")
        if process.wait() != 0:
            raise BuildError(f"{title} failed:\n" + "\n".join(tail))


def _prepare_module(directory: Path, files: dict[str, str], go: str, env: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed = True
    if changed or not (directory / "go.sum").exists():
        _run_go([go, "mod", "tidy", "-v"], directory, f"resolving modules in {directory.name}", env)


def missing_binaries() -> list[str]:
    return [spec.name for spec in versions.BINARIES if not _is_current(spec)]


def build(only: Iterable[str] | None = None) -> Path:
    """Build every missing binary into the cache; returns the bin directory."""
    wanted = set(only) if only else {spec.name for spec in versions.BINARIES}
    bin_dir = versions.bin_dir()
    todo = [s for s in versions.BINARIES if s.name in wanted and not _is_current(s)]
    if not todo:
        console.print(f"[green]✓[/green] control-plane binaries ready in {bin_dir}")
        return bin_dir
    go = _go_executable()
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOFLAGS": "-mod=mod -buildvcs=false",
        # The checksum database this machine reaches lacks entries for many k8s.io tags; the
        # hashes are still recorded in go.sum, and the modules come over TLS from the proxy.
        "GONOSUMDB": "k8s.io",
        "GOTOOLCHAIN": "local",
    }
    if all(spec.source is not None or spec.cache is not None for spec in todo):
        # Only our harnesses or the tools: minutes, not the control plane's half hour.
        console.print(f"Building {', '.join(s.name for s in todo)} (tools and test harnesses; minutes).")
    else:
        console.print(
            f"Building {', '.join(s.name for s in todo)} ({versions.version_tag()}).\n"
            "A cold build takes 15-30 minutes on 2 cores and downloads several hundred MB of modules;"
            " later runs reuse them."
        )
    started = time.monotonic()
    prepared: set[str] = set()
    for spec in todo:
        versions.spec_bin_dir(spec).mkdir(parents=True, exist_ok=True)
        target = installed_path(spec)
        partial = target.with_suffix(f".partial-{os.getpid()}")  # two builds at once never collide
        if spec.module == "kwok":
            gobin = versions.build_dir() / "kwok-bin"
            _run_go(
                [go, "install", "-v", "-trimpath", "-ldflags=-s -w", f"{spec.package}@{versions.KWOK}"],
                bin_dir,
                f"building {spec.name}",
                {**env, "GOBIN": str(gobin), "GOFLAGS": "-buildvcs=false"},
            )
            shutil.move(gobin / spec.name, partial)
        else:
            module_dir = versions.spec_build_dir(spec) / spec.module
            if spec.module not in prepared:
                if spec.cache is not None:
                    files = _tool_module_files(spec)
                else:
                    files = (
                        _kubernetes_module_files() if spec.module == "kubernetes" else _etcd_module_files()
                    )
                _prepare_module(module_dir, files, go, env)
                prepared.add(spec.module)
            # Tools build while other work shares the machine: 2 jobs, and ldflags of their own.
            flags = (
                ["-p", "2", f"-ldflags={_tool_ldflags(spec)}"] if spec.cache else [f"-ldflags={_ldflags()}"]
            )
            _run_go(
                [go, "build", "-v", "-trimpath", *flags, "-o", str(partial), spec.package],
                module_dir,
                f"building {spec.name}",
                env,
            )
        partial.replace(target)  # atomic: a half-built binary is never mistaken for a done one
        if spec.source is not None:
            _prune_older_harnesses(spec)
    console.print(f"[green]✓[/green] built in {time.monotonic() - started:.0f}s into {bin_dir}")
    return bin_dir
