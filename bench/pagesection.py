"""One ``## `` section of a Markdown page rewritten whole, the rest of the page kept as it is.

docs/reliability.md holds two such sections, each written by the run that measured it (`make
chaos`, `make soak`); docs/benchmarks.md has delimited sections of its own (``bench.report``).
"""

from __future__ import annotations

from pathlib import Path


def write_section(page: Path, heading: str, body: str) -> None:
    """Replace what is under ``heading`` in ``page`` (up to the next ``## `` heading) with ``body``."""
    text = page.read_text()
    start = text.find(heading)
    if start < 0:
        raise ValueError(f"{page} has no {heading!r} heading to write the figures under")
    body_start = start + len(heading)
    following = text.find("\n## ", body_start)
    rest = text[following:] if following >= 0 else ""
    page.write_text(f"{text[:body_start]}\n\n{body.strip()}\n{rest}")
