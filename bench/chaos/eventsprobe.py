"""The kill -9 Events probe: how many bound pods a scheduler killed under a backlog leaves without
a Scheduled Event, and where those Events were when it died.

One probe: a backlog of pods in a fresh namespace, one replica (no election) started on it and
killed with SIGKILL once a share of them is bound; the bound pods with no Scheduled Event are
what it lost. Then the same scheduler is started again, as its Deployment's kubelet would, and
finishes the backlog: the bound pods still without a Scheduled Event once it has are what an
admin's ``kubectl describe`` shows nothing for after the crash (ours' next leader writes the
Events its predecessor left unwritten: ``scheduler/eventrecovery.py``; kube-scheduler does not).

Two watches from this process (pods, Events) note when each pod was seen bound
and when its Scheduled Event was seen, so a probe also says how far the Events were behind the
bindings (the lag a kill cuts off) and how long before the kill each lost pod had been bound.

A single probe is noise (the machine is shared; a kill lands at a random point of a send), so
``--events-probe-only`` runs it ``--events-probe-repeats`` times per scheduler on one cluster,
ours' and upstream's alternating, each in a namespace of its own that is emptied afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.chaos import invariants
from bench.chaos.observe import BindingWatch, FirstSeenWatch, create_retrying, list_retrying
from bench.chaos.replicas import Election, chaos_config
from bench.workload import pod_manifests, pods_path
from secondary_scheduler.kube.client import JSON, ApiClient
from secondary_scheduler.kube.namespaces import ensure_namespace
from secondary_scheduler.kube.wait import wait_for
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.cluster.progress import console
from secsched_devtools.cluster.schedulers import start_scheduler

EVENTS_NAMESPACE = "chaos-events"
CREATE_CONCURRENCY = 16
RATE_WINDOW = 2.0
"""Seconds before the kill over which the binding rate is taken."""
RESTART_EVENTS_WAIT = 20.0
"""Seconds the probe waits, once the restarted scheduler has bound the backlog, for the Events
the kill left unwritten (ours lists them 5 s after it leads: ``PREDECESSOR_WRITES_SECONDS``)."""


@dataclass
class EventsProbe:
    """A kill -9 under a backlog: pods bound, how many of them have no Scheduled Event, and when."""

    backlog: int
    bound: int
    lost: int
    examples: list[str]
    bound_at_kill: int = 0
    """Pods this process had seen bound when it sent the kill (``bound`` also counts the bindings
    the API server answered meanwhile)."""
    events_at_kill: int = 0
    """Pods whose Scheduled Event this process had seen when it sent the kill."""
    lost_bound_before_kill: list[float] = field(default_factory=list)
    """For each lost pod seen bound before the kill: seconds from that to the kill, oldest first."""
    lag_seconds: list[float] = field(default_factory=list)
    """For each pod whose Event was seen: seconds from its binding seen to its Event seen."""
    binding_rate: float = 0.0
    """Bindings a second seen in the two seconds before the kill."""
    lost_after_restart: int | None = None
    """Bound pods without a Scheduled Event once the scheduler, started again, bound the rest."""

    @property
    def share(self) -> float:
        return self.lost / max(1, self.bound)

    @property
    def bound_after_kill(self) -> int:
        """Bindings the API server answered after the kill: sent, never seen answered."""
        return self.bound - self.bound_at_kill

    @property
    def lost_after_kill(self) -> int:
        """Lost pods bound after the kill: their binding's answer came too late for any Event."""
        return self.lost - len(self.lost_bound_before_kill)

    def summary(self) -> str:
        """One line: the figures, and where the lost Events were."""
        lags = sorted(self.lag_seconds)
        ages = self.lost_bound_before_kill
        text = (
            f"lost {self.lost} of {self.bound} bound ({self.share:.1%}); at the kill "
            f"{self.bound_at_kill} seen bound ({self.binding_rate:.0f}/s), {self.events_at_kill} Events "
            f"seen; {self.bound_after_kill} bound after it, {self.lost_after_kill} of them lost"
        )
        if lags:
            p99 = lags[int(len(lags) * 0.99)]
            text += (
                f"; lag bound->Event p50 {_ms(statistics.median(lags))}, p99 {_ms(p99)}, max {_ms(lags[-1])}"
            )
        if ages:
            text += (
                f"; lost pods bound {_ms(ages[-1])}-{_ms(ages[0])} before the kill "
                f"(median {_ms(statistics.median(ages))})"
            )
        if self.lost_after_restart is not None:
            text += f"; started again: {self.lost_after_restart} without an Event"
        return text

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EventsProbe:
        return cls(**data)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


