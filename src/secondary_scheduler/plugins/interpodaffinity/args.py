"""InterPodAffinityArgs (kubescheduler.config.k8s.io/v1), with kube-scheduler 1.34's defaults and rules."""

from __future__ import annotations

from pydantic import Field

from secondary_scheduler.config.base import ConfigModel


class InterPodAffinityArgs(ConfigModel):
    hard_pod_affinity_weight: int = Field(1, ge=0, le=100)
    ignore_preferred_terms_of_existing_pods: bool = False
