"""HTTP scheduler extenders: kube-scheduler's HTTPExtender, on aiohttp and orjson.

Each call is a POST of JSON to ``urlPrefix/verb`` with the wire types of
k8s.io/kube-scheduler/extender/v1, whose Go structs carry no JSON tags: the keys are the
Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``Host``, ``Score``...),
and replies are read case-insensitively, as Go's decoder reads them.

- filter: ``ExtenderArgs`` -> ``ExtenderFilterResult``. A nodeCacheCapable extender gets
  ``NodeNames`` (and must answer with names it was given); the others get ``Nodes``, a
  NodeList of the full Node objects.
- prioritize: ``ExtenderArgs`` -> ``HostPriorityList`` (0..10 per node).
- bind: ``ExtenderBindingArgs`` -> ``ExtenderBindingResult``; the extender creates the Binding.

An extender with ``managedResources`` is asked only about pods that request (or limit) one
of them, in a container or an init container.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from secondary_scheduler.config.extenders import Extender as ExtenderConfig
from secondary_scheduler.framework.extender import ExtenderError, ExtenderFilterResult
from secondary_scheduler.framework.nodetable import NodeTable
from secondary_scheduler.framework.podinfo import PodInfo
from secondary_scheduler.httpsession import LazySession

log = logging.getLogger(__name__)

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""An extender's answer is at most this big (a filter reply echoing 5,000 full Nodes fits)."""


def ssl_context(config: ExtenderConfig) -> ssl.SSLContext | None:
    """The TLS settings of upstream's makeTransport; None: the default (system roots, full checks).

    ``enableHTTPS`` without a CA skips verifying the server's certificate, as upstream does.
    """
    tls = config.tls_config
    insecure = bool(tls and tls.insecure)
    ca_data = tls.pem("ca") if tls else b""
    ca_file = tls.ca_file if tls else ""
    has_ca = bool(ca_data or ca_file)
    if config.enable_https and not has_ca:
        insecure = True
    cert = (tls.pem("cert") or tls.cert_file) if tls else ""
    if not (insecure or has_ca or cert or (tls and tls.server_name)):
        return None
    if insecure and has_ca:
        raise ValueError(
            f"extender {config.url_prefix}: specifying a root certificates file with the insecure flag "
            "is not allowed: drop tlsConfig.insecure, or the CA"
        )
    context = ssl.create_default_context(
        cafile=ca_file if ca_file and not ca_data else None,
        cadata=ca_data.decode() if ca_data else None,
    )
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls and (tls.cert_data or tls.cert_file):
        _load_client_certificate(context, tls.pem("cert"), tls.cert_file, tls.pem("key"), tls.key_file)
    return context


def _load_client_certificate(
    context: ssl.SSLContext, cert: bytes, cert_file: str, key: bytes, key_file: str
) -> None:
    """certData/keyData win over certFile/keyFile; ssl reads only files, so inline PEM goes through one."""
    if not cert and not key:
        context.load_cert_chain(cert_file, key_file or None)
        return
    cert_pem = cert or Path(cert_file).read_bytes()
    key_pem = key or (Path(key_file).read_bytes() if key_file else b"")
    with tempfile.TemporaryDirectory(prefix="secsched-extender-") as directory:
        chain = Path(directory) / "client.pem"
        chain.touch(mode=0o600)
        chain.write_bytes(cert_pem + b"\n" + key_pem)
        context.load_cert_chain(str(chain))


