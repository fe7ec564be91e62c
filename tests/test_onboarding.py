"""docs/onboarding.md is true: every `$ command` of its console blocks is run in order against
the emulator (the mission's topology, clock x20), from the repository root with KUBECONFIG
pointing at it, and its stdout is compared with the output the guide shows. In the guide, a
line `...` stands for any number of lines and `<...>` for any text within a line; a command
ending in `&` runs in the background until the end."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidal_sim.clock import ScaledClock
from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "onboarding.md"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]


def steps(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected stdout lines) of every console block, in order."""
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif out:
                out[-1][1].append(line)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """`...` lines match any lines; `<...>` matches any text within a line."""
    pattern = "".join(
        r"(?:.*\n)*?"
        if line.strip() == "..."
        else ".*?".join(re.escape(part) for part in line.rstrip().split("<...>")) + r"\n"
        for line in expected
    )
    return re.fullmatch(pattern, "".join(a.rstrip() + "\n" for a in actual)) is not None


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    emu = Emulator(DEFAULT_TOPOLOGY, clock=ScaledClock(20.0)).start()
    time.sleep(0.5)
    yield emu
    emu.stop()


def test_the_guide_shows_each_step_whole() -> None:
    """The guide has the steps issue 15 asks for, and shows the schedule it runs."""
    text = GUIDE.read_text()
    commands = [c for c, _ in steps(text)]
    for needed in (
        "kubectl apply -f docs/onboarding/team-7001-cpp.yaml",
        "kubectl -n ai-app label",
        "kubectl get clusters",
        "tidal validate",
        "tidal plan",
        "tidal switch",
        "tidal run",
        "tidal status",
    ):
        assert any(c.startswith(needed) for c in commands), needed
    shown = re.search(r"```yaml\n(apiVersion: tidal.io/v1alpha1.*?)```", text, re.S)
    assert shown is not None
    schedule = ROOT / "docs" / "onboarding" / "schedules" / "team-7001.yaml"
    assert shown.group(1) == schedule.read_text()


def test_the_guide_runs_as_written(emulator: Emulator, tmp_path: Path) -> None:
    """Each command of the guide, run in order, exits 0 and prints what the guide shows."""
    kubeconfig = emulator.write_kubeconfig(tmp_path / "karmada.kubeconfig")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDAL_")}
    env.update(
        KUBECONFIG=str(kubeconfig),
        HOME=str(tmp_path),
        COLUMNS="200",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        TIDAL_STATE_NAMESPACE="tidal-system",
        TIDAL_LOG_FORMAT="json",
    )
    background: list[subprocess.Popen[bytes]] = []
    try:
        for command, expected in steps(GUIDE.read_text()):
            if command.endswith("&"):
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", f"exec {command[:-1]}"],
                        cwd=ROOT,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
                continue
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert done.returncode == 0, f"$ {command}\n{done.stdout}{done.stderr}"
            actual = done.stdout.splitlines()
            assert matches(expected, actual), (
                f"$ {command}\n--- the guide shows:\n"
                + "\n".join(expected)
                + "\n--- the command printed:\n"
                + "\n".join(actual)
            )
    finally:
        for proc in background:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
