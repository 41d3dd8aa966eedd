"""Private files for credentials that arrive as bytes but that TLS can only load from a path."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def private_file(data: bytes, suffix: str) -> str:
    """The path of a 0600 file holding ``data``, named by its digest in a private directory.

    One file per distinct credential, reused by every load of it, so a process that loads
    kubeconfigs repeatedly (tests, the operator) or rotates exec-plugin certificates does not
    leave a new file behind each time.
    """
    directory = Path(tempfile.gettempdir()) / f"secsched-credentials-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    info = directory.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{directory} must belong to this user and be private (mode 0700)")
    target = directory / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
    if not target.exists():
        handle, temporary = tempfile.mkstemp(dir=directory, suffix=suffix)  # created 0600
        with os.fdopen(handle, "wb") as output:
            output.write(data)
        os.replace(temporary, target)
    return str(target)
