"""The API server's part in a replay: the calls the scheduler's plugins make, applied to its state.

DefaultBinder posts a Binding and preemption deletes its victims through the framework handle's
client; in a replay that client is ``ReplayApi``, which applies a Binding or a deletion to the
simulated cluster at once (the replay's time does not move while the scheduler waits on the API
server). Status patches (a victim's DisruptionTarget condition, a nomination, a PodGroup's status)
are accepted and dropped: nothing in a replay reads them back. Any other call is refused loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from secondary_scheduler.kube.client import JSON, ApiError

BindingSink = Callable[[str, str], None]
"""(pod key, node): apply a Binding."""
DeletionSink = Callable[[str], bool]
"""pod key -> whether such a pod existed (and is now gone)."""


class UnsupportedCall(Exception):
    """A plugin made an API call a replay has no answer for."""


class ReplayApi:
    def __init__(self, *, bind: BindingSink, delete: DeletionSink, get: Callable[[str], JSON | None]) -> None:
        self._bind = bind
        self._delete = delete
        self._get = get

    async def create(self, path: str, body: JSON, params: Mapping[str, Any] | None = None) -> JSON:
        key, subresource = _pod(path)
        if key is not None and subresource == "binding":
            self._bind(key, str((body.get("target") or {}).get("name", "")))
            return body
        raise UnsupportedCall(f"POST {path}: a replay applies only Bindings")

    async def patch(
        self, path: str, body: Any, *, patch_type: str = "merge", params: Mapping[str, Any] | None = None
    ) -> JSON:
        if path.endswith("/status"):
            return {}
        raise UnsupportedCall(f"PATCH {path}: a replay accepts only status patches")

    async def delete(self, path: str, params: Mapping[str, Any] | None = None) -> JSON:
        key, subresource = _pod(path)
        if key is None or subresource:
            raise UnsupportedCall(f"DELETE {path}: a replay deletes only pods")
        if not self._delete(key):
            raise ApiError(404, "NotFound", f'pods "{key}" not found')
        return {}

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> JSON:
        key, subresource = _pod(path)
        if key is None or subresource:
            raise UnsupportedCall(f"GET {path}: a replay reads only pods")
        found = self._get(key)
        if found is None:
            raise ApiError(404, "NotFound", f'pods "{key}" not found')
        return found


def _pod(path: str) -> tuple[str | None, str]:
    """(namespace/name, subresource) of a pod's path; (None, "") for any other path."""
    parts = path.strip("/").split("/")
    # api/v1/namespaces/NS/pods/NAME[/SUB]
    if len(parts) >= 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
        return f"{unquote(parts[3])}/{unquote(parts[5])}", "/".join(parts[6:])
    return None, ""
