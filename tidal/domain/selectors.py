"""Kubernetes label selectors: the query syntax, matching, and the LabelSelector object form.

The query syntax is the one of `?labelSelector=` and `kubectl -l`:
`a=b,c!=d,e in (x,y),f notin (z),g,!h` (`==` is accepted for `=`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]
# Longest first: "a!=b" is not "a!" = "b", "a==b" is "a" = "b".
_EQUALITY_TOKENS: tuple[tuple[str, Operator], ...] = (("!=", "!="), ("==", "="), ("=", "="))

_KEY = re.compile(
    r"^([a-z0-9A-Z]([-a-z0-9A-Z.]*[a-z0-9A-Z])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


class SelectorError(ValueError):
    """A selector that does not parse; the message names the offending part."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator == "=":
            return present and labels[self.key] == self.values[0]
        if self.operator == "!=":
            return not present or labels[self.key] != self.values[0]
        if self.operator == "in":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values  # notin

    def to_query(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("=", "!="):
            return f"{self.key}{self.operator}{self.values[0]}"
        return f"{self.key} {self.operator} ({','.join(self.values)})"


Selector = tuple[Requirement, ...]


def _split_top_level(query: str) -> list[str]:
    """Split on commas that are not inside a `( ... )` value set."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(query):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced ')' at position {i} in {query!r}")
        elif ch == "," and depth == 0:
            parts.append(query[start:i])
            start = i + 1
    if depth:
        raise SelectorError(f"unclosed '(' in {query!r}")
    parts.append(query[start:])
    return parts


def is_label_key(key: str) -> bool:
    """A valid label key: an optional DNS-subdomain prefix and `/`, then a name."""
    return bool(key) and bool(_KEY.match(key))


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_VALUE.match(value))


def _check_key(key: str, part: str) -> str:
    if not key or not _KEY.match(key):
        raise SelectorError(f"invalid label key {key!r} in {part!r}")
    return key


def _check_value(value: str, part: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(f"invalid label value {value!r} in {part!r}")
    return value


_SET_RE = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


def _parse_part(part: str) -> Requirement:
    text = part.strip()
    if not text:
        raise SelectorError("empty requirement (stray comma?)")
    set_match = _SET_RE.match(text)
    if set_match:
        raw = [v.strip() for v in set_match["values"].split(",")]
        values = tuple(_check_value(v, part) for v in raw if v != "" or len(raw) == 1)
        op: Operator = "in" if set_match["op"] == "in" else "notin"
        return Requirement(_check_key(set_match["key"], part), op, values)
    if text.startswith("!"):
        return Requirement(_check_key(text[1:].strip(), part), "!")
    for token, operator in _EQUALITY_TOKENS:
        if token in text:
            key, _, value = text.partition(token)
            return Requirement(
                _check_key(key.strip(), part),
                operator,
                (_check_value(value.strip(), part),),
            )
    if any(c in text for c in " ()<>"):
        raise SelectorError(f"cannot parse requirement {part!r}")
    return Requirement(_check_key(text, part), "exists")


def parse(query: str) -> Selector:
    """Parse a selector query; the empty string selects everything."""
    if not query.strip():
        return ()
    return tuple(_parse_part(p) for p in _split_top_level(query))


def matches(selector: str | Sequence[Requirement], labels: Mapping[str, str] | None) -> bool:
    """Whether `labels` satisfy every requirement of the selector (query string or parsed)."""
    reqs = parse(selector) if isinstance(selector, str) else selector
    labels = labels or {}
    return all(r.matches(labels) for r in reqs)


_EXPR_OPS: dict[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def _field(expr: Any, name: str) -> Any:
    return expr.get(name) if isinstance(expr, Mapping) else getattr(expr, name, None)


def from_label_selector(
    match_labels: Mapping[str, str] | None, match_expressions: Iterable[Any] | None = None
) -> Selector:
    """The parsed form of a LabelSelector (`matchExpressions` items as dicts or objects)."""
    reqs = [Requirement(k, "=", (str(v),)) for k, v in sorted((match_labels or {}).items())]
    for expr in match_expressions or ():
        operator = _field(expr, "operator")
        if operator not in _EXPR_OPS:
            raise SelectorError(f"unknown matchExpressions operator {operator!r}")
        values = tuple(str(v) for v in (_field(expr, "values") or ()))
        op = _EXPR_OPS[operator]
        if op in ("in", "notin") and not values:
            raise SelectorError(f"operator {operator} needs at least one value")
        reqs.append(Requirement(str(_field(expr, "key")), op, values))
    return tuple(reqs)


def selector_to_query(
    match_labels: Mapping[str, str] | None, match_expressions: Iterable[Any] | None = None
) -> str:
    """The `labelSelector=` query string for a LabelSelector."""
    return ",".join(r.to_query() for r in from_label_selector(match_labels, match_expressions))


def label_selector_matches(
    selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None
) -> bool:
    """Match a LabelSelector dict (`{matchLabels, matchExpressions}`); None selects nothing,
    an empty selector everything, as in Kubernetes."""
    if selector is None:
        return False
    reqs = from_label_selector(selector.get("matchLabels"), selector.get("matchExpressions"))
    return matches(reqs, labels)
