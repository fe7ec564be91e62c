"""The benchmark's remote mode (`python -m benchmarks --karmada-kubeconfig FILE`): B1's surge
night and B3's request counts against the Karmada plane FILE reaches (a real one from
tools.realkarmada), and the same arms, same code, same sizes, against the emulator served over
HTTP in the same run, side by side. Keys: real.b1.*, real.b3.*, real.waves.* for the plane;
real.emulator.<same> for the emulator; real.over_emulator.<same> for plane / emulator."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import RunConfig, Section
from benchmarks.real_arms import Arm, naive_arm, team_objects, tidal_arm, wave_figures
from benchmarks.real_plane import RemotePlane

# kwok's pod stage on the real plane's members (tools/realkarmada/upstream.py): ready after 1 s
# plus up to 5 s of jitter; a round of starts waits for its slowest pod
REAL_ROUND_SECONDS = 6.0
# the real detector's lag before a changed policy may be followed (the daemon's default)
REAL_POLICY_SETTLE = 15.0
REAL_STATUS_SETTLE = 11.0  # one Cluster status refresh (10 s) and a second


@dataclass(frozen=True)
class Target:
    """How to treat a plane: timings the engine and the bound must know."""

    kubeconfig: Path
    policy_settle: float
    round_seconds: float
    status_settle: float


def measure(
    target: Target, workloads: int, workdir: Path, wave_size: str = "25%"
) -> dict[str, float]:
    """The three arms on one plane; flat figures keyed b1.*, b3.*, waves.*."""
    plane = RemotePlane(target.kubeconfig)
    objs = team_objects(workloads)
    kw: dict[str, Any] = {
        "policy_settle": target.policy_settle,
        "round_seconds": target.round_seconds,
        "status_settle": target.status_settle,
        "wave_size": wave_size,
    }
    try:
        touch = tidal_arm(plane, objs, workdir / "touch", "touch", **kw)
        rebalance = tidal_arm(plane, objs, workdir / "rebalance", "rebalance", **kw)
        naive = naive_arm(plane, objs, status_settle=target.status_settle)
        from benchmarks.real_arms import reset

        reset(plane)
    finally:
        plane.close()
    return figures(touch, rebalance, naive, workloads)


def figures(touch: Arm, rebalance: Arm, naive: Arm, workloads: int) -> dict[str, float]:
    out: dict[str, float] = {
        "b3.workloads": workloads,
        "b3.requests_naive": naive.counter.total,
        "b3.requests_tidal_rebalance": rebalance.counter.total,
        "b3.requests_tidal_touch": touch.counter.total,
        "b3.watch_opens_tidal": rebalance.counter.watches(),
        "b3.ratio_naive_over_tidal": round(
            naive.counter.total / max(1, rebalance.counter.total), 2
        ),
        "b1.surge.converge_seconds": round(touch.converge_seconds, 1),
        "b1.surge.capacity_bound_seconds": round(touch.bound_seconds, 2),
        "b1.surge.converge_over_bound": (
            round(touch.converge_seconds / touch.bound_seconds, 2)
            if touch.bound_seconds > 0 and touch.converge_seconds >= 0
            else -1.0
        ),
        "b1.surge.switch_seconds": round(touch.seconds, 1),
        # the policy's settle (TIDAL_KARMADA__POLICY_SETTLE_SECONDS) and the plan before wave 1
        "b1.surge.first_wave_seconds": round(touch.first_wave_seconds, 1),
        "b1.surge.waves": len(touch.waves),
        "b1.surge.succeeded": 1.0 if touch.result.startswith("succeeded") else 0.0,
        "b3.rebalance_succeeded": 1.0 if rebalance.result.startswith("succeeded") else 0.0,
    }
    out.update({f"waves.{k}": v for k, v in wave_figures(touch).items()})
    out.update({f"waves.rebalance.{k}": v for k, v in wave_figures(rebalance).items()})
    return out


@contextmanager
def served_emulator(workdir: Path, startup: float = 5.0) -> Iterator[Path]:
    """The emulator over HTTP with the real plane's two members (the demo topology's cluster-a
    and cluster-b, pods start in `startup` s), at wall-clock speed; yields its kubeconfig."""
    import yaml

    from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator

    docs = [d for d in yaml.safe_load_all(Path(DEFAULT_TOPOLOGY).read_text()) if d]
    topology = []
    for doc in docs:
        if doc["kind"] == "EmulatorSettings":
            doc["spec"].pop("teamEstimator", None)  # real Karmada here has none
            topology.append(doc)
        elif doc["kind"] == "Cluster" and doc["metadata"]["name"] in ("cluster-a", "cluster-b"):
            doc["metadata"]["annotations"]["sim.tidal.io/pod-startup-seconds"] = f"{startup:g}"
            topology.append(doc)
    emu = Emulator(topology).start()
    try:
        yield emu.write_kubeconfig(workdir / "emulator.kubeconfig")
    finally:
        emu.stop()


def run_remote(
    cfg: RunConfig,
    kubeconfig: Path,
    *,
    workloads: int = 20,
    startup: float = 5.0,
    plane: Target | None = None,
) -> Section:
    """The real-plane section: the plane's figures, the emulator's (pods starting in `startup`
    s), and their ratios; `plane` overrides the real plane's timings (a test's emulator)."""
    section = Section("real", "Real Karmada: B1 surge night and B3 counts, beside the emulator")
    workdir = Path(tempfile.mkdtemp(prefix="tidal-real-"))
    wave_size = "25%" if workloads >= 8 else "50%"
    target = plane or Target(kubeconfig, REAL_POLICY_SETTLE, REAL_ROUND_SECONDS, REAL_STATUS_SETTLE)
    real = measure(target, workloads, workdir / "real", wave_size)
    with served_emulator(workdir, startup) as emu_kc:
        # the engine's settings and the set-up's pauses as on the plane (the policy's age at the
        # switch decides whether the policy settle waits): what differs is the plane
        twin = Target(emu_kc, target.policy_settle, startup + 0.1, target.status_settle)
        emu = measure(twin, workloads, workdir / "emu", wave_size)
    for key, value in real.items():
        section.put(key, value)
        section.put(f"emulator.{key}", emu[key])
        if value >= 0 and emu[key] > 0:
            section.put(f"over_emulator.{key}", round(value / emu[key], 2))
    section.say(*markdown(real, emu, workloads, wave_size))
    return section


def markdown(
    real: dict[str, float], emu: dict[str, float], workloads: int, wave_size: str
) -> list[str]:
    rows = [
        "b3.requests_naive",
        "b3.requests_tidal_rebalance",
        "b3.requests_tidal_touch",
        "b3.watch_opens_tidal",
        "b1.surge.converge_seconds",
        "b1.surge.capacity_bound_seconds",
        "b1.surge.converge_over_bound",
        "b1.surge.first_wave_seconds",
        "waves.touch_to_scheduled_ms_median",
        "waves.touch_to_scheduled_ms_max",
        "waves.scheduled_to_converged_ms_median",
        "waves.scheduled_to_converged_ms_max",
        "waves.rebalance.touch_to_scheduled_ms_median",
        "waves.rebalance.scheduled_to_converged_ms_median",
    ]
    lines = [
        f"Team 1005 of the demo topology ({workloads} Deployments, static 4:1 policy, GPU "
        f"pods), night switch in waves of {wave_size} with `strategy: surge`; requests "
        "counted on the client side (KarmadaClient's request hook; the naive controller's "
        "ApiClient wrapped).",
        "",
        "| figure | real Karmada | emulator | real / emulator |",
        "|---|---|---|---|",
    ]
    for key in rows:
        r, e = real[key], emu[key]
        ratio = f"{r / e:.2f}" if r >= 0 and e > 0 else "-"
        lines.append(f"| {key} | {r:g} | {e:g} | {ratio} |")
    return lines
