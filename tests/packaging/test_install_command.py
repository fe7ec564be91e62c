"""The README's set-up, CI and the lock agree: every install is constrained by constraints.txt."""

from __future__ import annotations

import re
import shlex
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from tools.constraints import behind, canonical, read_pins

ROOT = Path(__file__).resolve().parents[2]


def _readme_install() -> list[str]:
    block = (ROOT / "README.md").read_text().split("## Set-up", 1)[1].split("```sh", 1)[1]
    line = block.split("```", 1)[0].strip().splitlines()[0]
    return shlex.split(line.split("&&", 1)[0].split("#", 1)[0])


def test_the_readme_installs_against_the_constraints() -> None:
    """The README's first command is a pip install constrained by constraints.txt."""
    words = _readme_install()
    assert words[:2] == ["pip", "install"]
    assert "-c" in words and words[words.index("-c") + 1] == "constraints.txt"


def test_ci_installs_exactly_as_the_readme_says() -> None:
    """.ci/run's install carries the README's arguments (quiet aside)."""
    line = next(
        ln
        for ln in (ROOT / ".ci/run").read_text().splitlines()
        if re.search(r"\bpip install\b", ln) and not ln.lstrip().startswith("#")
    )
    words = shlex.split(line.split("pip", 1)[1])
    assert [w for w in words if w != "-q"] == _readme_install()[1:]


def test_the_lock_pins_every_package_it_names() -> None:
    """Every line of constraints.txt is NAME==VERSION, once per package."""
    names = [
        ln.split("==")[0]
        for ln in (ROOT / "constraints.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert len({canonical(n) for n in names}) == len(names)
    assert all(v for v in read_pins().values())


def test_installed_packages_are_the_pinned_ones() -> None:
    """An install made as the README says holds the pinned version of each package it has
    (a test that reads installed metadata then reads the lock, not the index of the day)."""
    mismatched = []
    for name, pinned in read_pins().items():
        try:
            installed = version(name)
        except PackageNotFoundError:
            continue
        if installed != pinned:
            mismatched.append(f"{name} {installed} (pinned {pinned})")
    if mismatched:
        pytest.fail(
            "installed without the lock? "
            + ", ".join(mismatched[:5])
            + "; install with: pip install -c constraints.txt -e '.[test,bench]' -e ./sim"
        )


def test_freshness_check_names_each_difference() -> None:
    """`tools.constraints check` reports a pin behind, an unpinned package, a dropped one."""
    lines = behind({"a": "1", "b": "2", "gone": "1"}, {"a": "1", "b": "3", "new": "5"})
    assert lines == [
        "b==2: today 3",
        "gone==1: no longer needed by a fresh install",
        "new: not pinned (today 5)",
    ]
