"""Debian tools the image build and its test need (mmdebstrap, umoci, runc, skopeo), installed on demand.

CI is a fresh Debian machine like a developer's, so the build installs what it lacks itself
rather than failing on a missing command; where it cannot (no apt, not root) it says what to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable

from secsched_devtools.cluster.progress import step

PACKAGE_OF = {"mmdebstrap": "mmdebstrap", "umoci": "umoci", "runc": "runc", "skopeo": "skopeo"}
"""Command -> the Debian package that ships it."""


class ToolError(RuntimeError):
    """A host tool is missing and could not be installed; the message says how to install it."""


def ensure_commands(commands: Iterable[str]) -> dict[str, str]:
    """The path of each command, installing the missing ones with apt-get when we can."""
    wanted = list(commands)
    missing = [command for command in wanted if shutil.which(command) is None]
    if missing:
        _install([PACKAGE_OF[command] for command in missing])
    found = {command: shutil.which(command) for command in wanted}
    still = [command for command, path in found.items() if path is None]
    if still:
        raise ToolError(f"{', '.join(still)}: still not on PATH after apt-get install; check PATH")
    return {command: str(path) for command, path in found.items()}


def _install(packages: list[str]) -> None:
    hint = f"install them with `sudo apt-get install -y {' '.join(packages)}` (Debian 12 or newer)"
    apt = shutil.which("apt-get")
    if apt is None:
        raise ToolError(f"{', '.join(packages)}: not installed, and apt-get is unavailable here: {hint}")
    if os.geteuid() != 0:
        raise ToolError(f"{', '.join(packages)}: not installed, and only root may apt-get install: {hint}")
    with step(f"apt-get install {' '.join(packages)}") as current:
        environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for args in ([apt, "update", "-q"], [apt, "install", "-y", "-q", *packages]):
            current.update(" ".join(args[1:2]))
            done = subprocess.run(args, env=environment, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
                raise ToolError(f"apt-get {args[1]} failed (exit {done.returncode}): {hint}\n{tail}")
