"""Read one YAML document safely, keeping positions for error messages.

Guards against hostile files: size limit, UTF-8 only, nesting depth, alias expansion (bombs),
one document per file, plain data only (no custom tags). Returns both the ruamel tree (which
knows line/column of every key and item) and the same data as plain Python values.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
)

from tidal.loading.bounds import check_bounds
from tidal.loading.errors import YamlProblem

# A hand-written schedule is a few kilobytes; the full parse costs about 2 s per 100 KB.
MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 64
MAX_NODES = 200_000  # after alias expansion


class _TextDatesConstructor(RoundTripConstructor):
    """Dates stay text (as they will in JSON): "2026-13-45" is then a located model error."""


_TextDatesConstructor.add_constructor(
    "tag:yaml.org,2002:timestamp", _TextDatesConstructor.construct_yaml_str
)


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.Constructor = _TextDatesConstructor
    return yaml


@dataclass(frozen=True)
class YamlDocument:
    tree: Any  # ruamel CommentedMap/CommentedSeq/scalar, with .lc positions
    data: Any  # plain dict/list/str/int/float/bool/None


def read_yaml_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> YamlDocument:
    """Read and parse `path`; raise YamlProblem with a position and a fix on any problem."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise YamlProblem(
                1,
                1,
                f"file is {size} bytes, more than the limit of {max_bytes}; "
                "split it or remove what is not a schedule",
            )
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise YamlProblem(
            1,
            1,
            f"cannot read the file ({exc.strerror or exc}); check the path and its permissions",
        ) from exc
    if len(raw) > max_bytes:
        raise YamlProblem(1, 1, f"file is larger than the limit of {max_bytes} bytes; split it")
    return parse_yaml_bytes(raw)


def parse_yaml_bytes(raw: bytes) -> YamlDocument:
    text = _decode(raw)
    check_bounds(text)
    _scan_events(text)
    try:
        tree = _yaml().load(text)
    except MarkedYAMLError as exc:
        raise _marked_problem(exc) from exc
    except YAMLError as exc:
        raise YamlProblem(1, 1, f"invalid YAML: {_one_line(str(exc))}") from exc
    except RecursionError as exc:
        raise YamlProblem(
            1, 1, f"nesting deeper than {MAX_DEPTH} levels; flatten the file"
        ) from exc
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        # e.g. a complex (list or mapping) key, which ruamel cannot hash
        raise YamlProblem(
            1, 1, f"unsupported YAML ({_one_line(str(exc))}); use plain text keys and plain values"
        ) from exc
    if tree is None:
        raise YamlProblem(1, 1, "the file is empty; write one TidalSchedule document")
    budget = [MAX_NODES]
    return YamlDocument(tree=tree, data=_plain(tree, 0, budget, (1, 1)))


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise YamlProblem(
            line, col, f"byte 0x{raw[exc.start]:02x} is not UTF-8; save the file as UTF-8"
        ) from exc


def _scan_events(text: str) -> None:
    """Walk the event stream (no recursion) to refuse deep nesting and extra documents."""
    depth = 0
    documents = 0
    try:
        for event in YAML(typ="rt", pure=True).parse(io.StringIO(text)):
            if isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    mark = event.start_mark
                    raise YamlProblem(
                        mark.line + 1,
                        mark.column + 1,
                        "a second YAML document; put one schedule per file",
                    )
            elif isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise YamlProblem(
                        mark.line + 1,
                        mark.column + 1,
                        f"nesting deeper than {MAX_DEPTH} levels; flatten the file",
                    )
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            elif isinstance(event, AliasEvent):
                pass  # expansion is bounded in _plain
    except MarkedYAMLError as exc:
        raise _marked_problem(exc) from exc
    except YAMLError as exc:
        raise YamlProblem(1, 1, f"invalid YAML: {_one_line(str(exc))}") from exc


def _marked_problem(exc: MarkedYAMLError) -> YamlProblem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = _one_line(exc.problem or "")
    context = _one_line(exc.context or "")
    if "'\\t'" in problem or "\t" in problem:
        return YamlProblem(
            line, col, "a tab character where YAML needs spaces; indent with spaces only"
        )
    if "duplicate key" in problem:
        return YamlProblem(
            line,
            col,
            f"invalid YAML: {problem.split(' with value')[0]}; "
            "each key may appear once per mapping",
        )
    if "expected a single document" in context or "another document" in problem:
        return YamlProblem(line, col, "a second YAML document; put one schedule per file")
    where = f" ({context}" if context else ""
    if context and exc.context_mark is not None and exc.context_mark is not mark:
        where += f" at line {exc.context_mark.line + 1}"
    where += ")" if context else ""
    return YamlProblem(line, col, f"invalid YAML: {problem}{where}; fix the syntax here")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def position(node: Any, key_or_index: Any, fallback: tuple[int, int]) -> tuple[int, int]:
    """1-based position of a key in a mapping or an item in a sequence."""
    try:
        if isinstance(node, CommentedMap):
            line, col = node.lc.key(key_or_index)
        elif isinstance(node, CommentedSeq):
            line, col = node.lc.item(key_or_index)
        else:
            return fallback
        return int(line) + 1, int(col) + 1
    except (KeyError, IndexError, TypeError, AttributeError):
        return fallback


def _plain_map(
    node: CommentedMap, depth: int, budget: list[int], where: tuple[int, int]
) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    for key in node:
        at = position(node, key, where)
        if isinstance(key, bool) or key is None or not isinstance(key, str | int | float):
            raise YamlProblem(*at, f"mapping key {key!r} is not text; use a plain key")
        plain_key = str(key) if isinstance(key, str) else key
        result[plain_key] = _plain(node[key], depth + 1, budget, at)
    return result


def _plain(node: Any, depth: int, budget: list[int], where: tuple[int, int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise YamlProblem(
            *where,
            f"the document expands to more than {MAX_NODES} values "
            "(anchors/aliases?); remove the aliases",
        )
    if depth > MAX_DEPTH:
        raise YamlProblem(
            *where, f"nesting deeper than {MAX_DEPTH} levels (a recursive alias?); flatten the file"
        )
    if isinstance(node, CommentedMap):
        return _plain_map(node, depth, budget, where)
    if isinstance(node, CommentedSeq):
        return [
            _plain(item, depth + 1, budget, position(node, index, where))
            for index, item in enumerate(node)
        ]
    if node is None or isinstance(node, bool):
        return node
    for kind in (str, int, float):  # plain values of ruamel's own subclasses
        if isinstance(node, kind):
            return kind(node)
    if isinstance(node, datetime | date):
        return node.isoformat()
    raise YamlProblem(
        *where,
        f"unsupported YAML value of type {type(node).__name__} "
        "(a custom tag?); write plain text, numbers, lists and mappings",
    )