class ScheduledWatch(FirstSeenWatch):
    """Notes the monotonic time each pod's first Scheduled Event is seen in a namespace."""

    def __init__(self, api: ApiClient, namespace: str) -> None:
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        super().__init__(api, path, f"scheduled-{namespace}")
        self.seen: dict[str, float] = {}

    def _saw(self, obj: JSON, at: float) -> None:
        regarding = obj.get("regarding") or {}
        if obj.get("reason") == "Scheduled" and regarding.get("kind") == "Pod":
            self.seen.setdefault(str(regarding.get("name")), at)


def probe_config(cluster: LocalCluster, namespace: str, scheduler_name: str) -> str:
    """The chaos run's configuration (deploy/06's load-aware profile) without leader election."""
    document = yaml.safe_load(
        chaos_config(scheduler_name, cluster.kubeconfig, cluster.prometheus_url, namespace, Election())
    )
    document["leaderElection"] = {"leaderElect": False}
    return yaml.safe_dump(document, sort_keys=False)


async def events_probe(
    kind: str,
    cluster: LocalCluster,
    api: ApiClient,
    *,
    backlog_pods: int,
    share: float,
    seed: int,
    scheduler_name: str,
    directory: Path,
    namespace: str = EVENTS_NAMESPACE,
    name: str | None = None,
) -> EventsProbe:
    """kill -9 one replica (no election) once `share` of a backlog is bound; count the bound pods
    left without a Scheduled Event."""
    await ensure_namespace(api, namespace)
    backlog = pod_manifests("backlog", backlog_pods, scheduler_name, seed)
    path = pods_path(namespace)
    await _create_all(api, path, backlog)
    bindings, scheduled = BindingWatch(api, namespace), ScheduledWatch(api, namespace)
    bindings.start()
    scheduled.start()
    config = probe_config(cluster, namespace, scheduler_name)
    name = name or f"{kind}-events-probe"
    run = await asyncio.to_thread(start_scheduler, kind, config, cluster.kubeconfig, directory, name)
    try:
        target = int(backlog_pods * share)
        await wait_for(lambda: _bound_at_least(bindings, target), f"{target} backlog pods bound", 300, 0.05)
        killed_at = time.monotonic()
        bound_at_kill, events_at_kill = len(bindings.bound), len(scheduled.seen)
        run.process.kill()
        run.process.wait()
    finally:
        run.stop()
    events_path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    pods = await list_retrying(api, path)
    events = await list_retrying(api, events_path)
    lost = invariants.events_lost(pods, events)
    # Started again, as the kubelet restarts a killed scheduler's container: the rest of the
    # backlog bound with each of those pods' Events seen; then up to RESTART_EVENTS_WAIT seconds
    # for the Events the kill left unwritten (a scheduler that writes them does so within that,
    # kube-scheduler never), then a SIGTERM (which flushes Events).
    restarted_at = time.monotonic()
    again = await asyncio.to_thread(
        start_scheduler, kind, config, cluster.kubeconfig, directory, f"{name}-again"
    )
    try:
        everything = len(backlog)
        # Bound by then: by the killed scheduler (its last Bindings land within a second or two;
        # the restart takes longer). Every pod bound later is the restarted one's, with its Event.
        bound_before = set(bindings.bound)

        async def finished() -> bool:
            if len(bindings.bound) < everything:
                return False
            return all(pod in scheduled.seen for pod in bindings.bound if pod not in bound_before)

        async def every_event() -> bool:
            return len(scheduled.seen) >= everything

        await wait_for(finished, "the backlog bound by the scheduler started again", 300, 0.05)
        with contextlib.suppress(TimeoutError):
            await wait_for(every_event, "the Events the kill left unwritten", RESTART_EVENTS_WAIT, 0.1)
    finally:
        again.stop()
    await bindings.stop()
    await scheduled.stop()
    lost_after_restart = invariants.events_lost(
        await list_retrying(api, path), await list_retrying(api, events_path)
    )
    bound = sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName"))
    ages = sorted(
        (killed_at - bindings.bound[pod] for pod in lost if bindings.bound.get(pod, killed_at) < killed_at),
        reverse=True,
    )
    lags = [  # of the killed scheduler's Events only: those written again come a restart later
        at - bindings.bound[pod]
        for pod, at in scheduled.seen.items()
        if pod in bindings.bound and at < restarted_at
    ]
    recent = sum(1 for at in bindings.bound.values() if killed_at - RATE_WINDOW <= at < killed_at)
    return EventsProbe(
        backlog=len(backlog),
        bound=bound,
        lost=len(lost),
        examples=lost[:5],
        bound_at_kill=bound_at_kill,
        events_at_kill=events_at_kill,
        lost_bound_before_kill=[round(age, 4) for age in ages],
        lag_seconds=[round(lag, 4) for lag in lags],
        binding_rate=recent / RATE_WINDOW,
        lost_after_restart=len(lost_after_restart),
    )


