"""secondary_scheduler.safeyaml: every YAML reader is bounded in size, alias expansion and depth."""

from __future__ import annotations

import resource
import time

import pytest
import yaml

from secondary_scheduler import safeyaml
from secondary_scheduler.config import ConfigError, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def laughs(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def merges(levels: int = 9) -> str:
    lines = ["m0: &m0 {a: 1, b: 2, c: 3}"]
    lines += [
        f"m{i}: &m{i} {{" + ", ".join(f"k{j}: {{<<: *m{i - 1}}}" for j in range(8)) + "}"
        for i in range(1, levels)
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("bomb", [laughs(), merges()], ids=["nested-lists", "merge-keys"])
def test_alias_bombs_stop_before_expanding(bomb: str) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(safeyaml.YamlLimitError, match="excessive aliasing"):
        safeyaml.safe_load(bomb, max_bytes=safeyaml.MIB)
    assert time.monotonic() - started < 1
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB


def test_the_config_loader_reports_a_bomb_with_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(HEADER + laughs(), "bomb.yaml", catalog=IN_TREE_CATALOG)
    (problem,) = caught.value.problems
    assert problem.line is not None and "aliases" in problem.message


def test_ordinary_anchors_still_load() -> None:
    text = "base: &base {cpu: 1, memory: 2}\nfirst: *base\nsecond: {<<: *base, cpu: 3}\n"
    assert safeyaml.safe_load(text, max_bytes=1000) == {
        "base": {"cpu": 1, "memory": 2},
        "first": {"cpu": 1, "memory": 2},
        "second": {"cpu": 3, "memory": 2},
    }


def test_recursive_aliases_and_deep_nesting_are_refused() -> None:
    with pytest.raises(safeyaml.YamlLimitError, match="refers to a node that contains it"):
        safeyaml.safe_load("a: &a [*a]\n", max_bytes=1000)
    with pytest.raises(safeyaml.YamlLimitError, match="nested more than 100 levels"):
        safeyaml.safe_load("[" * 50_000 + "]" * 50_000, max_bytes=safeyaml.MIB)


def test_size_is_checked_before_parsing(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(safeyaml.YamlLimitError, match="at most 1 KiB is read"):
        safeyaml.safe_load("x" * 2048, max_bytes=1024)
    with pytest.raises(ConfigError, match="at most 1 MiB"):
        load_config(HEADER + "#" * (1024 * 1024), "big.yaml", catalog=IN_TREE_CATALOG)


def test_numbers_are_read_as_kubernetes_reads_them() -> None:
    """go-yaml through JSON: 1e3 is a number; .inf, .nan and 1e309 cannot be carried at all."""
    assert safeyaml.safe_load("a: 1e3\nb: '1e3'\nc: 1.5\n", max_bytes=100) == {
        "a": 1000.0,
        "b": "1e3",
        "c": 1.5,
    }
    for text, message in ((".inf", "JSON"), ("-.inf", "JSON"), (".nan", "JSON"), ("1e309", "out of range")):
        with pytest.raises(safeyaml.YamlLimitError, match=message):
            safeyaml.safe_load(f"a: {text}\n", max_bytes=100)


def test_describe_error_gives_the_line() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        safeyaml.safe_load("a: 1\nb: [\n", max_bytes=100)
    line, message = safeyaml.describe_error(caught.value)
    assert line == 3 and message.startswith("YAML syntax error")


def test_document_lines() -> None:
    document = safeyaml.load_document("a:\n  b:\n  - x\n  - y: 1\n", max_bytes=100)
    assert document.line("a", "b", 1, "y") == 4
    assert document.line("a", "missing") == 2
