"""The two distributions: the product wheel carries no emulator; tidal-sim carries it all."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(source: Path, out: Path) -> zipfile.ZipFile:
    """Build one wheel from `source` (without network or build isolation) and open it."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=240,
    )
    (wheel,) = out.glob("*.whl")
    return zipfile.ZipFile(wheel)


@pytest.fixture(scope="module")
def product_wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The product wheel, built from what the Docker build context holds (.dockerignore)."""
    context = tmp_path_factory.mktemp("context")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, context / name)
    shutil.copytree(
        ROOT / "tidal", context / "tidal", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    return build_wheel(context, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def sim_wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The tidal-sim wheel, built from a copy of sim/."""
    source = tmp_path_factory.mktemp("sim") / "sim"
    shutil.copytree(
        ROOT / "sim",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"),
    )
    return build_wheel(source, tmp_path_factory.mktemp("wheel"))


def test_product_wheel_has_no_emulator(product_wheel: zipfile.ZipFile) -> None:
    """The product wheel holds only the tidal package: no emulator, no demo, no sim commands,
    and no module serving the emulator's fault-injection endpoint (/sim/v1/faults)."""
    names = product_wheel.namelist()
    packages = {name.split("/", 1)[0] for name in names if "/" in name}
    assert packages == {"tidal", "tidal-0.1.0.dist-info"}, packages
    assert not [n for n in names if n.startswith(("tidal/sim/", "tidal/demo/"))]
    assert "tidal/cli/sim.py" not in names and "tidal/cli/demo.py" not in names
    serving_faults = [n for n in names if n.endswith(".py") and b"/sim/v1" in product_wheel.read(n)]
    assert serving_faults == []


def test_product_wheel_registers_no_commands(product_wheel: zipfile.ZipFile) -> None:
    """The product declares the `tidal` script only; sim and demo come from tidal-sim."""
    entry_points = product_wheel.read("tidal-0.1.0.dist-info/entry_points.txt").decode()
    assert "tidal.commands" not in entry_points
    assert "tidal = tidal.cli.main:main" in entry_points
    assert "kubectl-tidal = tidal.cli.main:kubectl_main" in entry_points  # the kubectl plugin


def test_sim_wheel_carries_emulator_demo_and_commands(sim_wheel: zipfile.ZipFile) -> None:
    """tidal-sim ships the emulator, its topology, the demo's examples and registers
    `tidal sim` and `tidal demo` in the `tidal.commands` entry-point group."""
    names = set(sim_wheel.namelist())
    assert {
        "tidal_sim/emulator.py",
        "tidal_sim/apiserver/admin.py",
        "tidal_sim/py.typed",
        "tidal_sim/topologies/default.yaml",
        "tidal_sim/demo/examples/team-1005.yaml",
        "tidal_sim/testing/plugin.py",
        "tidal_sim/cli/sim.py",
        "tidal_sim/cli/demo.py",
    } <= names
    assert not [n for n in names if n.startswith("tidal/")]
    entry_points = sim_wheel.read("tidal_sim-0.1.0.dist-info/entry_points.txt").decode()
    assert "[tidal.commands]" in entry_points
    assert "sim = tidal_sim.cli.sim:sim_command" in entry_points
    assert "demo = tidal_sim.cli.demo:demo_command" in entry_points


def test_runtime_image_installs_only_the_product() -> None:
    """The Docker build copies only the product's files and installs the tidal wheel alone."""
    lines = [ln.split() for ln in (ROOT / "Dockerfile").read_text().splitlines()]
    copied = {
        words[i]
        for words in lines
        if words[:1] == ["COPY"]
        for i in range(1, len(words) - 1)
        if not words[i].startswith("--")
    }
    assert copied == {"pyproject.toml", "README.md", "constraints.txt", "tidal"}, copied
    assert "/wheels/tidal-*.whl" in (ROOT / "Dockerfile").read_text()
    kept = (ROOT / ".dockerignore").read_text().splitlines()
    assert not [ln for ln in kept if ln.startswith("!") and "sim" in ln]
