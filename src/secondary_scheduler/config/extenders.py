"""Scheduler extenders in the configuration (`extenders:`), as kube-scheduler 1.34 reads them.

An extender is an HTTP service the scheduler asks, per pod, to filter the feasible nodes,
to score them, and optionally to bind the pod. The fields, their defaults and the checks
are upstream's (apis/config Extender, validateExtenders, NewHTTPExtender); the wire calls
live in `secondary_scheduler.scheduler.extenders`.

Stricter than upstream, because the scheduler could never use such an extender: a
`urlPrefix` that is not an http(s) URL with a host, and TLS data that is not base64 or not
PEM. `preemptVerb` is refused: preemption does not call extenders here yet.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from secondary_scheduler.apivalidation import qualified_name_problem
from secondary_scheduler.config.base import ConfigModel, GoDuration
from secondary_scheduler.config.errors import Findings, YamlPath

if TYPE_CHECKING:
    from secondary_scheduler.config.suggest import FieldIndex  # suggest reads the model, which imports us

DEFAULT_HTTP_TIMEOUT = 5.0
"""Seconds; upstream's DefaultExtenderTimeout, used when httpTimeout is unset or 0."""

_INT64_MAX = 2**63 - 1


def _base64_bytes(value: object) -> object:
    """Go's []byte in JSON/YAML: a base64 string (standard alphabet, padded)."""
    if not isinstance(value, str):
        raise ValueError(f"expected base64 text (a PEM file encoded with `base64 -w0`), got {value!r}")
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(
            f"not valid base64 ({error}): encode the PEM file with `base64 -w0 FILE`, "
            "or give its path in certFile/keyFile/caFile instead"
        ) from error
    return value


