"""Leader election on a coordination.k8s.io Lease, with client-go's timing rules.

Only the holder acts. A candidate takes the lease when the holder has not renewed it for
`lease_duration` as measured on the candidate's own clock (from when it last saw the
record change, so clock skew between machines does not matter). The holder gives up
(and the process should stop acting at once) if it cannot renew within `renew_deadline`,
which is shorter than `lease_duration`: so two replicas never act at the same time.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from secondary_scheduler.kube.client import ApiClient, ApiError, resource_path

log = logging.getLogger(__name__)


def _now_micro() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderElectionConfig:
    namespace: str
    name: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = field(default_factory=default_identity)

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > 0:
            raise ValueError(
                f"leaseDuration ({self.lease_duration}s) must be greater than "
                f"renewDeadline ({self.renew_deadline}s)"
            )
        if self.retry_period <= 0 or self.retry_period * 1.2 >= self.renew_deadline:
            raise ValueError(f"retryPeriod ({self.retry_period}s) must be well below renewDeadline")


class LeaderElector:
    """`await elector.acquire()` blocks until we lead; `await elector.hold()` returns when we stop leading."""

    def __init__(self, api: ApiClient, config: LeaderElectionConfig) -> None:
        self.api = api
        self.config = config
        self.path = resource_path("coordination.k8s.io/v1", "leases", config.namespace, config.name)
        self._observed_record: dict[str, Any] | None = None
        self._observed_at = 0.0
        self.is_leader = False
        self.last_renew = 0.0

    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        transitions = int((previous or {}).get("leaseTransitions", 0) or 0)
        same_holder = previous is not None and previous.get("holderIdentity") == self.config.identity
        now = _now_micro()
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": round(self.config.lease_duration),
            "acquireTime": previous.get("acquireTime", now) if same_holder and previous else now,
            "renewTime": now,
            "leaseTransitions": transitions if same_holder or previous is None else transitions + 1,
        }

    async def _try_acquire_or_renew(self) -> bool:
        try:
            lease = await self.api.get(self.path)
        except ApiError as error:
            if not error.not_found:
                raise
            body: dict[str, Any] = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": self._spec(None),
            }
            body["spec"]["leaseTransitions"] = 0
            await self.api.create(
                resource_path("coordination.k8s.io/v1", "leases", self.config.namespace), body
            )
            self._observe(body["spec"])
            return True
        spec = lease.get("spec") or {}
        if spec != self._observed_record:
            self._observe(spec)
        holder = spec.get("holderIdentity")
        held_by_other = bool(holder) and holder != self.config.identity
        if held_by_other and time.monotonic() < self._observed_at + self.config.lease_duration:
            return False
        lease["spec"] = self._spec(spec)
        try:
            await self.api.replace(self.path, lease)  # resourceVersion makes this compare-and-swap
        except ApiError as error:
            if error.conflict:
                return False
            raise
        self._observe(lease["spec"])
        return True

    def _observe(self, spec: dict[str, Any]) -> None:
        self._observed_record = dict(spec)
        self._observed_at = time.monotonic()

    async def acquire(self) -> None:
        log.info("attempting to acquire leader lease %s/%s", self.config.namespace, self.config.name)
        while True:
            try:
                if await self._try_acquire_or_renew():
                    self.is_leader = True
                    self.last_renew = time.monotonic()
                    log.info("successfully acquired lease %s/%s", self.config.namespace, self.config.name)
                    return
            except Exception as error:
                log.warning("error acquiring lease: %s", error)
            await asyncio.sleep(self.config.retry_period)

    async def hold(self) -> None:
        """Renew every retry period; return (having stopped leading) once renewal misses the deadline."""
        while True:
            await asyncio.sleep(self.config.retry_period)
            try:
                renewed = await asyncio.wait_for(
                    self._try_acquire_or_renew(),
                    timeout=max(0.1, self.last_renew + self.config.renew_deadline - time.monotonic()),
                )
            except Exception as error:
                log.warning("failed to renew lease: %s", error)
                renewed = False
            if renewed:
                self.last_renew = time.monotonic()
            elif time.monotonic() - self.last_renew >= self.config.renew_deadline:
                self.is_leader = False
                log.error(
                    "leader election lost: lease %s/%s not renewed within %.0fs",
                    self.config.namespace,
                    self.config.name,
                    self.config.renew_deadline,
                )
                return

    async def release(self) -> None:
        """Hand the lease back on a clean shutdown so a standby takes over at once."""
        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = await self.api.get(self.path)
            if (lease.get("spec") or {}).get("holderIdentity") != self.config.identity:
                return
            lease["spec"]["holderIdentity"] = None
            lease["spec"]["leaseDurationSeconds"] = 1
            lease["spec"]["renewTime"] = _now_micro()
            await self.api.replace(self.path, lease)
        except (ApiError, OSError) as error:
            log.warning("could not release the lease: %s", error)
