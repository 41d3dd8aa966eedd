"""Fuzzing every command with mutations of valid inputs: bad input never gets a traceback.

Valid configs, CRs, ConfigMaps, kubeconfigs, snapshots and pods are mutated (fields replaced
by hostile values, keys renamed or dropped, characters inserted, YAML alias bombs and deep
nesting appended, bytes that are not text) and fed, in-process through Click's CliRunner, to
the command that reads them. Each run must exit 0, 1 or 2, print no traceback and no
"internal error", finish within a time bound, and the whole test must stay within a memory
bound. `make test` runs a short pass (about a minute); `make fuzz` the long one
(SECSCHED_FUZZ_EXAMPLES=N examples per target).

Commands that would talk to a cluster (`snapshot`, `operator run`) get a kubeconfig mutation
and stop at the network: what is fuzzed there is reading the kubeconfig and the flags.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import shutil
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from secondary_scheduler.certs import self_signed
from secondary_scheduler.cli import snapshot_cmd
from secondary_scheduler.cli.main import cli
from secondary_scheduler.operator import controller

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "score"
DEPLOY = REPO / "deploy"
SECONDS_PER_RUN = 20
"""A run slower than this is a hang (an alias bomb expanding, a loop): the test fails."""
MAX_RSS_GROWTH_MIB = 1024

EXAMPLES_PER_TARGET = int(os.environ.get("SECSCHED_FUZZ_EXAMPLES", "120"))
"""Examples per test function: 120 in `make test` (about half a minute in all), more in `make fuzz`."""
FUZZ = settings(
    max_examples=EXAMPLES_PER_TARGET,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


# -- seeds: valid inputs -------------------------------------------------------------------


def _text(path: Path) -> str:
    return path.read_text()


VALID_CONFIG = _text(EXAMPLES / "config.yaml")
DEPLOY_CONFIGMAP = yaml.safe_load(_text(DEPLOY / "06_configmap.yaml"))
VALID_CONFIGMAP = copy.deepcopy(DEPLOY_CONFIGMAP)
VALID_CONFIGMAP["data"]["config.yaml"] = VALID_CONFIGMAP["data"]["config.yaml"].replace(
    "${PROM_URL}", "https://prometheus.example:9091"
)
RICH_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 8
percentageOfNodesToScore: 50
clientConnection: {qps: 100, burst: 200}
leaderElection: {leaderElect: true, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 5s,
  resourceName: s, resourceNamespace: kube-system}
profiles:
- schedulerName: load-aware-scheduler
  plugins:
    multiPoint:
      enabled: [{name: TargetLoadPacking, weight: 3}, {name: LowRiskOverCommitment}]
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: TargetLoadPacking
    args: {targetUtilization: 60, defaultRequestsMultiplier: "1.5",
      metricProvider: {type: Prometheus, address: "https://p:9091", insecureSkipVerify: false}}
  - name: LowRiskOverCommitment
    args: {smoothingWindowSize: 5, riskLimitWeights: {cpu: 0.5, memory: 0.5}, watcherAddress: "http://w:2020"}
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}
- schedulerName: second
"""
CERT, KEY = self_signed("fuzz", ["127.0.0.1"])


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "fuzz",
    "clusters": [
        {
            "name": "fuzz",
            "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": _b64(CERT)},
        }
    ],
    "contexts": [{"name": "fuzz", "context": {"cluster": "fuzz", "user": "fuzz", "namespace": "default"}}],
    "users": [
        {"name": "fuzz", "user": {"client-certificate-data": _b64(CERT), "client-key-data": _b64(KEY)}}
    ],
}
TOKEN_KUBECONFIG = {
    **KUBECONFIG,
    "clusters": [{"name": "fuzz", "cluster": {"server": "http://127.0.0.1:1"}}],
    "users": [{"name": "fuzz", "user": {"token": "abc.def"}}],
}

# -- mutations -----------------------------------------------------------------------------

