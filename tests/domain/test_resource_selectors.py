"""Karmada's resourceSelectors semantics for a claimed template (upstream's
pkg/util/selector_test.go tables, restated): kind, namespace, name, then labels."""

from __future__ import annotations

from typing import Any

import pytest

from tidal.domain.resource_selectors import selects


def _selects_pod(selectors: list[Any] | None) -> bool:
    """The upstream tables' Pod: v1, default/test, labelled foo=bar."""
    return selects(
        selectors,
        api_version="v1",
        kind="Pod",
        namespace="default",
        name="test",
        labels={"foo": "bar"},
    )


def _pod(**selector: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", **selector}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"apiVersion": "v2", "kind": "Pod"}, False),  # apiVersion not matched
        ({"apiVersion": "v1", "kind": "Service"}, False),  # kind not matched
        (_pod(namespace="other"), False),  # namespace not matched
        (_pod(name="test"), True),  # namespace unset, name matched
        (_pod(name="other", labelSelector={"matchLabels": {"foo": "bar"}}), False),
        (_pod(name="test", labelSelector={"matchLabels": {"foo": "baz"}}), True),  # name decides
        (_pod(name="other"), False),
        (_pod(labelSelector={"matchLabels": {"foo": "baz"}}), False),
        (_pod(labelSelector={"matchLabels": {"foo": "bar"}}), True),
        (_pod(), True),  # neither name nor labels: every Pod
        (_pod(labelSelector={}), True),  # an empty selector selects everything
        (_pod(labelSelector={"matchLabels": {"": "bar"}}), False),  # not a valid selector
        (
            _pod(
                labelSelector={
                    "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "baz"]}]
                }
            ),
            True,
        ),
        (
            _pod(
                labelSelector={
                    "matchExpressions": [{"key": "foo", "operator": "Bogus", "values": ["bar"]}]
                }
            ),
            False,
        ),
        (
            _pod(labelSelector={"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}),
            True,
        ),
    ],
)
def test_one_selector(selector: dict[str, Any], expected: bool) -> None:
    """Each row of upstream's ResourceSelectorPriority table: matched or not."""
    assert _selects_pod([selector]) is expected


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        (None, False),
        ([], False),
        ([_pod(), {"apiVersion": "v1", "kind": "Unmatched"}], True),
        ([{"apiVersion": "v1", "kind": "Unmatched"}, _pod()], True),
        ([{"apiVersion": "v1", "kind": "Unmatched"}] * 2, False),
        ([_pod(), _pod()], True),
        (["not a mapping", _pod()], True),
    ],
)
def test_any_selector_of_the_list(selectors: list[Any] | None, expected: bool) -> None:
    """A list selects a template when any of its selectors does; none selects nothing."""
    assert _selects_pod(selectors) is expected
