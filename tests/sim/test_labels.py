"""The emulator's own label selectors against the cases of upstream's tables, restated as data:
k8s.io/apimachinery/pkg/labels (selector_test.go: parse, match, render, requirement rules),
metav1's LabelSelectorAsSelector (helpers_test.go) and Karmada's resource selector priorities
(pkg/util/selector_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tidal_sim.controllers.matching import (
    MATCH_ALL,
    MATCH_LABEL_SELECTOR,
    MATCH_NAME,
    MISMATCH,
    label_selector_matches,
    resource_selector_priority,
)
from tidal_sim.labels import Op, SelectorError, from_object, matches, parse, render, requirement

# Query strings that parse, and render back as written less their spaces.
ROUND_TRIPS = [
    "x=a,y=b,z=c",
    "",
    "x!=a,y=b",
    "x=",
    "x= ",
    "x=,z= ",
    "x= ,z= ",
    "!x",
    "x>1",
    "x>1,z<5",
]
# Query strings that do not parse.
REJECTED = [
    "x=a||y=b",
    "x==a==b",
    "!x=a",
    "x<a",
    "x,,y",
    ",x,y",
    "x nott in (y)",
    "a in (xyz),",
    "a in (xyz)b notin ()",
    "a in (xyz abc)",
    "a notin(",
    "a (",
    "(",
    "x in (a b)",
    "a/b/c",
    "UPPER.case/x",
    f"{'a' * 64}",
    f"x={'v' * 64}",
]


@pytest.mark.parametrize("query", ROUND_TRIPS)
def test_a_good_query_renders_back_without_its_spaces(query: str) -> None:
    """Every query of upstream's good list parses and renders back as written, spaces aside."""
    assert render(parse(query)) == query.replace(" ", "")


@pytest.mark.parametrize("query", REJECTED)
def test_a_bad_query_is_refused(query: str) -> None:
    """Every query of upstream's bad lists (and a few bad keys and values) is refused."""
    with pytest.raises(SelectorError):
        parse(query)


def test_parsing_sorts_by_key() -> None:
    """The order of the terms does not matter: both orders render the same."""
    assert render(parse("x=a,a=x")) == render(parse("a=x,x=a")) == "a=x,x=a"


# (query, labels, matches?) from TestSelectorMatches.
MATCHES: list[tuple[str, dict[str, str], bool]] = [
    ("", {"x": "y"}, True),
    ("x=y", {"x": "y"}, True),
    ("x=y,z=w", {"x": "y", "z": "w"}, True),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
    ("notin=in", {"notin": "in"}, True),
    ("x", {"x": "z"}, True),
    ("!x", {"y": "z"}, True),
    ("x>1", {"x": "2"}, True),
    ("x<1", {"x": "0"}, True),
    ("x=z", {}, False),
    ("x=y", {"x": "z"}, False),
    ("x=y,z=w", {"x": "w", "z": "w"}, False),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
    ("x", {"y": "z"}, False),
    ("!x", {"x": "z"}, False),
    ("x>1", {"x": "0"}, False),
    ("x<1", {"x": "2"}, False),
    ("foo=bar", {"foo": "bar", "baz": "blah"}, True),
    ("baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=blah", {"foo": "bar", "baz": "blah"}, False),
    ("baz=bar", {"foo": "bar", "baz": "blah"}, False),
    ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    # TestRequirementSelectorMatching, written as queries.
    ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
    ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
    ("x notin (),y", {"y": ""}, True),
    ("!x,y", {"y": ""}, True),
    ("x notin (),!y", {"y": ""}, False),
    ("x in ()", {"y": "baz"}, False),
    ("z>1", {"z": "2"}, True),
    ("z>1", {"z": "v2"}, False),
]


@pytest.mark.parametrize(("query", "labels", "expected"), MATCHES)
def test_matching_follows_upstreams_table(
    query: str, labels: dict[str, str], expected: bool
) -> None:
    """Each (selector, labels) pair of upstream's matching tables matches as upstream says."""
    assert matches(parse(query), labels) is expected