HOSTILE_STRINGS = [
    "",
    " ",
    "${PROM_URL}",
    "$TOKEN",
    "$(VAR)",
    "REPLACE_ME_WITH_KUBE_CONFIG_PATH",
    "<your-prometheus-url>",
    "{{ .Values.x }}",
    "1e309",
    ".inf",
    "-.inf",
    ".nan",
    "NaN",
    "-1",
    "0",
    "99999999999999999999999",
    "500m",
    "1Gi",
    "1e999999999",
    "Exists",
    "Exist",
    "In",
    "Inn",
    "Gt",
    "NoSchedule",
    "default-scheduler",
    "load-aware-scheduler",
    "kube-system/x",
    "http://",
    "https://[::1",
    "prometheus:9090",
    "a" * 300,
    "ä\u00a0b",
    "\x00",
    "---",
    "*alias",
    "&anchor",
    "!!python/object:os.system",
    "- item",
    "key: value",
]
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 100, 101, 2**31, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(HOSTILE_STRINGS),
    st.text(max_size=12),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=8)), inner, max_size=3),
    ),
    max_leaves=6,
)
TEXT_INSERTS = [
    ":",
    "- ",
    " ",
    "  ",
    "\t",
    "\n",
    "{",
    "}",
    "[",
    "]",
    "&a ",
    "*a",
    "!!binary ",
    "#",
    "'",
    '"',
    "\u00a0",
    "\x00",
    "|",
    ">",
    "? ",
    "<<: ",
]
BOMB = "\nl0: &l0 [a,a,a,a,a,a,a,a,a]\n" + "".join(
    f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)
)
MERGE_BOMB = "\nm0: &m0 {a: 1, b: 2, c: 3, d: 4}\n" + "".join(
    f"m{i}: &m{i} {{" + ", ".join(f"k{j}: {{<<: *m{i - 1}}}" for j in range(6)) + "}\n" for i in range(1, 9)
)


def _paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*path, index))


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def structural(draw: st.DrawFn, seed: Any) -> str:
    """The seed's data with 1-4 fields replaced, dropped, renamed or duplicated, as YAML."""
    data = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(data))
        path = draw(st.sampled_from(paths))
        operation = draw(st.sampled_from(["replace", "replace", "drop", "rename", "wrap", "duplicate"]))
        if not path:
            data = draw(VALUES) if operation == "replace" else data
            continue
        parent, key = _parent(data, path), path[-1]
        if operation == "replace":
            parent[key] = draw(VALUES)
        elif operation == "drop":
            del parent[key]
        elif operation == "rename" and isinstance(parent, dict):
            new = draw(
                st.sampled_from(
                    [str(key).upper(), str(key)[:-1], str(key) + "s", str(key).capitalize(), "unknownField"]
                )
            )
            parent[new] = parent.pop(key)
        elif operation == "wrap":
            parent[key] = [parent[key]]
        elif operation == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@st.composite
def textual(draw: st.DrawFn, seed: str) -> str:
    """The seed's text with 1-4 characters or spans inserted, deleted or re-indented."""
    text = seed
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, max(0, len(text))))
        operation = draw(st.sampled_from(["insert", "delete", "truncate", "indent", "swap-line"]))
        if operation == "insert":
            text = text[:position] + draw(st.sampled_from(TEXT_INSERTS)) + text[position:]
        elif operation == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 12)) :]
        elif operation == "truncate":
            text = text[:position]
        elif operation == "indent":
            lines = text.split("\n")
            index = draw(st.integers(0, len(lines) - 1))
            lines[index] = draw(st.sampled_from(["", " ", "  ", "\t", "\u00a0\u00a0"])) + lines[index].lstrip(
                " "
            )
            text = "\n".join(lines)
        else:
            lines = text.split("\n")
            first, second = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[first], lines[second] = lines[second], lines[first]
            text = "\n".join(lines)
    return text


@st.composite
def hostile(draw: st.DrawFn, seed: str) -> bytes:
    """Whole-document attacks: alias bombs, deep nesting, huge or binary content."""
    kind = draw(
        st.sampled_from(["bomb", "merge-bomb", "nesting", "binary", "bom", "empty", "list", "json", "big"])
    )
    if kind == "bomb":
        return (seed + BOMB).encode()
    if kind == "merge-bomb":
        return (seed + MERGE_BOMB).encode()
    if kind == "nesting":
        depth = draw(st.integers(50, 30_000))
        return (seed + "\nx: " + "[" * depth + "]" * depth + "\n").encode()
    if kind == "binary":
        return draw(st.binary(min_size=1, max_size=64)) + b"\xff\xfe\x00"
    if kind == "bom":
        return b"\xef\xbb\xbf" + seed.encode()
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n", b"---\n", b"null\n", b"~\n", b"[]\n", b"42\n"]))
    if kind == "list":
        return yaml.safe_dump([yaml.safe_load(seed)]).encode()
    if kind == "json":
        try:
            return json.dumps(yaml.safe_load(seed)).encode()
        except (TypeError, ValueError):
            return seed.encode()
    return (seed + "\n# " + "x" * draw(st.integers(1, 4)) * (1024 * 1024)).encode()


