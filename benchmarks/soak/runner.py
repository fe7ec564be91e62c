"""One soak: emulator + two daemons + chaos for N minutes, then a drain (faults cleared,
schedules suspended, the last runs allowed to finish) and the end-of-soak checks."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.soak.chaos import Chaos
from benchmarks.soak.checker import Checker
from benchmarks.soak.fleet import Fleet
from benchmarks.soak.promises import Promise
from benchmarks.soak.scenario import NS, STATE_NS, TEAMS, topology
from benchmarks.soak.summary import per_promise, report_markdown
from benchmarks.soak.writers import is_acting
from tidal.karmada.names import LAZY_ADDED_BY
from tidal_sim.clock import ScaledClock
from tidal_sim.emulator import Emulator

IDENTITIES = ("soak-a", "soak-b")
WARMUP_SECONDS = 8.0
DRAIN_SECONDS = 45.0
SAMPLE_SECONDS = 3.0
RSS_GROWTH_MB = 40.0  # a replica's RSS may grow this much (imports, caches) and stay "flat"
SOCKET_GROWTH = 8


def _no_leftovers(emu: Any, checker: Checker) -> int:
    """No WorkloadRebalancer left, no temporary Lazy left unmarked, nor left by a run that ended
    unless it journalled leaving it; returns policies checked."""
    store, kinds = emu.store, emu.kinds
    wrb = kinds.by_kind("apps.karmada.io/v1alpha1", "WorkloadRebalancer")
    if wrb is not None:
        items, _rv = store.list(wrb, None, None)
        for item in items:
            checker.violation(
                f"WorkloadRebalancer {item['metadata']['name']} left behind", Promise.RESUME
            )
    cpp = kinds.by_kind("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")
    assert cpp is not None
    checked = 0
    for team in TEAMS:
        run = checker.runs.get(checker.current_run.get(team.schedule, ""))
        if run is None:
            continue
        checked += 1
        policy = store.get(cpp, None, team.policy)
        lazy = (policy.get("spec") or {}).get("activationPreference") == "Lazy"
        marked = LAZY_ADDED_BY in ((policy.get("metadata") or {}).get("annotations") or {})
        result = run.last.get("result")
        # a rollback keeps a Lazy (marked) that still holds unmoved templates, and says so
        left = any(
            p.get("name") == team.policy and p.get("lazyAdded") and not p.get("lazyRestored")
            for p in run.last.get("policies") or []
        )
        if result == "rolledBack" and lazy and marked and left:
            continue
        if result in ("succeeded", "rolledBack") and (lazy or marked):
            checker.violation(
                f"{team.policy}: temporary activationPreference Lazy left behind "
                f"after run {run.run_id} ({result})",
                Promise.LAZY,
            )
        elif lazy and not marked:  # a halted run leaves its Lazy, but marked for the next run
            checker.violation(
                f"{team.policy}: Lazy without tidal's marks after run "
                f"{run.run_id} ({result}): no later run could restore it",
                Promise.LAZY,
            )
    return checked


def _no_secrets(emu: Any, fleet: Fleet, checker: Checker, metrics: list[str]) -> int:
    """The kubeconfig tokens (`sim:<identity>`) appear in no log, metric, Event or state
    object; returns the places scanned."""
    tokens = [f"sim:{who}" for who in IDENTITIES]
    places: dict[str, str] = {
        f"log of {who}": fleet.log_path(who).read_text(errors="replace") for who in IDENTITIES
    }
    places["/metrics"] = "\n".join(metrics)
    for kind, api in (("ConfigMap", "v1"), ("Event", "v1"), ("Lease", "coordination.k8s.io/v1")):
        rtype = emu.kinds.by_kind(api, kind)
        if rtype is not None:
            items, _rv = emu.store.list(rtype, None, None)
            places[f"{kind}s"] = json.dumps(items)
    for where, text in places.items():
        for token in tokens:
            if token in text:
                checker.violation(f"a kubeconfig token appears in {where}", Promise.SECRETS)
    return len(places)


def _flatness(fleet: Fleet, checker: Checker, minutes: float) -> tuple[float, float, int, int]:
    """Start/end RSS and sockets of the longest-lived process; checked for growth from its
    second sample after it served /metrics (imports and the first pass done: a process
    restarted under load may still be importing seconds after its start)."""
    lived = [(inc, [s for s in inc.samples if s.ready]) for inc in fleet.history]
    lived = [(inc, ready) for inc, ready in lived if len(ready) >= 2]
    if not lived:
        return 0.0, 0.0, 0, 0
    for inc, ready in lived:
        first, last = ready[1 if len(ready) > 2 else 0], ready[-1]
        span = last.at - first.at
        if span < min(60.0, minutes * 30):
            continue
        if last.rss_mb > first.rss_mb + RSS_GROWTH_MB:
            checker.violation(
                f"{inc.who} (pid {inc.proc.pid}) RSS grew {first.rss_mb:.0f} -> "
                f"{last.rss_mb:.0f} MB in {span:.0f}s",
                Promise.PROCESS,
            )
        if last.sockets > first.sockets + SOCKET_GROWTH:
            checker.violation(
                f"{inc.who} (pid {inc.proc.pid}) sockets grew {first.sockets} -> "
                f"{last.sockets} in {span:.0f}s",
                Promise.PROCESS,
            )
    _inc, ready = max(lived, key=lambda pair: pair[1][-1].at - pair[1][0].at)
    first, last = ready[1 if len(ready) > 2 else 0], ready[-1]
    return first.rss_mb, last.rss_mb, first.sockets, last.sockets


def _evidence(out: Path, checker: Checker, requests: list[Any]) -> None:
    """What the single-writer verdicts rest on, for reading a violation afterwards: every
    acting write (who, what, resourceVersion) and every change of the leader Lease."""
    with (out / "evidence.jsonl").open("w") as fh:
        for (version, holder), (at, _h) in zip(
            checker.lease_versions, checker.leader_history, strict=False
        ):
            fh.write(json.dumps({"lease": holder, "resource_version": version, "time": at}) + "\n")
        for r in requests:
            if is_acting(r):
                fh.write(json.dumps(r.to_json(), sort_keys=True) + "\n")


def run_soak(
    minutes: float, out: Path, seed: int = 1, progress: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    schedules = out / "schedules"
    schedules.mkdir(exist_ok=True)
    rng = random.Random(seed)
    emu = Emulator(topology(), clock=ScaledClock(10.0), seed=seed).start()
    checker = Checker(emu.store).start()
    fleet = Fleet(emu, out, schedules, IDENTITIES)

    def leader() -> str | None:
        return checker.leader_history[-1][1] if checker.leader_history else None

    chaos = Chaos(emu, fleet, schedules, seed, leader)
    started = time.time()
    try:
        for i in range(len(TEAMS)):
            chaos.write_schedule(i)
        fleet.start_all()
        end_chaos = started + max(minutes * 60.0 - DRAIN_SECONDS, 20.0)
        next_fault = started + WARMUP_SECONDS
        next_sample = started
        while time.time() < end_chaos:
            now = time.time()
            chaos.due()
            for note in fleet.supervise():
                progress(f"restart: {note}")
            if now >= next_sample:
                fleet.sample()
                next_sample = now + SAMPLE_SECONDS
            if now >= next_fault:
                what = chaos.act()
                if what:
                    progress(f"{now - started:6.1f}s fault {what}")
                next_fault = now + rng.uniform(1.5, 5.0)
            time.sleep(0.2)
        progress("drain: faults cleared, schedules suspended")
        chaos.drain()
        for i in range(len(TEAMS)):
            chaos.write_schedule(i, suspend=True)
        deadline = time.time() + DRAIN_SECONDS
        while time.time() < deadline:
            fleet.supervise()
            if time.time() >= next_sample:
                fleet.sample()
                next_sample = time.time() + SAMPLE_SECONDS
            if (
                checker.runs
                and all(r.last.get("phase") == "done" for r in checker.runs.values())
                and time.time() > end_chaos + 8
            ):
                break
            time.sleep(0.5)
        fleet.sample()
        metrics = fleet.metrics_text()
        codes = fleet.stop_all()
        time.sleep(0.5)  # let the checker see the last writes
        checker.stop()
        requests = emu.request_log()
        writes = checker.check_writers(requests)
        _evidence(out, checker, requests)
        led = [when for when, holder in checker.leader_history if holder]
        starts = checker.check_starts(led[0] + 1.0 if led else end_chaos, end_chaos - 3.0)
        checker.check_scope(requests)
        state_writer: dict[int | None, str] = {}
        for r in requests:  # the first to answer with a version made it (later: unchanged)
            if r.resource == "configmaps" and r.code < 400 and r.identity:
                state_writer.setdefault(r.resource_version, r.identity)

        def scraped_after(t: float, version: int | None) -> bool:
            return fleet.scraped_after(t, state_writer.get(version))

        checker.check_runs(
            fleet.metric_total("tidal_floor_breaches_total"),
            fleet.metric_total("tidal_wave_failures_total"),
            scraped_after=scraped_after,
        )
        lazy_checked = _no_leftovers(emu, checker)
        checker.leftovers.finish(time.time())
        secret_places = _no_secrets(emu, fleet, checker, metrics)
        rss_start, rss_end, socks_start, socks_end = _flatness(fleet, checker, minutes)
        for who, code in codes.items():
            if code not in (0, 1):
                checker.violation(
                    f"{who} did not stop cleanly on SIGTERM (exit {code})", Promise.PROCESS
                )
    finally:
        for inc in fleet.current.values():
            if inc.proc.poll() is None:
                inc.proc.kill()
        emu.stop()
    result = {
        "seed": seed,
        "minutes": minutes,
        "duration_seconds": round(time.time() - started, 1),
        "runs": len(checker.runs),
        "run_results": checker.results(),
        "faults_injected": sum(chaos.injected.values()),
        "faults_by_type": dict(sorted(chaos.injected.items())),
        "daemon_restarts": fleet.restarts,
        "leader_changes": max(len([h for h in checker.leader_history if h[1]]) - 1, 0),
        "acting_writes_checked": writes,
        "window_starts_checked": starts,
        "moves_checked_against_waves": checker.moves_checked,
        "moves_by_wave": sum(sum(t.moves_by_wave.values()) for t in checker.runs.values()),
        "floor_breaches_seen": checker.breaches_seen,
        "floor_breaches_in_waves": checker.breaches_in_waves(),
        "moves_outside_runs": checker.moves_outside_runs,
        "long_retry_after_faults": chaos.long_retry_after,
        "secret_places_scanned": secret_places,
        "lazy_policies_checked": lazy_checked,
        "violations": list(checker.violations),
        "rss_mb_start": round(rss_start, 1),
        "rss_mb_end": round(rss_end, 1),
        "sockets_start": socks_start,
        "sockets_end": socks_end,
        "state_namespace": STATE_NS,
        "workload_namespace": NS,
    }
    result["promises"] = per_promise(checker, result)
    (out / "soak.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    (out / "soak.md").write_text(report_markdown(result, chaos.log, started))
    return result
