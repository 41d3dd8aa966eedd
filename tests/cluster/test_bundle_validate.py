"""bundle/ judged by operator-framework's own validators, not by our reading of their rules.

The judge is our small Go harness (cluster/harness/bundlevalidate) over
github.com/operator-framework/api: the bundle loader, then the validators `operator-sdk bundle
validate` runs by default (ClusterServiceVersion, CustomResourceDefinition, Bundle). It is
built from the Go module proxy by `secsched cluster build`, into a cache of its own. Broken
copies of the bundle show that it does judge.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from secsched_devtools.cluster import build

BUNDLE = Path(__file__).resolve().parents[2] / "bundle"
CSV = "manifests/secsched-operator.clusterserviceversion.yaml"


@pytest.fixture(scope="module")
def validator() -> Path:
    if "bundle-validate" in build.missing_binaries():
        try:
            build.build(only=["bundle-validate"])
        except build.BuildError as error:
            pytest.fail(f"the bundle validator could not be built: {error}")
    return build.binary_path("bundle-validate")


def validate(validator: Path, bundle: Path, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    """Exit status, findings and stderr of the validator on `bundle`."""
    result = subprocess.run(
        [str(validator), *flags, str(bundle)], capture_output=True, text=True, timeout=120, check=False
    )
    findings = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result.returncode, findings, result.stderr


def test_the_bundle_passes_the_default_validators(validator: Path) -> None:
    status, findings, stderr = validate(validator, BUNDLE)
    errors = [finding for finding in findings if finding["level"] == "Error"]
    assert (status, errors) == (0, []), f"{json.dumps(findings, indent=1)}\n{stderr}"
    assert not findings, f"warnings: {json.dumps(findings, indent=1)}"


def test_the_optional_validators_find_no_errors(validator: Path) -> None:
    """Good practices and deprecated APIs (operator-sdk's --select-optional): warnings only,
    such as OLM's advice to name channels stable/fast/candidate rather than `alpha`."""
    status, findings, stderr = validate(validator, BUNDLE, "--optional")
    assert status == 0, f"{json.dumps(findings, indent=1)}\n{stderr}"
    assert all(finding["level"] == "Warning" for finding in findings)


def test_a_bundle_without_its_owned_crd_is_refused(validator: Path, tmp_path: Path) -> None:
    broken = shutil.copytree(BUNDLE, tmp_path / "bundle")
    for crd in (broken / "manifests").glob("*.crd.yaml"):
        crd.unlink()
    status, findings, _ = validate(validator, broken)
    assert status == 1
    assert any(
        f["level"] == "Error" and f["type"] == "BundleNotValid" and "owned CRD" in f["detail"]
        for f in findings
    ), findings


def test_a_csv_without_install_modes_is_refused(validator: Path, tmp_path: Path) -> None:
    broken = shutil.copytree(BUNDLE, tmp_path / "bundle")
    csv = broken / CSV
    text = csv.read_text()
    assert "\n  installModes:" in text
    csv.write_text(text.replace("\n  installModes:", "\n  installModesGone:"))
    status, findings, _ = validate(validator, broken)
    assert status == 1
    assert any(f["level"] == "Error" and "install modes not found" in f["detail"] for f in findings), findings


def test_an_unreadable_bundle_is_an_error_not_a_pass(validator: Path, tmp_path: Path) -> None:
    status, findings, stderr = validate(validator, tmp_path / "missing")
    assert status == 2 and not findings
    assert "cannot load the bundle" in stderr
