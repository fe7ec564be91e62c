"""The emulator's own label selectors, as the Kubernetes API server reads them.

Two forms reach the emulator: the query string of `?labelSelector=` (`a=b,c!=d,e in (x,y),
f notin (z),g,!h,n>3`) and the LabelSelector object of specs (`matchLabels` and
`matchExpressions`). Both become one tuple of requirements, sorted by key as Kubernetes sorts
them, that matches a label map and renders back to the query string.

Written for the emulator alone: the product parses selectors its own way (tidal.domain), so a
misreading on either side shows up as a disagreement in the end-to-end tests instead of being
confirmed by the same code. The behaviour follows k8s.io/apimachinery/pkg/labels (the token rules,
the empty value in `in ()`, `>`/`<` on integers) and metav1.LabelSelectorAsSelector.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class SelectorError(ValueError):
    """A selector that does not parse or holds an invalid requirement; says which part."""


class Op(StrEnum):
    """A requirement's operator, spelled as the query string writes it."""

    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER = ">"
    LESS = "<"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


_SET_OPS = (Op.IN, Op.NOT_IN)
_ONE_VALUE_OPS = (Op.EQUALS, Op.DOUBLE_EQUALS, Op.NOT_EQUALS, Op.GREATER, Op.LESS)
_NUMERIC_OPS = (Op.GREATER, Op.LESS)
# matchExpressions operators of a LabelSelector object.
_OBJECT_OPS = {
    "In": Op.IN,
    "NotIn": Op.NOT_IN,
    "Exists": Op.EXISTS,
    "DoesNotExist": Op.DOES_NOT_EXIST,
}

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64 = re.compile(r"^[+-]?[0-9]+$")


