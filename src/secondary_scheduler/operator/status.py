"""The CR's status: Available, Progressing and Degraded, each with a reason and a next step.

Upstream leaves status nearly empty, so a broken scheduler shows nothing on the CR. Here
every reconcile ends in one `Outcome`, and the status is a pure function of it (plus the
previous conditions, to keep lastTransitionTime when nothing changed).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

from secondary_scheduler import __version__
from secondary_scheduler.kube.client import JSON
from secondary_scheduler.operator import names
from secondary_scheduler.operator.configcheck import ConfigCheck

Status = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class Condition:
    type: str
    status: Status
    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """What one reconcile saw and did."""

    namespace: str
    generation: int
    state: str
    """The effective managementState (Managed, Unmanaged, Removed)."""
    spec_error: str | None = None
    config: ConfigCheck | None = None
    apply_error: str | None = None
    deployment: JSON | None = None
    """The Deployment as it is now (None: there is none)."""


def _pods_hint(namespace: str) -> str:
    return f"`kubectl -n {namespace} get pods -l app={names.OPERAND}` and their events and logs"


def conditions(outcome: Outcome) -> list[Condition]:
    return [_available(outcome), _progressing(outcome), _degraded(outcome)]


def _available(outcome: Outcome) -> Condition:
    deployment = outcome.deployment
    if outcome.state == "Removed" and deployment is None:
        return Condition(
            "Available",
            "False",
            "Removed",
            "managementState is Removed: the scheduler was deleted; set it to Managed to deploy it again",
        )
    if deployment is None:
        why = (
            outcome.spec_error or (outcome.config.message if outcome.config else None) or outcome.apply_error
        )
        return Condition(
            "Available",
            "False",
            "NotDeployed",
            f"the scheduler is not deployed: {why}" if why else "the scheduler is not deployed yet",
        )
    status = deployment.get("status") or {}
    available = int(status.get("availableReplicas") or 0)
    wanted = int((deployment.get("spec") or {}).get("replicas") or 0)
    if available >= 1:
        return Condition(
            "Available", "True", "AsExpected", f"{available} of {wanted} scheduler replicas are available"
        )
    return Condition(
        "Available",
        "False",
        "NoReplicaAvailable",
        f"none of {wanted} scheduler replicas is available yet: see {_pods_hint(outcome.namespace)}",
    )


def rollout_in_progress(deployment: JSON) -> str | None:
    """Why the Deployment is still rolling out, or None when it has settled."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    meta = deployment.get("metadata") or {}
    wanted = int(spec.get("replicas") or 0)
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        return "the Deployment controller has not seen the latest spec yet"
    updated = int(status.get("updatedReplicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    total = int(status.get("replicas") or 0)
    if updated < wanted or available < wanted or total > wanted:
        return f"{updated} of {wanted} replicas updated, {available} available, {total} running in all"
    return None


def _progressing(outcome: Outcome) -> Condition:
    if outcome.state == "Unmanaged":
        return Condition(
            "Progressing",
            "False",
            "Unmanaged",
            "managementState is Unmanaged: the operator changes nothing; set it to Managed to resume",
        )
    if outcome.state == "Removed":
        return Condition("Progressing", "False", "Removed", "managementState is Removed")
    if outcome.deployment is None:
        return Condition(
            "Progressing", "False", "NotDeployed", "there is no scheduler Deployment to roll out"
        )
    rolling = rollout_in_progress(outcome.deployment)
    if rolling:
        return Condition(
            "Progressing",
            "True",
            "RollingOut",
            f"rolling out the scheduler: {rolling}; if it stalls, see {_pods_hint(outcome.namespace)}",
        )
    return Condition("Progressing", "False", "AsExpected", "the scheduler Deployment is up to date")


def _degraded(outcome: Outcome) -> Condition:
    if outcome.spec_error:
        return Condition(
            "Degraded", "True", "InvalidSpec", f"fix the SecondaryScheduler: {outcome.spec_error}"
        )
    if outcome.state == "Unmanaged":
        return Condition("Degraded", "False", "Unmanaged", "not checked while managementState is Unmanaged")
    if outcome.apply_error:
        return Condition(
            "Degraded",
            "True",
            "ApplyFailed",
            f"{outcome.apply_error}; the operator retries. If this persists, check the operator's RBAC "
            "(deploy/02_clusterrole.yaml, deploy/03_role.yaml, deploy/03a_kube-system_role.yaml) "
            "and its logs",
        )
    if outcome.state != "Removed" and outcome.config is not None and outcome.config.blocks_rollout:
        message = outcome.config.held_message(outcome.deployment is not None)
        return Condition("Degraded", "True", outcome.config.reason, message)
    return Condition("Degraded", "False", "AsExpected", "no problems found")


def merge(previous: list[JSON], current: list[Condition], now: datetime.datetime) -> list[JSON]:
    """Conditions as stored: lastTransitionTime moves only when a condition's status changes."""
    before = {item.get("type"): item for item in previous}
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    merged = []
    for condition in current:
        old = before.get(condition.type)
        kept = old.get("lastTransitionTime") if old and old.get("status") == condition.status else None
        merged.append(
            {
                "type": condition.type,
                "status": condition.status,
                "lastTransitionTime": kept or stamp,
                "reason": condition.reason,
                "message": condition.message,
            }
        )
    return merged


def status_body(outcome: Outcome, previous: JSON, now: datetime.datetime) -> JSON:
    """The whole status to store for `outcome`, given the status stored before."""
    body: JSON = {
        "observedGeneration": outcome.generation,
        "version": __version__,
        "conditions": merge(list(previous.get("conditions") or []), conditions(outcome), now),
        "readyReplicas": 0,
    }
    deployment = outcome.deployment
    if deployment is not None:
        body["readyReplicas"] = int((deployment.get("status") or {}).get("readyReplicas") or 0)
        meta = deployment.get("metadata") or {}
        body["generations"] = [
            {
                "group": "apps",
                "resource": "deployments",
                "namespace": meta.get("namespace", outcome.namespace),
                "name": meta.get("name", names.OPERAND),
                "lastGeneration": int(meta.get("generation") or 0),
            }
        ]
    else:
        body["generations"] = []
    return body