class ExtenderTLSConfig(ConfigModel):
    """`tlsConfig`: how to reach an `enableHTTPS` extender. `*Data` are base64 PEM and win over `*File`."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""

    @field_validator("cert_data", "key_data", "ca_data", mode="before")
    @classmethod
    def _pem_base64(cls, value: object) -> object:
        return _base64_bytes(value)

    def pem(self, which: str) -> bytes:
        """The PEM bytes of `cert`, `key` or `ca` given inline (empty if only a file is given)."""
        data: str = getattr(self, f"{which}_data")
        return base64.b64decode(data) if data else b""


class ExtenderManagedResource(ConfigModel):
    """An extended resource the extender manages; pods requesting none of them skip the extender."""

    name: str
    ignored_by_scheduler: bool = False


class Extender(ConfigModel):
    """One entry of `extenders`. An empty verb means the extender does not offer that call."""

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = Field(0, ge=-(2**63), le=_INT64_MAX)
    bind_verb: str = ""
    enable_https: bool = Field(False, alias="enableHTTPS")
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: GoDuration = DEFAULT_HTTP_TIMEOUT
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = Field(default_factory=list)
    ignorable: bool = False

    @field_validator("http_timeout")
    @classmethod
    def _default_timeout(cls, value: float) -> float:
        return value or DEFAULT_HTTP_TIMEOUT  # upstream: 0 means DefaultExtenderTimeout

    @property
    def timeout(self) -> float | None:
        """Seconds per call; None when httpTimeout is negative (Go's http.Client then has no deadline)."""
        return self.http_timeout if self.http_timeout > 0 else None

    @property
    def name(self) -> str:
        """How logs and score explanations name it: its urlPrefix, as upstream's Name()."""
        return self.url_prefix

    def url(self, verb: str) -> str:
        """`urlPrefix` + "/" + verb, trailing slashes of the prefix trimmed (as upstream's send)."""
        return self.url_prefix.rstrip("/") + "/" + verb


def validate_extenders(raw: Any, findings: Findings, fields: FieldIndex) -> tuple[Extender, ...]:
    """Each `extenders` entry as an Extender, recording upstream's checks (and ours) as errors.

    `fields`: the document's field paths, for suggesting where an unknown field belongs.
    """
    from secondary_scheduler.config.diagnose import validate_model  # diagnose imports model, which imports us

    if not isinstance(raw, list):
        return ()  # DocumentInput reports the type error
    extenders: list[tuple[int, Extender]] = []
    for index, item in enumerate(raw):
        extender = validate_model(Extender, item, ("extenders", index), findings, fields=fields)
        if extender is not None:
            extenders.append((index, extender))
    binders = 0
    managed: set[str] = set()
    for index, extender in extenders:
        at: YamlPath = ("extenders", index)
        _check_url(extender, at, findings)
        if extender.prioritize_verb and extender.weight <= 0:
            findings.error(
                (*at, "weight"),
                f"Invalid value: {extender.weight}: must have a positive weight applied to it "
                "(prioritizeVerb is set): its scores are multiplied by it",
            )
        if extender.bind_verb:
            binders += 1
        tls = extender.tls_config
        if tls is not None and tls.insecure and (tls.ca_file or tls.ca_data):
            findings.error(
                (*at, "tlsConfig", "insecure"),
                "specifying a root certificates file with the insecure flag is not allowed "
                "(kube-scheduler would not start): drop insecure, or the CA",
            )
        if extender.preempt_verb:
            findings.error(
                (*at, "preemptVerb"),
                "not supported by this scheduler: preemption does not call extenders here "
                "(upstream's ProcessPreemption); remove preemptVerb, or use the upstream kube-scheduler",
            )
        for position, resource in enumerate(extender.managed_resources):
            path: YamlPath = (*at, "managedResources", position, "name")
            problem = qualified_name_problem(resource.name)
            if problem is not None:
                findings.error(path, f"Invalid value: {resource.name!r}: {problem}")
            elif not _is_extended_resource(resource.name):
                findings.error(
                    path,
                    f"Invalid value: {resource.name!r}: is an invalid extended resource name "
                    "(it needs a domain outside kubernetes.io, e.g. example.com/gpu)",
                )
            if resource.name in managed:
                findings.error(
                    path, f"Invalid value: {resource.name!r}: duplicate extender managed resource name"
                )
            managed.add(resource.name)
    if binders > 1:
        findings.error(
            ("extenders",),
            f"Invalid value: found {binders} extenders implementing bind: "
            "only one extender can implement bind",
        )
    return tuple(extender for _, extender in extenders)


def _check_url(extender: Extender, at: YamlPath, findings: Findings) -> None:
    url = extender.url_prefix
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as error:
        findings.error(
            (*at, "urlPrefix"),
            f"{url!r} is not a URL ({error}): write e.g. http://my-extender:8888/scheduler",
        )
        return
    if not url:
        findings.error(
            (*at, "urlPrefix"), "required: the extender's base URL, e.g. http://my-extender:8888/scheduler"
        )
    elif parts.scheme not in ("http", "https") or not host:
        findings.error(
            (*at, "urlPrefix"),
            f"{url!r} is not an http:// or https:// URL with a host: write e.g. http://my-extender:8888/scheduler",
        )
    elif parts.scheme == "http" and extender.enable_https:
        findings.warn(
            (*at, "enableHTTPS"),
            "the urlPrefix is http://, so calls go out in plain HTTP whatever enableHTTPS says "
            "(as kube-scheduler): write https:// in urlPrefix",
        )
    if extender.http_timeout < 0:
        findings.warn(
            (*at, "httpTimeout"),
            "negative: calls to this extender never time out (as kube-scheduler's HTTP client reads it)",
        )


def _is_extended_resource(name: str) -> bool:
    """v1helper.IsExtendedResourceName: outside the kubernetes.io domains, not a `requests.` quota name."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.")


def ignored_by_scheduler(extenders: Sequence[Extender]) -> list[str]:
    """The managed resources NodeResourcesFit must not check (ignoredByScheduler), in config order."""
    return [
        resource.name
        for extender in extenders
        for resource in extender.managed_resources
        if resource.ignored_by_scheduler
    ]
