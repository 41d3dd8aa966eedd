"""`secsched cluster build`'s handling of our own Go test harnesses (the conformance harness).

They build inside the same wrapper module as the upstream binaries, so no extra module
download is needed, and are rebuilt when their source changes (upstream binaries are pinned
by their version tag and never are).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from secsched_devtools.cluster import build, versions


def harness() -> versions.BinarySpec:
    return next(spec for spec in versions.BINARIES if spec.name == "conformance-harness")


def test_the_harness_source_goes_into_the_wrapper_module_but_not_into_tools_go() -> None:
    files = build._kubernetes_module_files()
    assert "package main" in files["conformance-harness/main.go"]
    assert "frameworkruntime.NewFramework" in files["conformance-harness/main.go"]
    assert "conformance-harness" not in files["tools.go"]
    assert "sigs.k8s.io/scheduler-plugins/cmd/scheduler" in files["tools.go"]


def test_a_harness_is_stale_until_built_from_its_current_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECSCHED_CACHE_DIR", str(tmp_path))
    spec = harness()
    versions.bin_dir().mkdir(parents=True)
    (versions.bin_dir() / spec.name).write_text("binary")
    assert "conformance-harness" in build.missing_binaries()  # built, but from which source?
    build.installed_path(spec).write_text("binary")
    assert "conformance-harness" not in build.missing_binaries()
    assert build.binary_path("conformance-harness") == build.installed_path(spec)
    monkeypatch.setattr(build, "_source_digest", lambda spec: "a" * 64)  # the source was edited
    assert "conformance-harness" in build.missing_binaries()


def test_checkouts_with_different_harness_sources_keep_their_own_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECSCHED_CACHE_DIR", str(tmp_path))
    spec = harness()
    versions.bin_dir().mkdir(parents=True)
    builds = []
    for index, digest in enumerate("abcde"):
        monkeypatch.setattr(build, "_source_digest", lambda spec, digest=digest: digest * 64)
        path = build.installed_path(spec)
        path.write_text("binary")
        os.utime(path, (index, index))
        builds.append(path)
    build._prune_older_harnesses(spec, keep=3)
    assert [path.exists() for path in builds] == [False, False, True, True, True]


def test_upstream_binaries_need_no_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECSCHED_CACHE_DIR", str(tmp_path))
    versions.bin_dir().mkdir(parents=True)
    (versions.bin_dir() / "kubectl").write_text("binary")
    assert "kubectl" not in build.missing_binaries()
