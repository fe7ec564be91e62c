"""Smoke test of the benchmarks: a toy-sized run of every benchmark writes a report, plots and
a results.json holding every required key as a number. Benchmarks are not timed tests: no
figure is asserted on."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.report import REQUIRED_KEYS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # the toy run takes one to two minutes: started first


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    # a guard, not a figure: 77-135 s alone, longer beside the suite's other workers; under
    # the 300 s per-test timeout (pyproject), which counts this setup too
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--out", str(out), "--tiny"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_results_json_has_every_required_key_as_a_number(tiny_run: Path) -> None:
    """results.json is one flat object whose required dotted keys are all finite numbers."""
    results = json.loads((tiny_run / "results.json").read_text())
    for key in REQUIRED_KEYS:
        assert key in results, key
        value = results[key]
        assert isinstance(value, int | float) and not isinstance(value, bool), key
        assert math.isfinite(value), key
    assert all(isinstance(v, int | float) for v in results.values())


def test_every_benchmark_measured_something(tiny_run: Path) -> None:
    """No benchmark fell back to -1 (not measured) for its headline key in the toy run."""
    results = json.loads((tiny_run / "results.json").read_text())
    report = (tiny_run / "report.md").read_text()
    assert "the benchmark failed" not in report, report[-3000:]
    for key in REQUIRED_KEYS:
        assert results[key] != -1, key


def test_report_and_plots_are_written(tiny_run: Path) -> None:
    """The report names each benchmark and every plot it links to exists as a PNG."""
    report = (tiny_run / "report.md").read_text()
    for title in ("B1", "B2", "B3", "B4", "B5", "Emulator throughput"):
        assert title in report
    for name in (
        "b1_ready_per_cluster.png",
        "b1_worst_workload.png",
        "b1_dynamic_weight.png",
        "b2_growth.png",
        "b3_requests.png",
    ):
        assert (tiny_run / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f"]({name})" in report


def test_a_bad_only_value_is_a_one_line_error(tmp_path: Path) -> None:
    """`--only` with an unknown benchmark exits 2 naming the choices, without a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--out", str(tmp_path), "--only", "b9"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown benchmark(s) b9" in done.stderr
    assert "Traceback" not in done.stderr
