"""The benchmark's remote mode (`--karmada-kubeconfig`) end to end against the emulator served
over HTTP, the same code path a real plane takes: every key is reported, and the request
counts, taken on the client side, are exact."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness import RunConfig
from benchmarks.real import Target, run_remote, served_emulator
from benchmarks.real_plane import RequestCounter

ROOT = Path(__file__).resolve().parents[2]
# tidal's requests for 4 workloads in 2 waves of 50%, surge: the touch night and the swap with
# one WorkloadRebalancer per wave (plan, preflight, policy change, waves, gates). Issue 26's
# second pass: 31 -> 23 and 39 -> 28: the checks before each wave read the run's informers
# (a policy GET and a Cluster listing fewer per wave), the policy reads of the run come from
# one list+watch (touch: 4 GETs, rebalance: 7, for 2 requests), and the end-of-run leftover
# sweep (2 listings) runs only when the start kept some. Then 23 -> 25 and 28 -> 32: the
# drift check before each wave GETs the policy again (an informer cannot prove it holds a
# hand edit made a moment ago), and a swap reads both policies afresh (the old one is
# deleted without a precondition and its spec kept for a rollback). Then main's rebalancer
# fix (one WorkloadRebalancer per wave, 39 -> 38 before issue 26) takes the rebalance night
# from 32 to 31. Then the run's overrides are shared by its waves (issue 26, sixth pass):
# wave 2 joins wave 1's group with one update, both park there, and the run's last release
# deletes it in one request instead of one per wave: 25 -> 24 and 31 -> 30
TOUCH = 24
REBALANCE = 30
STARTUP = 0.5  # seconds a pod takes to start in both emulators


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    work = tmp_path_factory.mktemp("real")
    with served_emulator(work, STARTUP) as kubeconfig:
        section = run_remote(
            RunConfig(work, quick=True, tiny=True),
            kubeconfig,
            workloads=4,
            startup=STARTUP,
            plane=Target(kubeconfig, 0.0, STARTUP + 0.1, 0.0),
        )
    return section.results


def test_every_real_key_is_reported_for_the_plane_and_the_emulator(
    results: dict[str, float],
) -> None:
    """The plane's keys, the emulator's beside them, and the per-wave latencies were measured."""
    for key in (
        "b3.requests_naive",
        "b3.requests_tidal_rebalance",
        "b3.requests_tidal_touch",
        "b1.surge.converge_seconds",
        "b1.surge.converge_over_bound",
        "waves.touch_to_scheduled_ms_median",
        "waves.touch_to_scheduled_ms_max",
        "waves.scheduled_to_converged_ms_median",
        "waves.scheduled_to_converged_ms_max",
    ):
        assert results[f"real.{key}"] >= 0, key
        assert results[f"real.emulator.{key}"] >= 0, key
    assert results["real.b1.surge.succeeded"] == 1
    assert results["real.b3.rebalance_succeeded"] == 1
    assert results["real.b1.surge.waves"] == 2


def test_tidal_request_counts_are_exact_on_both_planes(results: dict[str, float]) -> None:
    """Counted on the client side, tidal's requests for the touch and the rebalance night are
    the same exact numbers on the plane under test and on the run's own emulator.

    Every request is counted, watches included: each arm opens one watch of bindings, one of
    Clusters and one of its policies (60 s watches, for runs of a few seconds: none ends and
    reopens inside a run). The
    rebalance night makes exactly one WorkloadRebalancer per wave because tidal lets the touch's
    scheduling second pass before it (tidal.engine.rebalancing); it used to make one in that
    second, which Karmada ignores, and a second one a second later, or not, depending on where
    the scheduling fell within its second: 39 or, under load, 38."""
    for key in ("b3.requests_tidal_touch", "b3.requests_tidal_rebalance"):
        assert results[f"real.{key}"] == results[f"real.emulator.{key}"], key
    assert results["real.b3.requests_tidal_touch"] == TOUCH
    assert results["real.b3.requests_tidal_rebalance"] == REBALANCE


def test_a_missing_kubeconfig_is_a_one_line_error(tmp_path: Path) -> None:
    """`--karmada-kubeconfig` naming no file exits 2 with one line naming the flag and the fix."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--out",
            str(tmp_path),
            "--only",
            "",
            "--karmada-kubeconfig",
            str(tmp_path / "nope.kc"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--karmada-kubeconfig" in done.stderr and "tools.realkarmada up" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_naive_controllers_calls_are_counted_by_verb_and_resource() -> None:
    """A wrapped official ApiClient counts each call once under "verb plural", watches apart."""
    calls: list[str] = []

    class Api:
        def call_api(self, method: str, url: str, *args: object, **kw: object) -> str:
            calls.append(method)
            return "ok"

    counter = RequestCounter()
    api = counter.wrap(Api())
    base = "https://k:6443/apis/work.karmada.io/v1alpha2/namespaces/ai-app/resourcebindings"
    assert api.call_api("GET", f"{base}/web-deployment") == "ok"
    api.call_api("GET", f"{base}?watch=true")
    api.call_api("POST", "https://k:6443/apis/apps.karmada.io/v1alpha1/workloadrebalancers")
    api.call_api("DELETE", "https://k:6443/api/v1/namespaces/ai-app")
    assert dict(counter.by) == {
        "get resourcebindings": 1,
        "watch resourcebindings": 1,
        "create workloadrebalancers": 1,
        "delete namespaces": 1,
    }
    assert counter.total == 4 and counter.watches() == 1 and len(calls) == 4
