"""Scheduler extenders: the config, the HTTP client against a real aiohttp server, and the cycle."""

from __future__ import annotations

import socket
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from click.testing import CliRunner
from tests.unit.framework.kubeobjects import container, default_profile, make_node, pod_info, table_of

from secondary_scheduler.cli.main import cli
from secondary_scheduler.config import ConfigError, dump_config_yaml, load_config
from secondary_scheduler.config.extenders import Extender as ExtenderConfig
from secondary_scheduler.framework import CycleState, Framework, Handle, NodeTable, PodInfo
from secondary_scheduler.framework.extender import EXTENDER_NAME, ExtenderError, ExtenderFilterResult
from secondary_scheduler.framework.status import Code
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG
from secondary_scheduler.plugins.registry import in_tree_registry
from secondary_scheduler.scheduler.extenders import HTTPExtender, build_extenders, ssl_context
from secondary_scheduler.scheduler.schedule_one import bind, schedule_pod_with_extenders

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _problems(body: str) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        load_config(HEADER + body, "test.yaml", catalog=IN_TREE_CATALOG)
    return {problem.path: problem.message for problem in caught.value.problems}


def _config(**fields: Any) -> ExtenderConfig:
    return ExtenderConfig.model_validate(fields)


# -- config ----------------------------------------------------------------------------------


def test_config_defaults_and_dump() -> None:
    config = load_config(
        HEADER + "extenders: [{urlPrefix: 'http://ext:8888/x', filterVerb: filter}]\n",
        catalog=IN_TREE_CATALOG,
    ).config
    (extender,) = config.extenders
    assert extender.http_timeout == 5.0  # upstream's DefaultExtenderTimeout
    assert (extender.weight, extender.node_cache_capable, extender.ignorable) == (0, False, False)
    assert extender.url("filter") == "http://ext:8888/x/filter"
    dumped = dump_config_yaml(config)
    assert "urlPrefix: http://ext:8888/x" in dumped and "httpTimeout: 5s" in dumped
    reloaded = load_config(dumped, catalog=IN_TREE_CATALOG)
    assert reloaded.config.extenders == config.extenders  # the dump reads back the same


def test_config_upstream_checks() -> None:
    problems = _problems(
        "extenders:\n"
        "- {urlPrefix: 'http://a', prioritizeVerb: prioritize, bindVerb: bind}\n"
        "- {urlPrefix: 'http://b', bindVerb: bind, managedResources: [{name: cpu}, {name: example.com/x}]}\n"
        "- {urlPrefix: 'http://c', managedResources: [{name: example.com/x}]}\n"
    )
    assert "must have a positive weight" in problems["extenders[0].weight"]
    assert "only one extender can implement bind" in problems["extenders"]
    assert "invalid extended resource name" in problems["extenders[1].managedResources[0].name"]
    assert "duplicate extender managed resource name" in problems["extenders[2].managedResources[0].name"]


def test_config_refuses_what_cannot_work() -> None:
    problems = _problems(
        "extenders:\n"
        "- {urlPrefix: 'extender:8888', filterVerb: f}\n"
        "- {urlPrefix: 'http://b', preemptVerb: preempt}\n"
        "- {urlPrefix: 'https://c', tlsConfig: {caData: 'not base64!'}}\n"
        "- {urlPrefix: 'https://d', enableHttps: true}\n"
    )
    assert "not an http:// or https:// URL" in problems["extenders[0].urlPrefix"]
    assert "not supported" in problems["extenders[1].preemptVerb"]
    assert "not valid base64" in problems["extenders[2].tlsConfig.caData"]
    assert "did you mean `enableHTTPS`" in problems["extenders[3].enableHttps"]


