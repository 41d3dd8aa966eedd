"""Informers: one per resource, diffs after a relist, and the scheduler's assumed versions."""

from __future__ import annotations

from typing import Any

from secondary_scheduler.framework import Handle
from secondary_scheduler.framework.informers import PERSISTENT_VOLUMES, STORAGE_CLASSES, Informer


def volume(name: str, version: int, claim: str | None = None) -> dict[str, Any]:
    spec = {"claimRef": {"name": claim}} if claim else {}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": str(version)},
        "spec": spec,
    }


def test_each_resource_has_one_informer_and_a_snapshot_fills_only_those_asked_for() -> None:
    handle = Handle()
    assert handle.informer(PERSISTENT_VOLUMES) is handle.informer(PERSISTENT_VOLUMES)
    unread = handle.informers.fill(
        [volume("pv1", 1), {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]
    )
    assert unread == ["Secret (v1)"]
    assert handle.informer(PERSISTENT_VOLUMES).get("pv1") is not None
    assert handle.informer(PERSISTENT_VOLUMES).synced


def test_a_relist_reaches_listeners_as_the_difference() -> None:
    informer = Informer(STORAGE_CLASSES)
    heard: list[tuple[str, str]] = []
    informer.add_listener(
        lambda kind, old, new: heard.append((kind, str((new or old or {})["metadata"]["name"])))
    )
    informer.replace([volume("a", 1), volume("b", 1)])
    heard.clear()
    informer.replace([volume("a", 2), volume("c", 1)])
    assert sorted(heard) == [("ADDED", "c"), ("DELETED", "b"), ("MODIFIED", "a")]


def test_an_assumed_version_outlives_older_news_but_not_newer() -> None:
    informer = Informer(PERSISTENT_VOLUMES)
    informer.replace([volume("pv", 5)])
    informer.assume(volume("pv", 5, claim="data"))  # what the scheduler is about to write
    informer.event("MODIFIED", volume("pv", 5))  # a late event of the old version
    informer.replace([volume("pv", 5)])  # a relist older than the write
    assert informer.get("pv")["spec"] == {"claimRef": {"name": "data"}}
    informer.event("MODIFIED", volume("pv", 6, claim="data"))  # the API server's copy
    assert informer.get("pv")["metadata"]["resourceVersion"] == "6"


def test_restore_undoes_an_assumption_unless_newer_news_came() -> None:
    informer = Informer(PERSISTENT_VOLUMES)
    informer.replace([volume("pv", 5)])
    previous = informer.assume(assumed := volume("pv", 5, claim="data"))
    informer.restore(assumed, previous)
    assert informer.get("pv")["spec"] == {}
    previous = informer.assume(assumed := volume("pv", 5, claim="data"))
    informer.event("MODIFIED", volume("pv", 7, claim="other"))
    informer.restore(assumed, previous)
    assert informer.get("pv")["spec"] == {"claimRef": {"name": "other"}}
