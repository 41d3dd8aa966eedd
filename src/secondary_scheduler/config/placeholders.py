"""Placeholders that were never filled in: `${PROM_URL}`, `$PROM_TOKEN`, `REPLACE_ME_WITH_…`.

The documents users follow ship configs with placeholders and a note to replace them; a
config that still has one would start and then fail far from the cause (a Prometheus
address of "${PROM_URL}"), so they are errors naming the placeholder and how to fill it.
Every style found in the wild is recognised: shell variables (`${X}`, `$X`), Kubernetes'
`$(X)`, Helm and Go templates (`{{ .Values.x }}`), scheduler-plugins' documentation
(`REPLACE_ME_WITH_KUBE_CONFIG_PATH`, `<Replace with Watcher Address>`), angle-bracket
placeholders (`<your-prometheus-url>`, `<PROM_URL>`) and `CHANGE_ME`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from secondary_scheduler.config.errors import YamlPath

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_OTHER_STYLES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)"),
        "a Kubernetes $(VAR) reference, which only a pod's env expands",
    ),
    (re.compile(r"\{\{[^}]*\}\}"), "a template expression (Helm or Go) left unrendered"),
    (
        re.compile(r"\bREPLACE[_-]?(?:ME|WITH)[A-Za-z0-9_-]*|\bCHANGE[_-]?ME\b", re.IGNORECASE),
        "a placeholder from the documentation",
    ),
    (
        re.compile(r"<(?:[A-Za-z][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+)*)>"),
        "an angle-bracket placeholder from the documentation",
    ),
)


def find_placeholders(data: Any, path: YamlPath = ()) -> Iterator[tuple[YamlPath, str]]:
    """Every string value that still holds a placeholder, with the error message for it."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from find_placeholders(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from find_placeholders(value, (*path, index))
    elif isinstance(data, str):
        matches = list(_PLACEHOLDER.finditer(data))
        if matches:
            yield path, _message([m.group(0) for m in matches], [m.group(1) or m.group(2) for m in matches])
            return
        for pattern, what in _OTHER_STYLES:
            match = pattern.search(data)
            if match is not None:
                yield (
                    path,
                    (
                        f"`{match.group(0)}` is {what}: replace it with the real value before loading, "
                        f"e.g. `sed -i 's|{match.group(0)}|<value>|' config.yaml`"
                    ),
                )
                return


def _message(tokens: list[str], names: list[str]) -> str:
    unique = list(dict.fromkeys(tokens))
    written = ", ".join(f"`{token}`" for token in unique)
    what = "is a shell placeholder" if len(unique) == 1 else "are shell placeholders"
    variables = " and ".join(dict.fromkeys(names))
    first, first_token = names[0], tokens[0]
    return (
        f"{written} {what} left unsubstituted: set {variables} and "
        f"substitute before loading, e.g. `export {first}=...; envsubst < config.yaml > config.out.yaml`"
        f" or `sed -i 's|{first_token}|<value>|' config.yaml`"
    )
