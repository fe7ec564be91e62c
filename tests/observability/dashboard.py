"""The Grafana dashboard's PromQL, with Grafana's variables replaced by concrete values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[2] / "charts" / "tidal" / "dashboards" / "tidal.json"

_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "1h",
    "$schedule": ".*",
}


def load() -> dict[str, Any]:
    """The dashboard JSON."""
    return dict(json.loads(DASHBOARD.read_text()))


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel that draws something (rows left out), nested rows included."""
    found: list[dict[str, Any]] = []
    for panel in dashboard["panels"]:
        if panel.get("type") == "row":
            found.extend(panel.get("panels", []))
        else:
            found.append(panel)
    return found


def concrete(expr: str) -> str:
    """A panel query as Prometheus would receive it from Grafana."""
    for name, value in sorted(_VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(name, value)
    leftover = re.findall(r"\$\{?\w+", expr)
    assert not leftover, f"unknown Grafana variable(s) {leftover} in {expr!r}"
    return expr


def queries() -> list[tuple[str, str]]:
    """(panel title, concrete PromQL) for every target of every panel."""
    return [(p["title"], concrete(t["expr"])) for p in panels(load()) for t in p["targets"]]
