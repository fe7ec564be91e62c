"""API efficiency of one switch: request counts from /sim/v1/requests for a 1,000-workload
static-weight switch (patch + touch, waves of 10%), total and per wave.

Expected shape: per wave O(1) reads (one binding list, a few watches) plus one patch per
touched template; never O(workloads) GETs.  Run: `python -m benchmarks.switch_requests`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import scenario as sc
from benchmarks.harness import SimEngineClock, converged, karmada_client, wait_until
from benchmarks.schedules import load_one, patch_window, write_schedule
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import run_switch
from tidal.sim.clock import ScaledClock
from tidal.sim.emulator import Emulator

DAY = {"cluster-a": 4, "cluster-b": 1}


def measure(workloads: int = 1000, speed: float = 50.0) -> dict[str, Any]:
    fleet = sc.Fleet(workloads=workloads, min_replicas=5, max_replicas=8, startup_seconds=2.0,
                     termination_seconds=1.0, gpu_a=10 * workloads, gpu_b=10 * workloads)
    day = sc.cpp("inference", sc.static_placement(DAY))
    emu = Emulator(sc.topology(fleet, [day]), clock=ScaledClock(speed)).start()
    try:
        from tidal.karmada.client import KarmadaClient

        def settled() -> bool:
            current = emu.controllers.timeline.current()
            return len({w for w, _ in current}) >= workloads and converged(emu)

        if not wait_until(settled, 600):
            raise RuntimeError("the day distribution did not converge")
        window = patch_window("night", "inference",
                              sc.static_placement({"cluster-b": 1}), "touch")
        path = write_schedule(Path(tempfile.mkdtemp()), "requests", [window],
                              {"waveSize": "10%", "pauseBetweenWaves": "0s",
                               "waveTimeout": "10m",
                               "floors": [{"clusters": ["cluster-b"], "minReadyReplicas": 1}]})
        client: KarmadaClient = karmada_client(emu)
        marks: list[tuple[str, int]] = []

        def on_event(event: Any) -> None:
            if isinstance(event, ev.WaveStarted):
                marks.append((f"wave {event.wave}", emu.requests()["total"]))

        emu.reset_requests()
        t0 = time.monotonic()
        record = run_switch(client, load_one(path), "night", clock=SimEngineClock(emu.clock),
                            journal=InMemoryJournal(), on_event=on_event)
        seconds = time.monotonic() - t0
        snapshot = emu.requests()
        log = emu.request_log()
        per_wave: list[dict[str, Any]] = []
        bounds = [m[1] for m in marks] + [snapshot["total"]]
        for i, (label, start) in enumerate(marks):
            chunk = log[start:bounds[i + 1]]
            counts = Counter(f"{r.verb} {r.resource}" for r in chunk)
            per_wave.append({"wave": label, "total": len(chunk), **counts})
        client.close()
        return {"result": record.result, "reason": record.reason, "workloads": workloads,
                "waves": len(record.waves),
                "seconds": round(seconds, 1), "total": snapshot["total"],
                "by": snapshot["by"], "perWave": per_wave}
    finally:
        emu.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--speed", type=float, default=50.0)
    args = parser.parse_args()
    out = measure(args.workloads, args.speed)
    print(f"switch of {out['workloads']} workloads in {out['waves']} waves: {out['result']}, "
          f"{out['seconds']} s wall, {out['total']} requests {out['reason']}")
    for key, n in sorted(out["by"].items()):
        print(f"  {key:45s} {n}")
    print("per wave:")
    for wave in out["perWave"]:
        rest = ", ".join(f"{k}={v}" for k, v in wave.items() if k not in ("wave", "total"))
        print(f"  {wave['wave']:8s} {wave['total']:5d}  {rest}")


if __name__ == "__main__":
    main()
