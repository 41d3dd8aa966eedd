"""The API layer against the real kube-apiserver: paging, large watch frames, errors, request logs."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from secondary_scheduler.kube.client import HTTP_LOGGER, ApiClient, ApiError, ApiUnavailable, resource_path
from secondary_scheduler.kube.kubeconfig import Connection
from secsched_devtools.cluster.localcluster import LocalCluster
from secsched_devtools.demo.operatorflow import service_account_token


def _config_map(name: str, value: str = "x") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"value": value}}


async def test_list_all_follows_continue_tokens(api: ApiClient, namespace: str) -> None:
    path = resource_path("v1", "configmaps", namespace)
    for index in range(5):
        await api.create(path, _config_map(f"cm-{index}"))
    listing = await api.list_all(path, {"labelSelector": ""}, page=2)
    names = {item["metadata"]["name"] for item in listing["items"]}
    assert {f"cm-{index}" for index in range(5)} <= names


async def test_a_watch_event_larger_than_a_read_buffer_arrives_whole(api: ApiClient, namespace: str) -> None:
    """One watch frame of ~600 KiB (a Node with many images can be this large)."""
    path = resource_path("v1", "configmaps", namespace)
    start = (await api.get(path))["metadata"]["resourceVersion"]
    big = "v" * (600 * 1024)
    await api.create(path, _config_map("big", big))

    async def first_added() -> dict[str, object]:
        async for event in api.watch(path, {"resourceVersion": start, "timeoutSeconds": 30}):
            if event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "big":
                return dict(event["object"])
        raise AssertionError("the watch ended without the ADDED event")

    obj = await asyncio.wait_for(first_added(), 30)
    assert obj["data"] == {"value": big}


async def test_an_error_answer_is_an_api_error_with_the_status_fields(api: ApiClient, namespace: str) -> None:
    path = resource_path("v1", "configmaps", namespace)
    await api.create(path, _config_map("twice"))
    with pytest.raises(ApiError) as raised:
        await api.create(path, _config_map("twice"))
    assert raised.value.conflict and raised.value.reason == "AlreadyExists"
    with pytest.raises(ApiError) as missing:
        await api.get(resource_path("v1", "configmaps", namespace, "absent"))
    assert missing.value.not_found and "absent" in missing.value.message


async def test_no_server_is_api_unavailable_after_the_retries() -> None:
    async with ApiClient(Connection(server="https://127.0.0.1:1"), max_retry_seconds=0.5) as client:
        with pytest.raises(ApiUnavailable, match="GET /api/v1/nodes"):
            await client.get("/api/v1/nodes")
        with pytest.raises(ApiUnavailable, match="watch /api/v1/nodes"):
            async for _ in client.watch("/api/v1/nodes", {}):
                pass


async def test_every_request_is_logged_at_debug(
    api: ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger=HTTP_LOGGER):
        await api.get(resource_path("v1", "configmaps", namespace), {"limit": 1})
    lines = [record.getMessage() for record in caplog.records if record.name == HTTP_LOGGER]
    assert any(
        line.startswith("GET https://") and f"/namespaces/{namespace}/configmaps?limit=1 200 OK in " in line
        for line in lines
    ), lines


async def test_a_token_file_is_read_once_a_minute_not_per_request(
    api: ApiClient, namespace: str, cluster: LocalCluster, tmp_path: Path
) -> None:
    """A projected token rotates well within its life; re-reading the file per request is wasted I/O."""
    token_file = tmp_path / "token"
    token_file.write_text(await service_account_token(api, namespace, "default"))
    ca_file = str(cluster.pki.ca_cert)
    connection = Connection(server=cluster.api_url, ca_file=ca_file, token_file=str(token_file))
    own_namespace = resource_path("v1", "namespaces", name=namespace)
    async with ApiClient(connection) as client:
        with pytest.raises(ApiError) as first:
            await client.get(own_namespace)
        assert first.value.status == 403  # authenticated as the ServiceAccount, which may not read it
        token_file.write_text("not-a-token")
        with pytest.raises(ApiError) as second:
            await client.get(own_namespace)
        assert second.value.status == 403  # the token read a moment ago, not the file's new text
    async with ApiClient(connection, max_retry_seconds=0) as fresh:
        with pytest.raises(ApiError) as rejected:
            await fresh.get(own_namespace)
        assert rejected.value.status == 401  # a new client reads the file anew
