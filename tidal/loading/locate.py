"""Turn pydantic error locations into positions in the YAML file and one-line messages."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from tidal.domain import schedule as model
from tidal.domain.schedule import SEMANTIC_ERROR
from tidal.loading.yamlfile import position

Loc = tuple[str | int, ...]


def locate(tree: Any, loc: Sequence[str | int]) -> tuple[tuple[int, int], Loc]:
    """Position of the deepest key of `loc` present in the tree, and the path that was found.

    Parts that are not in the data (pydantic's union tags, a missing key) are skipped, so a
    missing key points at its parent mapping.
    """
    node = tree
    where = (1, 1)
    found: list[str | int] = []
    for part in loc:
        in_map = isinstance(node, CommentedMap) and _has_key(node, part)
        in_seq = isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node)
        if in_map or in_seq:
            where = position(node, part, where)
            node = node[part]
            found.append(part)
    return where, tuple(found)


def _has_key(node: CommentedMap, part: str | int) -> bool:
    try:
        return part in node
    except TypeError:
        return False


def dotted(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(document)"


def _all_aliases() -> list[str]:
    names: set[str] = set()
    for value in vars(model).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
            for name, info in value.model_fields.items():
                names.add(info.alias or name)
    return sorted(names)


_KNOWN_KEYS = _all_aliases()


_EXPECTED = {
    "bool": "true or false",
    "int": "a whole number",
    "float": "a number",
    "string": "text",
    "str": "text",
    "list": "a list",
    "dict": "a mapping",
    "model": "a mapping",
    "date": "a date (YYYY-MM-DD)",
}


def _friendly(error: ErrorDetails) -> str:
    kind = error["type"]
    loc = error["loc"]
    value = error.get("input")
    ctx = error.get("ctx", {})
    if kind == "missing":
        return f"missing required key {loc[-1]!r}; add it"
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), _KNOWN_KEYS, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "remove it"
        return f"unknown key {loc[-1]!r}; {hint}"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        return f"{value!r} is not allowed; use one of {ctx.get('expected', '')}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length', 1)} item(s); add one"
    if kind in ("string_type", "str_type") and isinstance(value, int | float | bool):
        return f'expected text, got {value!r}; quote it: "{value}"'
    if kind == "list_type" and isinstance(value, str):
        return f"expected a list, got {value!r}; write [{value}]"
    for prefix, expected in _EXPECTED.items():
        if kind.startswith(prefix + "_") and (kind.endswith("_type") or "pars" in kind):
            return f"expected {expected}, got {_short(value)}"
    message = str(error["msg"]).rstrip(".").replace("Input should be", "must be")
    return f"{message}; got {_short(value)}"


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, dict | list) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def validation_problems(exc: ValidationError, tree: Any) -> list[tuple[int, int, str]]:
    """Every pydantic error as (line, col, one-line message naming the place)."""
    problems: list[tuple[int, int, str]] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if error["type"] == SEMANTIC_ERROR:
            for suffix, message in error.get("ctx", {}).get("problems", []):
                problems.append(_place(tree, loc + tuple(suffix), str(message)))
            continue
        problems.append(_place(tree, loc, _friendly(error)))
    return problems


def _place(tree: Any, loc: Loc, message: str) -> tuple[int, int, str]:
    (line, col), found = locate(tree, loc)
    return line, col, f"{dotted(found)}: {message}"
