"""Fixtures shared by every test: one local cluster per session, a namespace per test.

The cluster is real (etcd, kube-apiserver, controller-manager, KWOK, Prometheus). A test
that needs it never skips: if the cluster cannot start, the session fails and says why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from secondary_scheduler.kube.client import ApiClient, ApiError
from secsched_devtools.cluster.localcluster import ClusterOptions, LocalCluster

CLUSTER_NODES = 5


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    options = ClusterOptions(name=f"pytest-{os.getpid()}", nodes=CLUSTER_NODES, zones=3, scrape_interval="2s")
    with LocalCluster(options) as local:
        yield local


@pytest.fixture
async def api(cluster: LocalCluster) -> AsyncIterator[ApiClient]:
    async with cluster.api() as client:
        yield client


@asynccontextmanager
async def fresh_namespace(api: ApiClient, prefix: str = "t") -> AsyncIterator[str]:
    """A namespace of its own for one test, deleted (with everything in it) afterwards."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    await api.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    try:
        yield name
    finally:
        try:
            await api.delete(f"/api/v1/namespaces/{name}")
        except ApiError as error:
            if not error.not_found:
                raise


@pytest.fixture
async def namespace(api: ApiClient) -> AsyncIterator[str]:
    async with fresh_namespace(api) as name:
        yield name
