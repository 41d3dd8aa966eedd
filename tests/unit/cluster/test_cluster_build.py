"""`secsched cluster build`'s handling of our own Go test harnesses (the conformance harness).

They build inside the same wrapper module as the upstream binaries, so no extra module
download is needed, and are rebuilt when their source changes (upstream binaries are pinned
by their version tag and never are).
"""

from __future__ import annotations

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
    (versions.bin_dir() / f"{spec.name}.source-sha256").write_text(build._source_digest(spec) or "")
    assert "conformance-harness" not in build.missing_binaries()
    (versions.bin_dir() / f"{spec.name}.source-sha256").write_text("an older source\n")
    assert "conformance-harness" in build.missing_binaries()


def test_upstream_binaries_need_no_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECSCHED_CACHE_DIR", str(tmp_path))
    versions.bin_dir().mkdir(parents=True)
    (versions.bin_dir() / "kubectl").write_text("binary")
    assert "kubectl" not in build.missing_binaries()