def _lower_keys(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ExtenderError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return {str(key).lower(): item for key, item in value.items()}


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise ExtenderError(f"{what}: expected an object of node name to reason")
    return {str(key): item for key, item in value.items()}


class HTTPExtender:
    """One configured extender (implements ``framework.extender.Extender``)."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self._managed = frozenset(resource.name for resource in config.managed_resources)
        timeout = config.timeout
        self._session = LazySession(
            tls=ssl_context(config),
            timeout=aiohttp.ClientTimeout(total=timeout),
            headers={"Content-Type": "application/json"},
        )
        self._server_name = config.tls_config.server_name if config.tls_config else ""

    def __repr__(self) -> str:
        return f"HTTPExtender({self.config.url_prefix!r})"

    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def ignorable(self) -> bool:
        return self.config.ignorable

    @property
    def weight(self) -> int:
        return self.config.weight

    @property
    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        if not self._managed:
            return True
        spec = pod.obj.get("spec") or {}
        for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                if not self._managed.isdisjoint(resources.get(kind) or {}):
                    return True
        return False

    def _args(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> dict[str, Any]:
        """ExtenderArgs: the pod, and the nodes by name (nodeCacheCapable) or as a NodeList."""
        if self.config.node_cache_capable:
            return {"Pod": pod.obj, "Nodes": None, "NodeNames": list(nodes)}
        items = []
        for name in nodes:
            slot = table.slot_of(name)
            node = table.objects[slot] if slot is not None else None
            items.append(node if node is not None else {"metadata": {"name": name}})
        return {"Pod": pod.obj, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    async def filter(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> ExtenderFilterResult:
        verb = self.config.filter_verb
        if not verb:
            return ExtenderFilterResult(list(nodes))
        reply = _lower_keys(await self._send(verb, self._args(pod, table, nodes)), "filter result")
        error = reply.get("error")
        if error:
            raise ExtenderError(str(error))
        given = set(nodes)
        names = reply.get("nodenames")
        kept: list[str] = []
        if self.config.node_cache_capable and names is not None:
            if not isinstance(names, list):
                raise ExtenderError(f"extender {self.name!r}: NodeNames is not a list")
            for name in names:
                if name not in given:
                    raise ExtenderError(
                        f'extender "{self.name}" claims a filtered node "{name}" which is not found '
                        "in the input node list"
                    )
                kept.append(name)
        elif reply.get("nodes") is not None:
            items = _lower_keys(reply["nodes"], "filter result Nodes").get("items") or []
            for item in items:
                metadata = _lower_keys(item, "filter result node").get("metadata")
                kept.append(str(_lower_keys(metadata, "node metadata").get("name", "")))
        return ExtenderFilterResult(
            kept,
            _string_map(reply.get("failednodes"), "FailedNodes"),
            _string_map(reply.get("failedandunresolvablenodes"), "FailedAndUnresolvableNodes"),
        )

    async def prioritize(self, pod: PodInfo, table: NodeTable, nodes: Sequence[str]) -> Mapping[str, int]:
        verb = self.config.prioritize_verb
        if not verb:
            return dict.fromkeys(nodes, 0)
        reply = await self._send(verb, self._args(pod, table, nodes))
        if reply is None:
            return {}
        if not isinstance(reply, list):
            raise ExtenderError(
                f"prioritize result: expected a JSON list of {{Host, Score}}, got {reply!r:.80}"
            )
        scores: dict[str, int] = {}
        for entry in reply:
            fields = _lower_keys(entry, "HostPriority")
            score = fields.get("score", 0)
            if isinstance(score, bool) or not isinstance(score, int):
                raise ExtenderError(
                    f"cannot unmarshal {score!r} into Go struct field HostPriority.Score of type int64"
                )
            host = str(fields.get("host", ""))
            scores[host] = scores.get(host, 0) + score
        return scores

    async def bind(self, pod: PodInfo, node: str) -> None:
        if not self.config.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        body = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}
        reply = _lower_keys(await self._send(self.config.bind_verb, body), "binding result")
        if reply.get("error"):
            raise ExtenderError(str(reply["error"]))

    async def _send(self, verb: str, args: Mapping[str, Any]) -> Any:
        url = self.config.url(verb)
        body = orjson.dumps(args)
        extra: dict[str, Any] = {"server_hostname": self._server_name} if self._server_name else {}
        try:
            async with self._session().post(url, data=body, **extra) as response:
                if response.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status}")
                data = await response.content.read(MAX_REPLY_BYTES + 1)
        except ExtenderError:
            raise
        except TimeoutError as error:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from error
        except aiohttp.ClientConnectorError as error:
            reason = (
                "connection refused"
                if isinstance(error.os_error, ConnectionRefusedError)
                else str(error.os_error)
            )
            raise ExtenderError(
                f'Post "{url}": dial tcp {error.host}:{error.port}: connect: {reason}'
            ) from error
        except aiohttp.ClientError as error:
            raise ExtenderError(f'Post "{url}": {error}') from error
        if len(data) > MAX_REPLY_BYTES:
            raise ExtenderError(f"{verb} answer of extender at URL {url} is over {MAX_REPLY_BYTES} bytes")
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise ExtenderError(f"decoding the {verb} answer of extender at URL {url}: {error}") from error

    async def close(self) -> None:
        await self._session.close()


def build_extenders(configs: Sequence[ExtenderConfig]) -> list[HTTPExtender]:
    """The configured extenders in the order the scheduler calls them: ignorable ones last (as upstream)."""
    built = [HTTPExtender(config) for config in configs]
    return [ext for ext in built if not ext.ignorable] + [ext for ext in built if ext.ignorable]
