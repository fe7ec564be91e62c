"""Driving tidal from outside, as a user does: `tidal ...` subprocesses against the emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

COMMAND_TIMEOUT = 300.0


def tidal(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`tidal ARGS...` in a subprocess (JSON logs), its output captured."""
    environ = dict(os.environ, TIDAL_LOG_FORMAT="json", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "tidal", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        env=environ,
        check=False,
    )


def start_tidal(
    log: Path, *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`tidal ARGS...` started in the background, its output to `log`."""
    environ = dict(os.environ, TIDAL_LOG_FORMAT="json", **(env or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "tidal", *map(str, args)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env=environ,
    )


def status_of(
    schedules: Path, kubeconfig: Path, name: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """The `tidal status -o json` entry of schedule `name`."""
    done = tidal(
        "status", "--schedules", schedules, "--kubeconfig", kubeconfig, "-o", "json", env=env
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)["schedules"]
    found: dict[str, Any] = next(s for s in entries if s["name"] == name)
    return found