def _key_problem(key: str) -> str | None:
    """Why `key` is not a qualified name (`[dns-subdomain/]name`), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "the prefix must be a lowercase DNS subdomain of at most 253 characters"
    if "/" in prefix:
        return "a key has at most one '/'"
    if not name or len(name) > 63 or not _NAME.match(name):
        return "the name must be 1-63 alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def _value_ok(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME.match(value)))


def _integer(text: str) -> int | None:
    if not _INT64.match(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True)
class Requirement:
    """One `key op values` term; built only through `requirement()`, which validates it."""

    key: str
    op: Op
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op is Op.EXISTS:
            return self.key in labels
        if self.op is Op.DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if self.op in (Op.NOT_IN, Op.NOT_EQUALS):
            return value is None or value not in self.values
        if value is None:
            return False
        if self.op in _NUMERIC_OPS:
            return _compare(self.op, _integer(value), int(self.values[0]))
        return value in self.values

    def __str__(self) -> str:
        if self.op is Op.EXISTS:
            return self.key
        if self.op is Op.DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.op in _SET_OPS:
            return f"{self.key} {self.op} ({','.join(self.values)})"
        return f"{self.key}{self.op}{self.values[0]}"


def _compare(op: Op, have: int | None, bound: int) -> bool:
    if have is None:
        return False
    return have > bound if op is Op.GREATER else have < bound


def requirement(key: str, op: Op, values: list[str] | tuple[str, ...] = ()) -> Requirement:
    """A validated requirement (the rules of apimachinery's NewRequirement); values are kept as
    a sorted set, as Kubernetes keeps them."""
    problem = _key_problem(key)
    if problem:
        raise SelectorError(f"invalid label key {key!r}: {problem}")
    distinct = tuple(sorted(set(values)))
    if op in _SET_OPS and not distinct:
        raise SelectorError(f"{key} {op}: needs at least one value")
    if op in _ONE_VALUE_OPS and len(distinct) != 1:
        raise SelectorError(f"{key}{op}: needs exactly one value, not {list(distinct)}")
    if op in (Op.EXISTS, Op.DOES_NOT_EXIST) and distinct:
        raise SelectorError(f"{key}: a {op.name} requirement takes no values")
    if op in _NUMERIC_OPS and _integer(distinct[0]) is None:
        raise SelectorError(f"{key}{op}{distinct[0]}: the value must be an integer")
    for value in distinct:
        if not _value_ok(value):
            raise SelectorError(
                f"invalid label value {value!r} for {key!r}: at most 63 alphanumerics, '-', '_'"
                " or '.', alphanumeric at both ends"
            )
    return Requirement(key, op, distinct)


Selector = tuple[Requirement, ...]


def _sorted(requirements: list[Requirement]) -> Selector:
    return tuple(sorted(requirements, key=lambda r: r.key))


def render(selector: Selector) -> str:
    """The query string of a selector (the empty string selects everything)."""
    return ",".join(str(r) for r in selector)


def matches(selector: Selector, labels: Mapping[str, str] | None) -> bool:
    """Whether the labels satisfy every requirement (the empty selector matches everything)."""
    have = labels or {}
    return all(r.matches(have) for r in selector)


# -- the query string ------------------------------------------------------------------------

_SYMBOLS = ("!=", "==", "=", "!", "(", ")", ",", ">", "<")
_SPECIAL = frozenset("=!(),><")
_SPACE = frozenset(" \t\r\n")
_WORD = "word"
_END = "end of string"


def _tokens(text: str) -> list[str]:
    """Symbols and words; a word is a run of anything that is neither a symbol nor a space."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] in _SPACE:
            i += 1
            continue
        symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
        if symbol:
            out.append(symbol)
            i += len(symbol)
            continue
        start = i
        while i < len(text) and text[i] not in _SPECIAL and text[i] not in _SPACE:
            i += 1
        out.append(text[start:i])
    return out


def _is_word(token: str) -> bool:
    return token not in _SYMBOLS and token != _END


_WORD_OPS = {"in": Op.IN, "notin": Op.NOT_IN}
_SYMBOL_OPS = {s: Op(s) for s in ("=", "==", "!=", ">", "<")}


class _Reader:
    """Reads the tokens of one query string; every method consumes what it reads."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else _END

    def take(self) -> str:
        token = self.peek()
        self.pos += 1
        return token

    def fail(self, found: str, expected: str) -> SelectorError:
        return SelectorError(f"found '{found}', expected: {expected} (in {self.text!r})")

    def selector(self) -> Selector:
        out: list[Requirement] = []
        if self.peek() == _END:
            return ()
        while True:
            out.append(self.requirement())
            after = self.take()
            if after == _END:
                return _sorted(out)
            if after != ",":
                raise self.fail(after, "',' or end of string")
            if not (_is_word(self.peek()) or self.peek() == "!"):
                raise self.fail(self.peek(), "a key or '!' after ','")

    def requirement(self) -> Requirement:
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.take()
        if not _is_word(key):
            raise self.fail(key, "a label key")
        if negated:
            return requirement(key, Op.DOES_NOT_EXIST)
        if self.peek() in (_END, ","):
            return requirement(key, Op.EXISTS)
        token = self.take()
        op = _WORD_OPS.get(token) or _SYMBOL_OPS.get(token)
        if op is None:
            raise self.fail(token, "one of in, notin, =, ==, !=, >, <")
        values = self.value_set() if op in _SET_OPS else [self.exact_value()]
        return requirement(key, op, values)

    def exact_value(self) -> str:
        if self.peek() in (_END, ","):
            return ""
        token = self.take()
        if not _is_word(token):
            raise self.fail(token, "a value")
        return token

    def value_set(self) -> list[str]:
        """`( a, b )`; an empty slot (`()`, `(,a)`, `(a,,b)`, `(a,)`) is the empty value."""
        opening = self.take()
        if opening != "(":
            raise self.fail(opening, "'('")
        values: list[str] = []
        previous = "("
        while (token := self.take()) != ")":
            if _is_word(token) and _is_word(previous):
                raise self.fail(token, "',' or ')'")
            if token == "," and previous in ("(", ","):
                values.append("")
            elif not _is_word(token) and token != ",":
                raise self.fail(token, "a value, ',' or ')'")
            if _is_word(token):
                values.append(token)
            previous = token
        return [*values, ""] if previous in ("(", ",") else values


def parse(text: str) -> Selector:
    """The selector of a `labelSelector=` query string."""
    return _Reader(text).selector()


# -- the LabelSelector object ----------------------------------------------------------------


def from_object(selector: Mapping[str, Any]) -> Selector:
    """The selector of a LabelSelector object (`matchLabels` AND every `matchExpressions`
    item), as metav1.LabelSelectorAsSelector builds it; an empty object selects everything."""
    labels = selector.get("matchLabels") or {}
    out = [requirement(str(k), Op.EQUALS, [str(v)]) for k, v in labels.items()]
    for expr in selector.get("matchExpressions") or []:
        operator = expr.get("operator")
        if operator not in _OBJECT_OPS:
            raise SelectorError(f"{operator!r} is not a valid label selector operator")
        values = [str(v) for v in expr.get("values") or []]
        out.append(requirement(str(expr.get("key", "")), _OBJECT_OPS[operator], values))
    return _sorted(out)


def object_matches(selector: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    """Whether a LabelSelector object selects the labels; an invalid one selects nothing (as
    Karmada's matchers treat a selector that does not convert)."""
    try:
        return matches(from_object(selector), labels)
    except SelectorError:
        return False
