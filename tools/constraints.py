"""constraints.txt: the lock every install uses (README, CI, the Dockerfile), and its freshness.

    python -m tools.constraints check     # exit 1 and one line per pin that fell behind
    python -m tools.constraints refresh   # rewrite the pins from today's resolution

Both ask pip's own resolver what a fresh install of the product, the emulator and every extra
would get today (`pip install --dry-run --ignore-installed --report`), without installing
anything. `check` is for maintainers (a scheduled job, or before a release): the suite itself
never depends on what the index serves on the day it runs, because every install is
constrained by this file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
OWN = {"tidal", "tidal-sim"}
HEADER = """\
# The lock of every install: the README's set-up, CI (.ci/run) and the Dockerfile's
# `pip wheel --constraint` all install these versions, so an install today and one next year
# get the same packages and no test depends on what PyPI serves on the day. It pins (==) the
# closure of pyproject.toml's dependencies and extras and of sim/ (the emulator).
# Check for pins that fell behind:   python -m tools.constraints check
# Regenerate (then run the suite):   python -m tools.constraints refresh
# tests/packaging/test_dockerfile.py checks that it covers every runtime dependency inside
# pyproject.toml's version ranges.
"""


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def read_pins(path: Path = CONSTRAINTS) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonical(name)] = version.strip()
    return pins


def resolve_today() -> dict[str, str]:
    """name -> version that a fresh, unconstrained install would get now."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--dry-run",
            "--ignore-installed",
            "--report",
            str(report),
            "-e",
            f"{ROOT}[test,bench]",
            "-e",
            str(ROOT / "sim"),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SystemExit(f"constraints: pip could not resolve the project: {tail}")
        data = json.loads(report.read_text())
    found = {
        canonical(item["metadata"]["name"]): item["metadata"]["version"]
        for item in data.get("install", [])
    }
    return {name: version for name, version in found.items() if name not in OWN}


def behind(pins: dict[str, str], today: dict[str, str]) -> list[str]:
    """One line per difference between the pins and today's resolution."""
    lines = []
    for name in sorted(set(pins) | set(today)):
        if name not in today:
            lines.append(f"{name}=={pins[name]}: no longer needed by a fresh install")
        elif name not in pins:
            lines.append(f"{name}: not pinned (today {today[name]})")
        elif pins[name] != today[name]:
            lines.append(f"{name}=={pins[name]}: today {today[name]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.constraints",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=["check", "refresh"])
    args = parser.parse_args(argv)
    today = resolve_today()
    if args.action == "refresh":
        body = "".join(f"{name}=={today[name]}\n" for name in sorted(today))
        CONSTRAINTS.write_text(HEADER + body)
        print(f"constraints: {len(today)} pins written to {CONSTRAINTS}")
        return 0
    lines = behind(read_pins(), today)
    for line in lines:
        print(f"constraints: {line}")
    if lines:
        print(
            f"constraints: {len(lines)} pin(s) behind; run `python -m tools.constraints "
            "refresh`, then the suite"
        )
        return 1
    print("constraints: every pin is what a fresh install gets today")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
