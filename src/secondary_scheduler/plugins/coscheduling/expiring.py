"""A set of keys that each expire after their own time to live (upstream uses go-cache for this)."""

from __future__ import annotations

from collections.abc import Callable


class ExpiringKeys:
    """Keys remembered until their deadline on ``clock`` (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float], default_ttl: float) -> None:
        """``default_ttl`` is used for a ttl of 0, as go-cache's DefaultExpiration."""
        self._clock = clock
        self._default_ttl = default_ttl
        self._deadlines: dict[str, float] = {}

    def add(self, key: str, ttl: float) -> None:
        self._deadlines[key] = self._clock() + (ttl if ttl > 0 else self._default_ttl)

    def __contains__(self, key: str) -> bool:
        deadline = self._deadlines.get(key)
        if deadline is None:
            return False
        if deadline <= self._clock():
            del self._deadlines[key]
            return False
        return True

    def remaining(self, key: str) -> float:
        """Seconds until ``key`` expires (0 when it is not there)."""
        return max(0.0, self._deadlines.get(key, 0.0) - self._clock()) if key in self else 0.0

    def discard(self, key: str) -> None:
        self._deadlines.pop(key, None)