def mutations(seed_text: str) -> st.SearchStrategy[bytes]:
    seed = yaml.safe_load(seed_text)
    return st.one_of(
        structural(seed).map(str.encode),
        structural(seed).map(str.encode),
        textual(seed_text).map(str.encode),
        hostile(seed_text),
    )


# -- running a command ---------------------------------------------------------------------


class Hang(BaseException):
    """A run took longer than SECONDS_PER_RUN (BaseException: no command may swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def alarm(_signum: int, _frame: Any) -> None:
        raise Hang(f"no answer within {seconds}s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Tally:
    runs: int = 0
    by_exit: dict[int, int] | None = None

    def add(self, code: int) -> None:
        self.runs += 1
        self.by_exit = self.by_exit or {}
        self.by_exit[code] = self.by_exit.get(code, 0) + 1


TALLY = Tally()


FAILURES = Path(os.environ.get("SECSCHED_FUZZ_FAILURES", "/tmp/secsched-fuzz-failures"))
"""Where the inputs of a failing run are copied, to rerun it by hand."""


def _keep(args: list[str]) -> Path:
    """Copy the files a failing run read into FAILURES/N, with the command line in `command`."""
    FAILURES.mkdir(parents=True, exist_ok=True)
    target = FAILURES / str(len(list(FAILURES.iterdir())))
    target.mkdir()
    for arg in args:
        candidate = Path(arg.split("=", 1)[-1])
        if candidate.is_file():
            shutil.copy(candidate, target / candidate.name)
    (target / "command").write_text(" ".join(args) + "\n")
    return target


def invoke(args: list[str], what: str) -> Result:
    try:
        with time_limit(SECONDS_PER_RUN):
            result = CliRunner().invoke(cli, args, catch_exceptions=True)
    except Hang:
        raise Hang(f"{what}: no answer within {SECONDS_PER_RUN}s; inputs kept in {_keep(args)}") from None
    output = result.output
    if (
        result.exit_code not in (0, 1, 2)
        or any(marker in output for marker in ("Traceback", "internal error", "RuntimeWarning"))
        or (result.exception is not None and not isinstance(result.exception, SystemExit))
    ):
        what = f"{what} (inputs kept in {_keep(args)})"
    assert result.exit_code in (0, 1, 2), f"{what}: exit {result.exit_code}\n{output[-3000:]}"
    assert "Traceback" not in output, f"{what}: a traceback\n{output[-3000:]}"
    assert "internal error" not in output, f"{what}: a bug\n{output[-3000:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{what}: {result.exception!r}\n{output[-3000:]}") from result.exception
    TALLY.add(result.exit_code)
    return result


@pytest.fixture(scope="module")
def rss_bound() -> Iterator[None]:
    """The whole fuzz run stays within MAX_RSS_GROWTH_MIB of where it started."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    yield
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nfuzz: {TALLY.runs} runs, exit codes {TALLY.by_exit}, peak RSS {before:.0f} -> {after:.0f} MiB")
    assert after - before < MAX_RSS_GROWTH_MIB, f"peak RSS grew from {before:.0f} to {after:.0f} MiB"


