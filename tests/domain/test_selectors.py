"""Label selector parsing and matching, in the query syntax and the LabelSelector form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidal.domain.selectors import (
    Requirement,
    SelectorError,
    label_selector_matches,
    matches,
    parse,
    selector_to_query,
)

LABELS = {"app": "web", "tier": "front", "atms-app/teamid": "1005"}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("tier in (front,back)", True),
        ("tier in (back)", False),
        ("tier notin (back)", True),
        ("missing notin (x)", True),
        ("missing in (x)", False),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("atms-app/teamid=1005,tier in (front), !missing", True),
        ("atms-app/teamid=1005,app=db", False),
    ],
)
def test_query_matches(query: str, expected: bool) -> None:
    """Every operator of the query syntax matches as Kubernetes defines it."""
    assert matches(query, LABELS) is expected


def test_parse_keeps_commas_inside_sets() -> None:
    """Commas inside `( ... )` belong to the value set, not to the requirement list."""
    assert parse("a in (x, y),b") == (
        Requirement("a", "in", ("x", "y")),
        Requirement("b", "exists"),
    )


@pytest.mark.parametrize("bad", ["a in (x", "a)", "a=b,", "a b", "=x", "a=b=c d", "bad key!x=1"])
def test_bad_queries_raise_selector_error(bad: str) -> None:
    """Malformed selectors raise SelectorError naming the offending part."""
    with pytest.raises(SelectorError):
        parse(bad)


def test_selector_to_query_round_trips() -> None:
    """A LabelSelector's query string selects the same objects as the object form."""
    exprs = [
        {"key": "tier", "operator": "In", "values": ["front", "back"]},
        {"key": "gone", "operator": "DoesNotExist"},
        {"key": "app", "operator": "Exists"},
        {"key": "zone", "operator": "NotIn", "values": ["z1"]},
    ]
    query = selector_to_query({"atms-app/teamid": "1005"}, exprs)
    assert query == "atms-app/teamid=1005,tier in (front,back),!gone,app,zone notin (z1)"
    assert matches(query, LABELS)
    assert label_selector_matches(
        {"matchLabels": {"atms-app/teamid": "1005"}, "matchExpressions": exprs}, LABELS
    )


def test_label_selector_none_and_empty() -> None:
    """A nil LabelSelector selects nothing; an empty one selects everything."""
    assert label_selector_matches(None, LABELS) is False
    assert label_selector_matches({}, LABELS) is True


def test_unknown_operator_is_rejected() -> None:
    """matchExpressions with an unknown operator raise SelectorError."""
    with pytest.raises(SelectorError):
        selector_to_query({}, [{"key": "a", "operator": "Near", "values": ["b"]}])


_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


@given(st.dictionaries(_names, _names, max_size=4), st.dictionaries(_names, _names, max_size=4))
def test_match_labels_query_equals_subset(selector: dict[str, str], labels: dict[str, str]) -> None:
    """matchLabels as a query matches exactly when the selector is a subset of the labels."""
    query = selector_to_query(selector)
    assert matches(query, labels) == all(labels.get(k) == v for k, v in selector.items())
