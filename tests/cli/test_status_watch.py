"""`tidal status --watch` and `--plot` from outside, as a user runs them against the emulator:
a subprocess that follows a switch to its end, and the picture of that switch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.e2e.switch_helpers import MakeEmulator, invoke_cli, schedule_text, write_schedule
from tidal.cli.main import cli
from tidal.plot import INSTALL, PlotUnavailable, pyplot

pytestmark = pytest.mark.e2e
ROLLOUT = (
    "waveSize: 2\npauseBetweenWaves: 1s\nwaveTimeout: 30s\n"
    "floors:\n  - clusters: [cluster-b]\n    minReadyReplicas: 1\n"
)


def _status(*args: str) -> list[str]:
    return [sys.executable, "-m", "tidal", "status", *args]


def test_watch_follows_a_switch_to_its_end_one_json_line_per_change(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Started before the switch, `status NAME --watch --until-done` off a terminal prints
    only JSON lines on stdout (logs on stderr), each wave's converged count never goes back,
    and the last line has both waves succeeded 2/2 with the run's 20 replicas desired on
    cluster-b and cluster-a still listed; it exits 0 by itself."""
    path = write_schedule(tmp_path, schedule_text("team-s", ROLLOUT))
    kubeconfig = make_switch_emulator().write_kubeconfig(tmp_path / "kubeconfig")
    watcher = subprocess.Popen(
        _status(
            "team-s",
            "--schedules",
            str(path),
            "--kubeconfig",
            str(kubeconfig),
            "--watch",
            "--interval",
            "0.2",
            "--until-done",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        switched = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
        assert switched.exit_code == 0, switched.output
        out, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert watcher.returncode == 0, err[-2000:]
    docs = [json.loads(line) for line in out.splitlines()]
    assert all(set(d) == {"at", "runs"} for d in docs)
    runs = [d["runs"][0] for d in docs if d["runs"]]
    assert runs, out
    best: dict[int, int] = {}
    for run in runs:
        for wave in run["waves"]:
            assert wave["converged"] >= best.get(wave["wave"], 0)
            best[wave["wave"]] = wave["converged"]
    last = runs[-1]
    assert (last["phase"], last["result"]) == ("done", "succeeded")
    assert [(w["state"], w["converged"], w["total"]) for w in last["waves"]] == [
        ("succeeded", 2, 2),
        ("succeeded", 2, 2),
    ]
    desired = {
        c: sum(w["clusters"][c]["desired"] for w in last["waves"])
        for c in last["waves"][0]["clusters"]
    }
    assert desired == {"cluster-a": 0, "cluster-b": 20}
    assert last["floors"] and last["floors"][0].startswith("floor cluster-b: lowest ")


def _switched(make_switch_emulator: MakeEmulator, tmp_path: Path) -> tuple[Path, Path]:
    path = write_schedule(tmp_path, schedule_text("team-s", ROLLOUT))
    kubeconfig = make_switch_emulator().write_kubeconfig(tmp_path / "kubeconfig")
    switched = invoke_cli("switch", path, kubeconfig, "--yes", "-o", "json")
    assert switched.exit_code == 0, switched.output
    return path, kubeconfig


def test_plot_writes_the_picture_of_the_latest_run(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """`status NAME --plot FILE` after a switch writes a PNG and says where, exit 0."""
    path, kubeconfig = _switched(make_switch_emulator, tmp_path)
    png = tmp_path / "out" / "run.png"
    done = subprocess.run(
        _status(
            "team-s", "--schedules", str(path), "--kubeconfig", str(kubeconfig), "--plot", str(png)
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == f"wrote {png}\n"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_a_schedule_without_a_run_or_of_an_unknown_one_says_so(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """No run yet: exit 1, one line; an unknown NAME: exit 2, one line naming the known."""
    path = write_schedule(tmp_path, schedule_text("team-s", ROLLOUT))
    kubeconfig = make_switch_emulator().write_kubeconfig(tmp_path / "kubeconfig")
    base = ["status", "--schedules", str(path), "--kubeconfig", str(kubeconfig)]
    none = CliRunner().invoke(cli, [*base, "team-s", "--plot", str(tmp_path / "x.png")])
    assert none.exit_code == 1
    (line,) = none.stderr.splitlines()
    assert "team-s has no run to draw yet" in line
    unknown = CliRunner().invoke(cli, [*base, "team-x", "--plot", str(tmp_path / "x.png")])
    assert unknown.exit_code == 2
    (line,) = unknown.stderr.splitlines()
    assert "no schedule 'team-x'" in line and "known: team-s" in line


def test_until_done_without_watch_is_a_usage_error() -> None:
    """--until-done alone: exit 2 naming the option, nothing read."""
    result = CliRunner().invoke(cli, ["status", "--until-done"])
    assert result.exit_code == 2 and "--until-done" in result.stderr


def test_without_matplotlib_the_picture_names_the_extra(monkeypatch: Any) -> None:
    """matplotlib missing: PlotUnavailable says `pip install 'tidal[plot]'`."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailable, match=r"tidal\[plot\]") as caught:
        pyplot()
    assert INSTALL in str(caught.value)
