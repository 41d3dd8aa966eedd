"""Helpers shared by the config loader tests: documents from snippets, and their problems."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from secondary_scheduler.config import ConfigError, LoadResult, Problem, load_config
from secondary_scheduler.plugins.catalog import IN_TREE_CATALOG

FIXTURES = Path(__file__).parent / "fixtures"


def document(body: str = "", version: str = "v1") -> str:
    """A KubeSchedulerConfiguration of `version` with the (dedented) `body` after its header."""
    header = f"apiVersion: kubescheduler.config.k8s.io/{version}\nkind: KubeSchedulerConfiguration\n"
    return header + textwrap.dedent(body)


@pytest.fixture
def load() -> Callable[..., LoadResult]:
    """load(body, version="v1") -> LoadResult of a document with that body."""

    def _load(body: str = "", version: str = "v1") -> LoadResult:
        return load_config(document(body, version), "test.yaml", catalog=IN_TREE_CATALOG)

    return _load


@pytest.fixture
def errors() -> Callable[..., list[Problem]]:
    """errors(body, version="v1") -> the problems of a document that must fail to load."""

    def _errors(body: str = "", version: str = "v1") -> list[Problem]:
        with pytest.raises(ConfigError) as caught:
            load_config(document(body, version), "test.yaml", catalog=IN_TREE_CATALOG)
        return caught.value.problems

    return _errors
