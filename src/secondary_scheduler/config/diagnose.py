"""Validate a part of the file against its model and word each failure as something to fix.

pydantic's messages ("Input should be a valid integer") name the type in Python terms and
never the fix; here every error names what YAML expects and what it got, unknown fields get
a suggestion, and a level full of keys that belong deeper gets one "indentation was lost"
hint instead of leaving people to infer it from a dozen errors.
"""

from __future__ import annotations

import copy as copy_module
import difflib
import math
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from secondary_scheduler.config.base import ArgsContext
from secondary_scheduler.config.errors import Findings, YamlPath, format_path
from secondary_scheduler.config.suggest import FieldIndex, allowed_fields, suggest_field

M = TypeVar("M", bound=BaseModel)

_LOST_INDENTATION_AFTER = 3

_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping (key: value lines)",
    "model_type": "a mapping (key: value lines)",
    "model_attributes_type": "a mapping (key: value lines)",
}
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


def validate_model(
    model: type[M],
    data: Any,
    at: YamlPath,
    findings: Findings,
    context: ArgsContext | None = None,
    *,
    fields: FieldIndex,
) -> M | None:
    """`data` (found at `at` in the file) as a `model`, or None after recording every error.

    `fields`: every field path of the document (`PluginCatalog.fields`), where an unknown
    field is looked for at other levels.

    If unknown fields are the only errors, they are recorded and the model is returned
    without them, so the checks that need it still run (the load fails all the same).
    """
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        details = error.errors(include_url=False)
    misplaced: dict[YamlPath, list[str]] = {}
    for detail in details:
        loc = tuple(detail["loc"])
        path = (*at, *loc)
        if detail["type"] == "extra_forbidden":
            key = str(loc[-1])
            suggestion = suggest_field(key, path[:-1], allowed_fields(model, loc[:-1]), fields)
            findings.error(path, f"unknown field `{key}`: {suggestion.text}")
            if suggestion.deeper:
                misplaced.setdefault(path[:-1], []).append(key)
        else:
            findings.value_error(path, describe(detail))
    for parent, keys in misplaced.items():
        if len(keys) >= _LOST_INDENTATION_AFTER:
            findings.error(parent, _lost_indentation(parent, keys))
    if any(detail["type"] != "extra_forbidden" for detail in details):
        return None
    if context is not None:
        context.warnings.clear()  # the retry validates everything again
    try:
        return model.model_validate(_without(data, [tuple(d["loc"]) for d in details]), context=context)
    except ValidationError:
        return None


def error_messages(model: type[BaseModel], error: ValidationError, at: YamlPath = ()) -> list[str]:
    """Each error of validating a document part (found at ``at``) as ``model``: `path: message`.

    For documents other than a KubeSchedulerConfiguration (a SecondaryScheduler CR): worded as
    ``validate_model`` words them, but an unknown field is only matched against ``model``.
    """
    messages = []
    for detail in error.errors(include_url=False):
        loc = tuple(detail["loc"])
        path = (*at, *loc)
        if detail["type"] == "extra_forbidden":
            key = str(loc[-1])
            suggestion = suggest_field(key, path[:-1], allowed_fields(model, loc[:-1]), None)
            message = f"unknown field `{key}`: {suggestion.text}"
        else:
            message = describe(detail)
        messages.append(f"{format_path(path)}: {message}")
    return messages


def _without(data: Any, locs: list[tuple[str | int, ...]]) -> Any:
    """A copy of `data` without the keys at `locs`."""
    copy = copy_module.deepcopy(data)
    for loc in locs:
        parent = copy
        for part in loc[:-1]:
            parent = parent[part]
        del parent[loc[-1]]
    return copy


def describe(detail: ErrorDetails) -> str:
    kind, value = detail["type"], detail.get("input")
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    if kind == "missing":
        return f"`{detail['loc'][-1]}` is required"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_show(value)}{_type_fix(kind, value)}"
    if kind == "literal_error":
        return f"expected {ctx['expected']}, got {_show(value)}{_literal_fix(ctx['expected'], value)}"
    if kind in _BOUNDS:
        limit = next(ctx[key] for key in ("gt", "ge", "lt", "le") if key in ctx)
        return f"must be {_BOUNDS[kind]} {limit}, got {_show(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        return f"needs at least {ctx['min_length']} item(s)"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    return str(detail["msg"])


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "nothing (null)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _type_fix(kind: str, value: Any) -> str:
    if kind == "string_type" and isinstance(value, int | float | bool):
        return f': quote it, e.g. "{_show(value)}"'
    if kind in ("int_type", "float_type") and isinstance(value, str) and _looks_numeric(value):
        return ": remove the quotes"
    if kind in ("bool_type",) and isinstance(value, str) and value.lower() in ("true", "false"):
        return ": remove the quotes"
    return ""


def _looks_numeric(text: str) -> bool:
    """A quoted number that, unquoted, would be one ("1e309" would not: it overflows)."""
    try:
        number = float(text)
    except ValueError:
        return False
    return math.isfinite(number)


def _literal_fix(expected: str, value: Any) -> str:
    options = re.findall(r"'([^']*)'", expected)
    if not isinstance(value, str):
        return ""
    same = [option for option in options if option.lower() == value.lower()]
    close = same or difflib.get_close_matches(value, options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _lost_indentation(parent: YamlPath, keys: list[str]) -> str:
    where = f"under {format_path(parent)}" if parent else "at the top level"
    shown = ", ".join(keys[:5]) + (", …" if len(keys) > 5 else "")
    return (
        f"{len(keys)} keys {where} belong deeper ({shown}): the indentation was probably lost when "
        f"the YAML was copied (e.g. from a web page). Re-indent them as the message for each key says"
    )
