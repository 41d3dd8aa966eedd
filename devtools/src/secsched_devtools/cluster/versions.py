"""The one place that pins every control-plane component we build.

Kubernetes, scheduler-plugins and the staging modules move together: scheduler-plugins
v0.X.Y is built against Kubernetes 1.X.Y, so changing one means changing all three.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# 1.34.12 rather than 1.34.7: the module proxy we build from lacks many k8s.io staging
# modules at v0.34.7 (cluster-bootstrap, cri-client, kubectl, ...), and 1.34.12 is the
# newest 1.34 patch it serves whole. scheduler-plugins v0.34.7 builds against it
# unchanged (same minor; Go's MVS lifts its k8s.io/kubernetes v1.34.7 requirement).
KUBERNETES = "v1.34.12"
STAGING = "v0.34.12"  # k8s.io/<staging module> tag matching KUBERNETES
SCHEDULER_PLUGINS = "v0.34.7"
ETCD = "v3.6.16"
KWOK = "v0.7.0"
# Tools outside the control plane, each in a cache directory of its own (`BinarySpec.cache`),
# so adding or bumping one never changes the control plane's directory (a 23-minute rebuild).
HELM = "v3.19.5"  # charts/ is linted, rendered and installed with it
OPERATOR_FRAMEWORK_API = "v0.36.0"  # bundle/ is checked by its validators (k8s.io v0.34)

# Every k8s.io staging module that k8s.io/kubernetes requires at v0.0.0.
STAGING_MODULES = (
    "api",
    "apiextensions-apiserver",
    "apimachinery",
    "apiserver",
    "cli-runtime",
    "client-go",
    "cloud-provider",
    "cluster-bootstrap",
    "code-generator",
    "component-base",
    "component-helpers",
    "controller-manager",
    "cri-api",
    "cri-client",
    "csi-translation-lib",
    "dynamic-resource-allocation",
    "endpointslice",
    "externaljwt",
    "kms",
    "kube-aggregator",
    "kube-controller-manager",
    "kube-proxy",
    "kube-scheduler",
    "kubectl",
    "kubelet",
    "metrics",
    "mount-utils",
    "pod-security-admission",
    "sample-apiserver",
    "sample-cli-plugin",
    "sample-controller",
)

# Staging modules that nothing we build imports, pinned to a tag the proxy serves
# (it has no v0.34.12 of these); Go only needs their go.mod to complete the module graph.
STAGING_OVERRIDES = {"sample-cli-plugin": "v0.34.4", "sample-controller": "v0.34.4"}


@dataclass(frozen=True)
class BinarySpec:
    """A binary we build: its file name, the Go package, and which wrapper module owns it."""

    name: str
    package: str
    module: str  # "kubernetes", "etcd" or "kwok"
    source: str | None = None
    """For our own Go test harnesses: their source directory, relative to the package
    `secsched_devtools`. It is copied into the wrapper module as the package `./<name>`
    (so it builds against the very same upstream modules), and the binary is rebuilt
    whenever that source changes."""
    cache: str | None = None
    """The cache directory of a tool outside the control plane (None: `version_tag()`'s)."""


BINARIES = (
    BinarySpec("etcd", "go.etcd.io/etcd/server/v3", "etcd"),
    BinarySpec("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", "kubernetes"),
    BinarySpec("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", "kubernetes"),
    BinarySpec("kubectl", "k8s.io/kubernetes/cmd/kubectl", "kubernetes"),
    # The upstream reference: kube-scheduler with the default plugins plus Trimaran.
    BinarySpec("kube-scheduler-plugins", "sigs.k8s.io/scheduler-plugins/cmd/scheduler", "kubernetes"),
    BinarySpec("kwok", "sigs.k8s.io/kwok/cmd/kwok", "kwok"),
    # tests/conformance's reference: one cycle of upstream's framework over a `secsched score` snapshot.
    BinarySpec(
        "conformance-harness", "./conformance-harness", "kubernetes", source="cluster/harness/conformance"
    ),
    BinarySpec("helm", "helm.sh/helm/v3/cmd/helm", "helm", cache=f"helm-{HELM}"),
    # tests/cluster/test_bundle_validate.py's judge: operator-framework's validators over bundle/.
    BinarySpec(
        "bundle-validate",
        "./bundle-validate",
        "operator-framework",
        source="cluster/harness/bundlevalidate",
        cache=f"operator-framework-api-{OPERATOR_FRAMEWORK_API}",
    ),
)


def version_tag() -> str:
    """A directory name that changes whenever any pinned version does."""
    return f"k8s-{KUBERNETES}_sp-{SCHEDULER_PLUGINS}_etcd-{ETCD}_kwok-{KWOK}"


def cache_root() -> Path:
    """Where built binaries live, outside the repository, shared across clones."""
    override = os.environ.get("SECSCHED_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "secondary-scheduler"


def bin_dir() -> Path:
    return cache_root() / version_tag() / "bin"


def build_dir() -> Path:
    return cache_root() / version_tag() / "build"


def spec_bin_dir(spec: BinarySpec) -> Path:
    """Where `spec`'s binary goes: the control plane's bin dir, or its own tool's."""
    return cache_root() / spec.cache / "bin" if spec.cache else bin_dir()


def spec_build_dir(spec: BinarySpec) -> Path:
    return cache_root() / spec.cache / "build" if spec.cache else build_dir()