# (query, the requirements it parses to) from TestSetSelectorParser.
PARSED: list[tuple[str, list[tuple[str, Op, list[str]]]]] = [
    ("\rx", [("x", Op.EXISTS, [])]),
    (
        "this-is-a-dns.domain.com/key-with-dash",
        [("this-is-a-dns.domain.com/key-with-dash", Op.EXISTS, [])],
    ),
    (
        "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        [("this-is-another-dns.domain.com/key-with-dash", Op.IN, ["so", "what"])],
    ),
    (
        "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
        [("0.1.2.domain/99", Op.NOT_IN, ["10.10.100.1", "tick.tack.clock"])],
    ),
    ("foo  in\t (abc)", [("foo", Op.IN, ["abc"])]),
    ("x notin\n (abc)", [("x", Op.NOT_IN, ["abc"])]),
    ("x  notin\t\t\t(abc,def)", [("x", Op.NOT_IN, ["abc", "def"])]),
    ("x in (abc,)", [("x", Op.IN, ["abc", ""])]),
    ("x in (abc,abc)", [("x", Op.IN, ["abc"])]),
    ("x in ()", [("x", Op.IN, [""])]),
    ("x in (a,,)", [("x", Op.IN, ["a", ""])]),
    ("x in (a,,,,,,)", [("x", Op.IN, ["a", ""])]),
    ("x in (a,,a,,a,,a,,)", [("x", Op.IN, ["a", ""])]),
    (
        "x notin (abc,,def),bar,z in (),w",
        [
            ("bar", Op.EXISTS, []),
            ("w", Op.EXISTS, []),
            ("x", Op.NOT_IN, ["abc", "", "def"]),
            ("z", Op.IN, [""]),
        ],
    ),
    ("x=a", [("x", Op.EQUALS, ["a"])]),
    ("x==a", [("x", Op.DOUBLE_EQUALS, ["a"])]),
    ("x>1", [("x", Op.GREATER, ["1"])]),
    ("x<7", [("x", Op.LESS, ["7"])]),
    (
        "x=a,y!=b,z in (h,i,j)",
        [("x", Op.EQUALS, ["a"]), ("y", Op.NOT_EQUALS, ["b"]), ("z", Op.IN, ["h", "i", "j"])],
    ),
    ("x notin ( )", [("x", Op.NOT_IN, [""])]),
    ("x notin (, a)", [("x", Op.NOT_IN, ["", "a"])]),
    ("a ", [("a", Op.EXISTS, [])]),
    ("a in (x,y,notin, z,in)", [("a", Op.IN, ["in", "notin", "x", "y", "z"])]),
]


@pytest.mark.parametrize(("query", "expected"), PARSED)
def test_parsing_follows_upstreams_table(
    query: str, expected: list[tuple[str, Op, list[str]]]
) -> None:
    """Each query of upstream's set-selector table parses to the same requirements."""
    assert parse(query) == tuple(requirement(k, op, values) for k, op, values in expected)


# (key, operator, values, accepted?) from TestRequirementConstructor.
REQUIREMENTS: list[tuple[str, Op, list[str], bool]] = [
    ("x1", Op.IN, [], False),
    ("x2", Op.NOT_IN, [], False),
    ("x3", Op.IN, ["foo"], True),
    ("x4", Op.NOT_IN, ["foo"], True),
    ("x5", Op.EQUALS, ["foo", "bar"], False),
    ("x6", Op.EXISTS, [], True),
    ("x7", Op.DOES_NOT_EXIST, [], True),
    ("x8", Op.EXISTS, ["foo"], False),
    ("x11", Op.GREATER, ["1"], True),
    ("x12", Op.LESS, ["6"], True),
    ("x13", Op.GREATER, [], False),
    ("x14", Op.GREATER, ["bar"], False),
    ("x15", Op.LESS, ["bar"], False),
    ("a" * 254, Op.EXISTS, [], False),
    ("x16", Op.EQUALS, ["a" * 254], False),
    ("x17", Op.EQUALS, ["a b"], False),
    ("1foo", Op.IN, ["bar"], True),
    ("1234", Op.IN, ["bar"], True),
]


@pytest.mark.parametrize(("key", "op", "values", "accepted"), REQUIREMENTS)
def test_requirement_rules_follow_upstreams_table(
    key: str, op: Op, values: list[str], accepted: bool
) -> None:
    """A requirement is accepted or refused as upstream's constructor table says."""
    if accepted:
        assert requirement(key, op, values).key == key
    else:
        with pytest.raises(SelectorError):
            requirement(key, op, values)


