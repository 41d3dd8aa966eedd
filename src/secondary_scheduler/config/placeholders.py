"""Shell placeholders (`${PROM_URL}`, `$PROM_TOKEN`) that were never substituted.

The documents users follow ship configs with placeholders and a note to replace them; a
config that still has one would start and then fail far from the cause (a Prometheus
address of "${PROM_URL}"), so they are errors naming the variable and how to substitute it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from secondary_scheduler.config.errors import YamlPath

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}|\$([A-Za-z_][A-Za-z0-9_]*)")


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