def test_ignored_by_scheduler_reaches_node_resources_fit() -> None:
    gpu = "{name: example.com/gpu, ignoredByScheduler: true}"
    body = f"extenders: [{{urlPrefix: 'http://a', managedResources: [{gpu}]}}]\n"
    profile = load_config(HEADER + body, catalog=IN_TREE_CATALOG).config.profiles[0]
    assert profile.plugin_args["NodeResourcesFit"].model_dump(by_alias=True)["ignoredResources"] == [
        "example.com/gpu"
    ]
    without_fit = "profiles: [{plugins: {multiPoint: {disabled: [{name: NodeResourcesFit}]}}}]\n"
    assert "can't find NodeResourcesFitArgs" in _problems(body + without_fit)["profiles[0]"]


def test_ignorable_extenders_are_called_last() -> None:
    configs = [_config(urlPrefix=f"http://{name}", ignorable=name == "a") for name in "abc"]
    assert [extender.name for extender in build_extenders(configs)] == ["http://b", "http://c", "http://a"]


# -- the HTTP client -------------------------------------------------------------------------


@dataclass
class Recorded:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    filter_reply: dict[str, Any] = field(default_factory=dict)
    status: int = 200


@pytest.fixture
async def server() -> AsyncIterator[tuple[TestServer, Recorded]]:
    recorded = Recorded()

    async def handle(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        verb = request.match_info["verb"]
        recorded.calls.append((verb, body))
        if recorded.status != 200:
            return web.Response(status=recorded.status)
        names = body.get("NodeNames") or [
            item["metadata"]["name"] for item in (body.get("Nodes") or {}).get("items", [])
        ]
        if verb == "filter":
            reply = recorded.filter_reply or {
                "NodeNames": [n for n in names if n != "n1"],
                "FailedNodes": {"n1": "no"},
            }
        elif verb == "prioritize":
            reply = [{"Host": name, "Score": 10 if name == "n2" else 1} for name in names]
        else:
            reply = {"Error": ""}
        return web.Response(body=orjson.dumps(reply), content_type="application/json")

    app = web.Application()
    app.router.add_post("/ext/{verb}", handle)
    test_server = TestServer(app)
    await test_server.start_server()
    yield test_server, recorded
    await test_server.close()


def _client(test_server: TestServer, **fields: Any) -> HTTPExtender:
    url = str(test_server.make_url("/ext/"))
    fields = {
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 1,
        "bindVerb": "bind",
        **fields,
    }
    return HTTPExtender(_config(urlPrefix=url, **fields))


def _nodes() -> NodeTable:
    return table_of([make_node(f"n{index}") for index in range(3)])


async def test_client_sends_node_names_when_node_cache_capable(server: tuple[TestServer, Recorded]) -> None:
    test_server, recorded = server
    client = _client(test_server, nodeCacheCapable=True)
    try:
        result = await client.filter(pod_info("p"), _nodes(), ["n0", "n1", "n2"])
        assert (list(result.nodes), dict(result.failed)) == (["n0", "n2"], {"n1": "no"})
        assert await client.prioritize(pod_info("p"), _nodes(), ["n0", "n2"]) == {"n0": 1, "n2": 10}
        await client.bind(pod_info("p"), "n2")
    finally:
        await client.close()
    (verb, args), _, (_, binding) = recorded.calls
    assert verb == "filter" and args["NodeNames"] == ["n0", "n1", "n2"] and args["Nodes"] is None
    assert args["Pod"]["metadata"]["name"] == "p"
    assert binding == {"PodName": "p", "PodNamespace": "default", "PodUID": "uid-p", "Node": "n2"}


async def test_client_sends_full_nodes_otherwise(server: tuple[TestServer, Recorded]) -> None:
    test_server, recorded = server
    recorded.filter_reply = {
        "nodes": {"items": [{"metadata": {"name": "n2"}}]},
        "failedAndUnresolvableNodes": {"n0": "x"},
    }
    client = _client(test_server)
    try:
        result = await client.filter(pod_info("p"), _nodes(), ["n0", "n2"])
    finally:
        await client.close()
    assert list(result.nodes) == ["n2"] and dict(result.failed_and_unresolvable) == {
        "n0": "x"
    }  # any key case
    args = recorded.calls[0][1]
    assert args["NodeNames"] is None
    assert [node["status"]["allocatable"]["cpu"] for node in args["Nodes"]["items"]] == ["4", "4"]


async def test_client_errors_read_as_upstream(server: tuple[TestServer, Recorded]) -> None:
    test_server, recorded = server
    client = _client(test_server, nodeCacheCapable=True)
    try:
        recorded.filter_reply = {"Error": "boom"}
        with pytest.raises(ExtenderError, match=r"^boom$"):
            await client.filter(pod_info("p"), _nodes(), ["n0"])
        recorded.filter_reply = {"NodeNames": ["elsewhere"]}
        with pytest.raises(ExtenderError, match='claims a filtered node "elsewhere" which is not found'):
            await client.filter(pod_info("p"), _nodes(), ["n0"])
        recorded.status = 500
        with pytest.raises(
            ExtenderError, match=r"^failed filter with extender at URL http://.*/ext/filter, code 500$"
        ):
            await client.filter(pod_info("p"), _nodes(), ["n0"])
    finally:
        await client.close()


async def test_client_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = HTTPExtender(_config(urlPrefix=f"http://127.0.0.1:{port}", filterVerb="filter"))
    try:
        with pytest.raises(
            ExtenderError, match=f'^Post "http://127.0.0.1:{port}/filter": dial tcp .*connection refused$'
        ):
            await client.filter(pod_info("p"), _nodes(), ["n0"])
    finally:
        await client.close()


def test_interest_in_managed_resources() -> None:
    client = HTTPExtender(_config(urlPrefix="http://a", managedResources=[{"name": "example.com/gpu"}]))
    assert not client.is_interested(pod_info("plain"))
    gpu = container(requests={"example.com/gpu": "1"})
    assert client.is_interested(pod_info("gpu", containers=[gpu]))
    assert client.is_interested(pod_info("init", initContainers=[gpu], containers=[container()]))
    assert HTTPExtender(_config(urlPrefix="http://a")).is_interested(pod_info("plain"))


# -- the scheduling cycle --------------------------------------------------------------------


@dataclass
class FakeExtender:
    """An in-process extender: rejects ``rejects``, scores ``scores``; raises when ``broken``."""

    name: str = "http://fake"
    ignorable: bool = False
    weight: int = 1
    rejects: Mapping[str, str] = field(default_factory=dict)
    scores: Mapping[str, int] = field(default_factory=dict)
    broken: bool = False
    is_filter: bool = True
    is_prioritizer: bool = True
    is_binder: bool = False
    calls: list[str] = field(default_factory=list)

    def is_interested(self, pod: PodInfo) -> bool:
        return True

    async def filter(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> ExtenderFilterResult:
        self.calls.append("filter")
        if self.broken:
            raise ExtenderError("extender down")
        return ExtenderFilterResult([n for n in nodes if n not in self.rejects], dict(self.rejects))

    async def prioritize(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> Mapping[str, int]:
        self.calls.append("prioritize")
        if self.broken:
            raise ExtenderError("extender down")
        return {node: self.scores.get(node, 0) for node in nodes}

    async def bind(self, pod: PodInfo, node: str) -> None:
        self.calls.append(f"bind {node}")
        if self.broken:
            raise ExtenderError("extender down")


def default_framework(extenders: Sequence[FakeExtender]) -> Framework:
    return Framework(default_profile(), in_tree_registry(), Handle(), extenders=extenders)


def _table() -> NodeTable:
    return table_of([make_node(f"n{index}", cpu="8") for index in range(4)])


async def test_extender_scores_are_weighted_and_scaled() -> None:
    fake = FakeExtender(weight=3, scores={"n1": 2})
    framework = default_framework(extenders=[fake])
    result = await schedule_pod_with_extenders(
        framework, pod_info("p", requests={"cpu": "1"}), _table(), explain=True
    )
    assert result.explanation is not None
    explained = result.explanation.as_dict()
    scores = {node: explained[node]["plugins"]["extender http://fake"]["weighted"] for node in explained}
    assert scores == {"n0": 0, "n1": 2 * 3 * 10, "n2": 0, "n3": 0}  # score x weight x (100 / 10)
    assert result.node_name == "n1" and fake.calls == ["filter", "prioritize"]


async def test_extender_rejections_in_the_fit_error() -> None:
    fake = FakeExtender(rejects={f"n{index}": "extender says no" for index in range(4)})
    result = await schedule_pod_with_extenders(default_framework(extenders=[fake]), pod_info("p"), _table())
    assert result.status.code == Code.UNSCHEDULABLE
    assert result.message.startswith("0/4 nodes are available: 4 extender says no.")
    assert result.diagnosis is not None and EXTENDER_NAME in result.diagnosis.unschedulable_plugins
    assert fake.calls == ["filter"]


async def test_one_node_left_is_not_prioritized() -> None:
    fake = FakeExtender(rejects={"n0": "no", "n1": "no", "n2": "no"})
    result = await schedule_pod_with_extenders(default_framework(extenders=[fake]), pod_info("p"), _table())
    assert result.node_name == "n3" and fake.calls == ["filter"]


async def test_extender_errors() -> None:
    broken = FakeExtender(broken=True)
    result = await schedule_pod_with_extenders(default_framework(extenders=[broken]), pod_info("p"), _table())
    assert result.status.code == Code.ERROR and result.message == "extender down"
    ignorable = FakeExtender(broken=True, ignorable=True)
    result = await schedule_pod_with_extenders(
        default_framework(extenders=[ignorable]), pod_info("p"), _table()
    )
    assert result.node_name is not None  # skipped in filter; its prioritize error only drops its scores
    only_prioritize = FakeExtender(broken=True, is_filter=False)
    result = await schedule_pod_with_extenders(
        default_framework(extenders=[only_prioritize]), pod_info("p"), _table()
    )
    assert result.node_name is not None


async def test_bind_goes_through_the_binder_extender() -> None:
    binder = FakeExtender(is_binder=True)
    framework = default_framework(extenders=[binder])
    assert (await bind(framework, CycleState(), pod_info("p"), "n1")).is_success
    assert binder.calls == ["bind n1"]
    binder.broken = True
    status = await bind(framework, CycleState(), pod_info("p"), "n1")
    assert status.code == Code.ERROR and status.message == "extender down"


def test_score_refuses_a_config_with_extenders(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "score"
    config = (
        examples / "config.yaml"
    ).read_text() + "extenders: [{urlPrefix: 'http://ext:8888', filterVerb: f}]\n"
    (tmp_path / "config.yaml").write_text(config)
    result = CliRunner().invoke(
        cli,
        [
            "score",
            "--config",
            str(tmp_path / "config.yaml"),
            "--snapshot",
            str(examples / "snapshot.yaml"),
            "--pod",
            str(examples / "pod.yaml"),
        ],
    )
    assert result.exit_code == 1
    assert "extenders: `score` does not call scheduler extenders" in result.stderr


def test_tls_options_as_upstream_make_transport() -> None:
    assert ssl_context(_config(urlPrefix="http://a")) is None  # the default transport
    context = ssl_context(_config(urlPrefix="https://a", enableHTTPS=True))
    assert context is not None and context.verify_mode == ssl.CERT_NONE  # enableHTTPS without a CA
    named = ssl_context(_config(urlPrefix="https://a", tlsConfig={"serverName": "ext.example.com"}))
    assert named is not None and named.verify_mode == ssl.CERT_REQUIRED
    body = "extenders: [{urlPrefix: 'https://a', tlsConfig: {insecure: true, caFile: /ca.crt}}]\n"
    assert "insecure flag is not allowed" in _problems(body)["extenders[0].tlsConfig.insecure"]
