"""README.md and docs/: every relative link resolves, and the front page stays a front page.

A link to a file must name one in the repository; a link with ``#anchor`` must name a heading of
the target page as GitHub renders it (lower case, punctuation dropped, spaces to hyphens, ``-1``,
``-2``... for repeats). Links in fenced code blocks and inline code are not links; web addresses
are not checked (no network in tests).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FRONT_PAGE_MAX_LINES = 250

_FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def prose(text: str) -> str:
    """The page without its code: fenced blocks and inline code spans."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: Markdown links and code marks dropped, then lower case,
    every character but letters, digits, spaces, hyphens and underscores removed, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = _FENCE.sub("", page.read_text())
    seen: Counter[str] = Counter()
    found = set(_HTML_ANCHOR.findall(text))
    for match in _HEADING.finditer(text):
        base = slug(match.group(2))
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return frozenset(found)


def links(page: Path) -> list[str]:
    return _LINK.findall(prose(page.read_text()))


def shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def broken_links(page: Path) -> list[str]:
    problems = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:...
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            problems.append(f"{target}: no file {shown(resolved)}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading with the anchor #{anchor} in {shown(resolved)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    """Guards the guard: a missing file and a missing anchor are found; code is not read as links."""
    (tmp_path / "other.md").write_text("# Other page\n\n## The `score` command: why\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[ok](other.md#the-score-command-why) [here](#title) [gone](missing.md)\n"
        "[bad](other.md#nowhere) `[not a link](nowhere.md)`\n\n```\n[nor](this.md)\n```\n"
        "[web](https://example.com/x)\n"
    )
    assert [problem.split(":")[0] for problem in broken_links(page)] == ["missing.md", "other.md#nowhere"]


def test_slugs_are_githubs() -> None:
    assert slug("`kubectl apply -f deploy/`") == "kubectl-apply--f-deploy"
    assert slug("`secsched score`: why a VM landed") == "secsched-score-why-a-vm-landed"
    assert slug("Install on Kubernetes (Helm)") == "install-on-kubernetes-helm"
    assert slug("kube-scheduler 1.34's plugins here") == "kube-scheduler-134s-plugins-here"


def test_the_readme_is_a_front_page() -> None:
    """At most ~250 lines, naming the two commands the house rules require, and pointing at the docs."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= FRONT_PAGE_MAX_LINES
    assert "make demo" in text and "make test" in text
    assert "docs/README.md" in links(REPO / "README.md")


def test_every_page_in_docs_is_in_its_index() -> None:
    """docs/README.md lists every page (a page nobody links to is a page nobody finds)."""
    index = {target.partition("#")[0] for target in links(REPO / "docs" / "README.md")}
    pages = {page.name for page in PAGES if page.parent.name == "docs" and page.name != "README.md"}
    assert sorted(pages - index) == []
