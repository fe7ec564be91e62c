"""Fixtures locating promtool/prometheus: a missing binary skips locally and fails in CI."""

from __future__ import annotations

import os
import shutil

import pytest


def require_binary(name: str) -> str:
    """The path of a Prometheus tool; a missing one skips the test unless CI=true."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed; .ci/run installs Debian's `prometheus` package")
        pytest.skip(f"{name} not found (install Debian's `prometheus` package to run this test)")
    return path


@pytest.fixture
def promtool() -> str:
    """Path of promtool."""
    return require_binary("promtool")