def test_rendering_follows_upstreams_table() -> None:
    """Requirements render as upstream's to-string table writes them (set values sorted)."""
    cases = [
        (
            [("x", Op.IN, ["def", "abc"]), ("y", Op.NOT_IN, ["jkl"]), ("z", Op.EXISTS, [])],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            [
                ("x", Op.NOT_IN, ["abc", "def"]),
                ("y", Op.NOT_EQUALS, ["jkl"]),
                ("z", Op.DOES_NOT_EXIST, []),
            ],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            [("x", Op.NOT_IN, ["abc"]), ("y", Op.IN, ["jkl", "mno"]), ("z", Op.NOT_IN, [""])],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            [
                ("x", Op.EQUALS, ["abc"]),
                ("y", Op.DOUBLE_EQUALS, ["jkl"]),
                ("z", Op.NOT_EQUALS, ["a"]),
                ("z", Op.EXISTS, []),
            ],
            "x=abc,y==jkl,z!=a,z",
        ),
        ([("x", Op.GREATER, ["2"]), ("y", Op.LESS, ["8"]), ("z", Op.EXISTS, [])], "x>2,y<8,z"),
    ]
    for terms, expected in cases:
        assert render(tuple(requirement(k, op, v) for k, op, v in terms)) == expected


BAZ_IN = {"key": "baz", "operator": "In", "values": ["qux", "norf"]}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({}, ""),
        ({"matchLabels": {"foo": "bar"}}, "foo=bar"),
        ({"matchExpressions": [BAZ_IN]}, "baz in (norf,qux)"),
        (
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [BAZ_IN]},
            "baz in (norf,qux),foo=bar",
        ),
    ],
)
def test_an_object_selector_converts_as_upstream_converts_it(
    selector: dict[str, Any], expected: str
) -> None:
    """A LabelSelector object becomes the query upstream's conversion table names."""
    assert render(from_object(selector)) == expected


def test_an_invalid_object_selector_is_refused_and_matches_nothing() -> None:
    """Values on Exists, an unknown operator or an empty key are refused; matching then says no."""
    for bad in (
        {"matchExpressions": [{"key": "baz", "operator": "Exists", "values": ["qux"]}]},
        {"matchExpressions": [{"key": "baz", "operator": "Near", "values": ["qux"]}]},
        {"matchLabels": {"": "bar"}},
    ):
        with pytest.raises(SelectorError):
            from_object(bad)
        assert label_selector_matches(bad, {"baz": "qux", "": "bar"}) is False
    assert label_selector_matches(None, {}) is True


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "test", "namespace": "default", "labels": {"foo": "bar"}},
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (
            {"apiVersion": "unmatched", "kind": "Pod", "name": "foo", "namespace": "default"},
            MISMATCH,
        ),
        (
            {"apiVersion": "v1", "kind": "Unmatched", "name": "foo", "namespace": "default"},
            MISMATCH,
        ),
        ({"apiVersion": "v1", "kind": "Pod", "name": "foo", "namespace": "Unmatched"}, MISMATCH),
        ({"apiVersion": "v1", "kind": "Pod", "name": "test"}, MATCH_NAME),
        (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "unmatched",
                "labelSelector": {"matchLabels": {"foo": "bar"}},
            },
            MISMATCH,
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "test",
                "labelSelector": {"matchLabels": {"foo": "unmatched"}},
            },
            MATCH_NAME,
        ),
        ({"apiVersion": "v1", "kind": "Pod", "name": "unmatched"}, MISMATCH),
        (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "labelSelector": {"matchLabels": {"foo": "unmatched"}},
            },
            MISMATCH,
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "labelSelector": {"matchLabels": {"foo": "bar"}}},
            MATCH_LABEL_SELECTOR,
        ),
        ({"apiVersion": "v1", "kind": "Pod"}, MATCH_ALL),
        (
            {"apiVersion": "v1", "kind": "Pod", "labelSelector": {"matchLabels": {"": "bar"}}},
            MISMATCH,
        ),
    ],
)
def test_resource_selector_priority_follows_karmadas_table(
    selector: dict[str, Any], expected: int
) -> None:
    """Each resourceSelector of Karmada's priority table ranks the pod as Karmada ranks it."""
    assert resource_selector_priority(POD, selector) == expected