@pytest.fixture
def files(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, bytes | str], str]:
    directory = tmp_path_factory.mktemp("fuzz")

    def write(name: str, content: bytes | str) -> str:
        path = directory / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(path)

    return write


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands that would reach a cluster stop where the network starts."""

    async def no_cluster(*_args: Any, **_kwargs: Any) -> dict[str, Any]:
        return {"now": 0, "nodes": [], "pods": []}

    async def no_operator(*_args: Any, **_kwargs: Any) -> None:
        return None

    monkeypatch.setattr(snapshot_cmd, "take_snapshot", no_cluster)
    monkeypatch.setattr(controller, "run", no_operator)


pytestmark = pytest.mark.usefixtures("rss_bound")


# -- the targets ---------------------------------------------------------------------------


@given(config=st.one_of(mutations(VALID_CONFIG), mutations(RICH_CONFIG)))
def test_config_validate_and_write_config_to(files: Callable[[str, bytes | str], str], config: bytes) -> None:
    path = files("config.yaml", config)
    invoke(["config", "validate", path], "config validate")
    invoke(["scheduler", f"--config={path}", f"--write-config-to={path}.out"], "scheduler --write-config-to")


test_config_validate_and_write_config_to = FUZZ(test_config_validate_and_write_config_to)


@given(
    which=st.sampled_from(["config", "snapshot", "pod"]),
    config=mutations(VALID_CONFIG),
    snapshot=mutations(_text(EXAMPLES / "snapshot.yaml")),
    pod=mutations(_text(EXAMPLES / "pod.yaml")),
    output=st.sampled_from(["table", "json"]),
)
def test_score(
    files: Callable[[str, bytes | str], str],
    which: str,
    config: bytes,
    snapshot: bytes,
    pod: bytes,
    output: str,
) -> None:
    inputs = {
        "config": config if which == "config" else VALID_CONFIG.encode(),
        "snapshot": snapshot if which == "snapshot" else _text(EXAMPLES / "snapshot.yaml").encode(),
        "pod": pod if which == "pod" else _text(EXAMPLES / "pod.yaml").encode(),
    }
    args = ["score", "--output", output]
    for name, content in inputs.items():
        args += [f"--{name}", files(f"{name}.yaml", content)]
    invoke(args, f"score (mutated {which})")


test_score = FUZZ(test_score)


@given(
    which=st.sampled_from(["cr", "configmap"]),
    cr=mutations(_text(DEPLOY / "07_secondary-scheduler-operator.cr.yaml")),
    configmap=st.one_of(
        mutations(yaml.safe_dump(VALID_CONFIGMAP)), mutations(yaml.safe_dump(DEPLOY_CONFIGMAP))
    ),
    allow_invalid=st.booleans(),
)
def test_operator_render(
    files: Callable[[str, bytes | str], str], which: str, cr: bytes, configmap: bytes, allow_invalid: bool
) -> None:
    cr_file = files(
        "cr.yaml", cr if which == "cr" else _text(DEPLOY / "07_secondary-scheduler-operator.cr.yaml")
    )
    cm_file = files("cm.yaml", configmap if which == "configmap" else yaml.safe_dump(VALID_CONFIGMAP))
    args = ["operator", "render", "--cr", cr_file, "--configmap", cm_file]
    invoke(args + (["--allow-invalid"] if allow_invalid else []), f"operator render (mutated {which})")


test_operator_render = FUZZ(test_operator_render)


@given(
    kubeconfig=st.one_of(mutations(yaml.safe_dump(KUBECONFIG)), mutations(yaml.safe_dump(TOKEN_KUBECONFIG))),
    context=st.one_of(st.none(), st.sampled_from(["fuzz", "other", ""])),
)
def test_kubeconfig_readers(
    files: Callable[[str, bytes | str], str], kubeconfig: bytes, context: str | None
) -> None:
    path = files("kubeconfig", kubeconfig)
    extra = [f"--context={context}"] if context is not None else []
    invoke(["snapshot", f"--kubeconfig={path}", "--no-metrics", "-o", f"{path}.snap", *extra], "snapshot")
    invoke(["operator", "run", f"--kubeconfig={path}", *extra], "operator run")


test_kubeconfig_readers = FUZZ(test_kubeconfig_readers)

SCHEDULER_FLAGS = [
    "--secure-port",
    "--bind-address",
    "--tls-min-version",
    "--tls-cipher-suites",
    "--kube-api-qps",
    "--kube-api-burst",
    "--kube-api-content-type",
    "--leader-elect",
    "--leader-elect-lease-duration",
    "--leader-elect-renew-deadline",
    "--leader-elect-retry-period",
    "--leader-elect-resource-lock",
    "--profiling",
    "--logging-format",
    "--log-flush-frequency",
    "--v",
    "--version",
    "--feature-gates",
    "--tls-sni-cert-key",
    "--vmodule",
    "--contention-profiling",
    "--http2-max-streams-per-connection",
    "--permit-port-sharing",
    "--nonexistent-flag",
]
FLAG_VALUES = st.one_of(
    st.sampled_from(
        ["", "true", "false", "0", "-1", "1.5", "15s", "-5s", "1h", "x", "VersionTLS12", "json", "raw"]
    ),
    st.sampled_from(HOSTILE_STRINGS),
)


@given(flags=st.lists(st.tuples(st.sampled_from(SCHEDULER_FLAGS), FLAG_VALUES), max_size=4))
def test_scheduler_flags(files: Callable[[str, bytes | str], str], flags: list[tuple[str, str]]) -> None:
    assume(all("\x00" not in value for _, value in flags))
    out = files("written.yaml", "")
    args = ["scheduler", *(f"{flag}={value}" for flag, value in flags), f"--write-config-to={out}"]
    invoke(args, "scheduler flags")


test_scheduler_flags = FUZZ(test_scheduler_flags)
