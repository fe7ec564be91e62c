"""The code's own gates run with the suite (so CI, which runs the README's test command, keeps
them): ruff's format and lint, mypy strict, and the import-linter contracts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.parametrize(
    "gate",
    [
        ("-m", "ruff", "format", "--check", "."),
        ("-m", "ruff", "check", "."),
        ("-m", "mypy"),
        ("-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"),
    ],
    ids=["ruff-format", "ruff-check", "mypy", "lint-imports"],
)
def test_the_gate_passes(gate: tuple[str, ...]) -> None:
    """Each gate exits 0 over the whole checkout."""
    done = _run(*gate)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
