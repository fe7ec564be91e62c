"""Which resource templates a Karmada policy's `resourceSelectors` select, as Karmada's
detector decides it for a template its policy claims (a claimed template that no selector
matches any more is left alone: its claim stays and no change of the policy reaches it).

A selector matches when apiVersion and kind are the template's, its namespace (if set) too;
then its name, if set, decides alone; else its labelSelector (none: every template of the kind;
one that is not valid: none). A list matches when any of its selectors does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tidal.domain.selectors import (
    SelectorError,
    from_label_selector,
    is_label_key,
    is_label_value,
    matches,
)


def selects(
    selectors: Iterable[Any] | None,
    *,
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    labels: Mapping[str, str],
) -> bool:
    """Whether any of `selectors` (resourceSelectors items) selects the template."""

    def one(selector: Mapping[str, Any]) -> bool:
        if selector.get("apiVersion") != api_version or selector.get("kind") != kind:
            return False
        if selector.get("namespace") and selector["namespace"] != namespace:
            return False
        if selector.get("name"):
            return bool(selector["name"] == name)
        return _labels_select(selector.get("labelSelector"), labels)

    return any(isinstance(s, Mapping) and one(s) for s in selectors or ())


def _labels_select(label_selector: Any, labels: Mapping[str, str]) -> bool:
    """A selector's labelSelector against the template's labels (none: every template; one
    that is not valid: none)."""
    if label_selector is None:
        return True
    if not isinstance(label_selector, Mapping):
        return False
    try:
        requirements = from_label_selector(
            label_selector.get("matchLabels"), label_selector.get("matchExpressions")
        )
    except (SelectorError, TypeError, AttributeError):
        return False
    if not all(
        is_label_key(r.key) and all(is_label_value(v) for v in r.values) for r in requirements
    ):
        return False
    return matches(requirements, labels)
