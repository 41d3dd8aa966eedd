"""OCI image layouts written directly: layers, config, manifest, index and the oci-archive tar.

Written here rather than by umoci because umoci 0.4.7 (Debian 12's) truncates the layers
`umoci insert` makes and stores absolute paths when inserting a whole tree; and because a
layer written from a sorted walk with fixed dates, owners and gzip header is byte-for-byte
reproducible, so equal inputs give equal digests.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"


@dataclass(frozen=True)
class Layer:
    digest: str
    """sha256 of the compressed blob (what the manifest names)."""
    diff_id: str
    """sha256 of the uncompressed tar (what the image config lists)."""
    size: int
    unpacked: int
    """Bytes of regular files in it."""
    created_by: str

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": LAYER_TYPE, "digest": self.digest, "size": self.size}

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "diff_id": self.diff_id,
            "size": self.size,
            "unpacked": self.unpacked,
            "created_by": self.created_by,
        }


class _Hashing:
    """A write-only stream that hashes (and counts) what passes through to ``target``."""

    def __init__(self, target: BinaryIO | gzip.GzipFile | None) -> None:
        self.target = target
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        if self.target is not None:
            self.target.write(data)
        return len(data)

    def flush(self) -> None:
        if self.target is not None:
            self.target.flush()


def init(layout: Path) -> None:
    (layout / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (layout / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))


def blob_path(layout: Path, digest: str) -> Path:
    algorithm, value = digest.split(":", 1)
    return layout / "blobs" / algorithm / value


def write_blob(layout: Path, data: bytes) -> tuple[str, int]:
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
    path = blob_path(layout, digest)
    if not path.exists():
        path.write_bytes(data)
    return digest, len(data)


def _entries(tree: Path) -> list[Path]:
    """Every path under ``tree``, parents before children, siblings sorted: a stable order."""
    found: list[Path] = []
    for directory, dirs, files in os.walk(tree):
        dirs.sort()
        base = Path(directory)
        found += [base / name for name in sorted(dirs + files)]
    return sorted(found, key=lambda path: path.relative_to(tree).parts)


def write_layer(layout: Path, tree: Path, epoch: int, created_by: str) -> Layer:
    """The contents of ``tree`` (paths relative to it) as a gzip'd tar layer blob in ``layout``."""
    partial = layout / "blobs" / "sha256" / ".layer.partial"
    unpacked = 0
    with open(partial, "wb") as file:
        compressed = _Hashing(file)
        zip_options: dict[str, Any] = {"filename": "", "mode": "wb", "mtime": 0, "compresslevel": 6}
        with gzip.GzipFile(fileobj=compressed, **zip_options) as zipped:
            plain: Any = _Hashing(zipped)
            with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for path in _entries(tree):
                    mode = os.lstat(path).st_mode
                    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                        continue  # device nodes, sockets, fifos: the runtime provides /dev
                    info = tar.gettarinfo(str(path), arcname=path.relative_to(tree).as_posix())
                    info.mtime, info.uname, info.gname = epoch, "", ""
                    if info.isreg():
                        unpacked += info.size
                        with open(path, "rb") as source:
                            tar.addfile(info, source)
                    else:
                        tar.addfile(info)
    digest = f"sha256:{compressed.digest.hexdigest()}"
    partial.replace(blob_path(layout, digest))
    return Layer(digest, f"sha256:{plain.digest.hexdigest()}", compressed.size, unpacked, created_by)


def write_image(
    layout: Path, layers: list[Layer], config: dict[str, Any], created: str, tag: str, architecture: str
) -> str:
    """Config, manifest and an index naming the image ``tag``; the manifest's digest."""
    image_config = {
        "created": created,
        "architecture": architecture,
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": created, "created_by": layer.created_by} for layer in layers],
    }
    config_digest, config_size = write_blob(layout, _canonical(image_config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": config_size},
        "layers": [layer.descriptor() for layer in layers],
    }
    manifest_digest, manifest_size = write_blob(layout, _canonical(manifest))
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": MANIFEST_TYPE,
                "digest": manifest_digest,
                "size": manifest_size,
                "annotations": {REF_NAME: tag},
            }
        ],
    }
    (layout / "index.json").write_bytes(_canonical(index))
    return manifest_digest


def _canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def write_archive(layout: Path, archive: Path, epoch: int) -> None:
    """The layout as an oci-archive tar (what `skopeo copy oci-archive:` reads), reproducibly."""
    partial = archive.with_name(archive.name + ".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in _entries(layout):
            if path.name.startswith("."):
                continue
            info = tar.gettarinfo(str(path), arcname=path.relative_to(layout).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
            info.mode = 0o755 if info.isdir() else 0o644
            if info.isreg():
                with open(path, "rb") as source:
                    tar.addfile(info, source)
            else:
                tar.addfile(info)
    partial.replace(archive)


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"
