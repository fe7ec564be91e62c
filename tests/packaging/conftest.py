"""Render the chart with the real Helm engine (helm-python-sdk) for the packaging tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tidal"
RELEASE = "tidal"
NAMESPACE = "tidal-system"
# The smallest values an install needs: the kubeconfig Secret is the one required key.
REQUIRED: dict[str, Any] = {"karmada": {"kubeconfigSecret": {"name": "karmada-kubeconfig"}}}

Objects = list[dict[str, Any]]


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge two values dicts (extra wins), as `helm -f a -f b` would."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def render_chart(chart_dir: Path, values: dict[str, Any]) -> tuple[Objects, str]:
    """Render the chart; return every Kubernetes object and the NOTES text."""
    objects: Objects = []
    notes = ""
    with helm_python.Chart.load(chart_dir) as chart:
        manifests = chart.render(values=values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    for template, text in sorted(manifests.items()):
        if template.endswith("NOTES.txt"):
            notes = text
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects, notes


@pytest.fixture(scope="session", autouse=True)
def _quiet_helm() -> None:
    helm_python.disable_logging()


@pytest.fixture
def render() -> Callable[..., Objects]:
    """render(values) -> the objects of the real chart with REQUIRED values merged under them."""

    def _render(values: dict[str, Any] | None = None, chart_dir: Path = CHART) -> Objects:
        return render_chart(chart_dir, merge(REQUIRED, values or {}))[0]

    return _render


@pytest.fixture
def chart_copy(tmp_path: Path) -> Iterator[Path]:
    """A throw-away copy of the chart (symlinks resolved) to add schedule files to."""
    target = tmp_path / "tidal"
    shutil.copytree(CHART, target, symlinks=False)
    yield target