async def _create_all(api: ApiClient, path: str, manifests: Sequence[JSON]) -> None:
    pending = iter(manifests)

    async def worker() -> None:
        for manifest in pending:
            await create_retrying(api, path, manifest)

    await asyncio.gather(*(worker() for _ in range(CREATE_CONCURRENCY)))


async def _bound_at_least(watch: BindingWatch, count: int) -> bool:
    return len(watch.bound) >= count


async def empty_namespace(api: ApiClient, namespace: str) -> None:
    """Delete a probe's pods at once (grace 0), so the next probe's backlog has the nodes' room."""
    path = pods_path(namespace)
    await api.delete(path, {"gracePeriodSeconds": 0})

    async def empty() -> bool:
        return not (await api.get(path, {"limit": 1}))["items"]

    await wait_for(empty, f"the pods of {namespace} gone", timeout=120)


async def repeated_probes(
    kinds: Sequence[str],
    cluster: LocalCluster,
    *,
    repeats: int,
    backlog_pods: int,
    share: float,
    seed: int,
    scheduler_name: str,
    directory: Path,
) -> dict[str, list[EventsProbe]]:
    """`repeats` probes of each scheduler on one cluster, the schedulers alternating (so a busy
    spell of the shared machine falls on both), each in a namespace of its own."""
    results: dict[str, list[EventsProbe]] = {kind: [] for kind in kinds}
    async with cluster.api() as api:
        for index in range(repeats):
            for kind in kinds:
                namespace = f"{EVENTS_NAMESPACE}-{index + 1}-{kind}"
                probe = await events_probe(
                    kind,
                    cluster,
                    api,
                    backlog_pods=backlog_pods,
                    share=share,
                    seed=seed + index,
                    scheduler_name=scheduler_name,
                    directory=directory,
                    namespace=namespace,
                    name=f"{kind}-events-probe-{index + 1}",
                )
                results[kind].append(probe)
                stamp = datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S")
                console.print(f"{stamp} events probe {index + 1}/{repeats} {kind}: {probe.summary()}")
                await empty_namespace(api, namespace)
    return results


def _after_restart(probes: Sequence[EventsProbe]) -> str:
    counts = [probe.lost_after_restart for probe in probes if probe.lost_after_restart is not None]
    return ", ".join(str(count) for count in counts) if counts else "n/a"


def median_share(probes: Sequence[EventsProbe]) -> float:
    return statistics.median(probe.share for probe in probes)


def mean_share(probes: Sequence[EventsProbe]) -> float:
    return statistics.fmean(probe.share for probe in probes)


def table(results: Mapping[str, Sequence[EventsProbe]]) -> str:
    """Markdown: each run's lost / bound per scheduler, then the median and mean lost share."""
    names = list(results)
    runs = max(len(probes) for probes in results.values())
    lines = ["| run | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for index in range(runs):
        cells = []
        for name in names:
            probes = results[name]
            cells.append(
                f"{probes[index].lost} of {probes[index].bound} ({probes[index].share:.1%})"
                if index < len(probes)
                else ""
            )
        lines.append(f"| {index + 1} | " + " | ".join(cells) + " |")
    medians = " | ".join(f"{median_share(results[name]):.1%}" for name in names)
    means = " | ".join(f"{mean_share(results[name]):.1%}" for name in names)
    lines += [f"| median lost share | {medians} |", f"| mean lost share | {means} |"]
    after = " | ".join(
        f"{statistics.median(p.bound_after_kill for p in results[name]):g} / "
        f"{statistics.median(p.lost_after_kill for p in results[name]):g}"
        for name in names
    )
    lines.append(f"| bound after the kill / of them lost, median | {after} |")
    restarted = " | ".join(_after_restart(results[name]) for name in names)
    lines.append(f"| still without an Event once started again and done, by run | {restarted} |")
    lag_cells = []
    for name in names:
        lags = sorted(lag for probe in results[name] for lag in probe.lag_seconds)
        lag_cells.append(
            f"{_ms(statistics.median(lags))} / {_ms(lags[int(len(lags) * 0.99)])}" if lags else "n/a"
        )
    lines.append("| lag binding → Event seen, p50 / p99 | " + " | ".join(lag_cells) + " |")
    return "\n".join(lines)
