"""The soak's results: the evidence and the violations counted per promise (soak.json's
`promises`), and the markdown report (soak.md) that docs/reliability.md quotes."""

from __future__ import annotations

from typing import Any

from benchmarks.soak.checker import Checker
from benchmarks.soak.promises import Promise


def per_promise(checker: Checker, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each promise: what the soak checked (counts) and how many violations it found."""
    evidence: dict[Promise, dict[str, Any]] = {
        Promise.WINDOWS: {
            "window_starts_checked": result["window_starts_checked"],
            "handled": dict(sorted(checker.starts.items())),
        },
        Promise.RESUME: {
            "runs": result["runs"],
            "run_results": result["run_results"],
            "daemon_restarts": result["daemon_restarts"],
            "triggers_rewritten_before_journalled": checker.retouches,
        },
        Promise.SINGLE_WRITER: {
            "acting_writes_checked": result["acting_writes_checked"],
            "leader_changes": result["leader_changes"],
            "late_in_flight_writes_allowed": checker.writers.late,
            "writes_that_changed_nothing_judged_by_time": checker.writers.unchanged,
            "long_retry_after_faults": result["long_retry_after_faults"],
        },
        Promise.FLOORS: {
            "moves_checked_against_waves": result["moves_checked_against_waves"],
            "moves_by_wave": result["moves_by_wave"],
            "moves_by_rollback": checker.moves_in_rollback,
            "moves_outside_runs": result["moves_outside_runs"],
            "moves_by_karmada_after_a_scale": checker.moves_by_scale,
            "floor_breaches_seen": result["floor_breaches_seen"],
            "floor_breaches_in_waves": result["floor_breaches_in_waves"],
            "of_them_while_no_replica_led": checker.breaches_unled,
            "of_them_metric_checked": checker.metrics_checked,
            "of_them_metric_unverifiable": checker.metrics_unverified,
        },
        Promise.SECRETS: {"places_scanned": result["secret_places_scanned"]},
        Promise.SCOPE: {"writes_checked": checker.scope_checked},
        Promise.LAZY: {"policies_checked": result["lazy_policies_checked"]},
        Promise.LEFTOVERS: {
            "overrides_seen": checker.leftovers.seen,
            "override_ends_checked": checker.leftovers.checks,
        },
        Promise.PROCESS: {
            "rss_mb": f"{result['rss_mb_start']} -> {result['rss_mb_end']}",
            "sockets": f"{result['sockets_start']} -> {result['sockets_end']}",
        },
        Promise.CHECKER: {"store_events_seen": checker.events},
    }
    return {
        p.value: {"title": p.heading, **evidence[p], "violations": checker.by_promise[p]}
        for p in Promise
    }


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    return str(value)


def report_markdown(result: dict[str, Any], log: list[tuple[float, str]], started: float) -> str:
    rows = [
        ("duration", f"{result['duration_seconds']} s (seed {result['seed']})"),
        ("runs", f"{result['runs']} {result['run_results']}"),
        ("faults injected", f"{result['faults_injected']} {result['faults_by_type']}"),
        (
            "daemon restarts / leader changes",
            f"{result['daemon_restarts']} / {result['leader_changes']}",
        ),
        ("acting writes checked against the lease", str(result["acting_writes_checked"])),
        (
            "window starts checked (ran once, or recorded not run with a reason)",
            str(result["window_starts_checked"]),
        ),
        ("moves checked against the wave in flight", str(result["moves_checked_against_waves"])),
        (
            "floor breaches seen (during waves)",
            f"{result['floor_breaches_seen']} ({result['floor_breaches_in_waves']})",
        ),
        ("RSS MB start -> end", f"{result['rss_mb_start']} -> {result['rss_mb_end']}"),
        ("sockets start -> end", f"{result['sockets_start']} -> {result['sockets_end']}"),
        ("violations", str(len(result["violations"])) if result["violations"] else "none"),
    ]
    lines = ["# Chaos soak", "", "| measure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    lines += ["", "## Per promise", "", "| promise | checked | violations |", "|---|---|---|"]
    for entry in result["promises"].values():
        checked = "; ".join(
            f"{k.replace('_', ' ')}: {_cell(v)}"
            for k, v in entry.items()
            if k not in ("title", "violations")
        )
        lines.append(f"| {entry['title']} | {checked} | {entry['violations']} |")
    if result["violations"]:
        lines += ["", "## Violations", ""] + [f"- {v}" for v in result["violations"]]
    lines += ["", "## Faults", ""] + [f"- {t - started:6.1f}s {what}" for t, what in log]
    return "\n".join(lines) + "\n"
