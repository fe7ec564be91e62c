"""results.json (flat dotted keys, numbers only) and report.md from the benchmark sections."""

from __future__ import annotations

import json
import math
import platform
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.harness import NOT_MEASURED, Section

REQUIRED_KEYS = (
    "b1.today.zero_ready_workloads",
    "b1.tidal.zero_ready_workloads",
    "b1.today.below_floor_workload_seconds",
    "b1.tidal.below_floor_workload_seconds",
    "b1.surge.tidal.below_floor_workload_seconds",
    "b1.surge.tidal.zero_ready_workloads",
    "b1.surge.tidal.lowest_ready_fraction",
    "b1.surge.tidal.converge_seconds",
    "b1.surge.small.tidal_refused",
    "b1.surge.small.zero_ready_workloads",
    "b1.surge.small_ewp.tidal_refused",
    "b1.surge.small_ewp.zero_ready_workloads",
    "b1.surge.strict.lowest_available_percent",
    "b1.surge.peak_extra_gpus",
    "b1.capacity_bound_seconds",
    "b2.plan_seconds_10k",
    "b2.peak_mb_10k",
    "b2.ratio_plan_over_list_10k",
    "b3.requests_tidal",
    "b3.requests_naive",
    "b4.overhead_ms_per_wave",
    # issue 26's contract
    "b3.requests_tidal_rebalance",
    "b3.requests_tidal_touch",
    "b3.watch_opens_tidal",
    "b4.wait_ms_per_wave",
    "b1.surge.converge_over_bound",
    "b1.surge.converge_over_bound_10x",
    "b4.overhead_ms_per_wave_with_answers",
    "b5.shared.makespan_over_bound",
    "b5.workloads",
    "b5.schedules",
    "b5.independent.peak_overcommit_gpus",
    "b5.shared.peak_overcommit_gpus",
    "b5.shared.makespan_seconds",
    "b5.capacity_bound_seconds",
    "b5.shared.requests",
    "b5.shared.peak_rss_mb",
    "b5.shared.max_wait_seconds",
    "b5.shared.min_wait_seconds",
    "b5.shared_status.makespan_over_bound",
    "b5.shared_status.peak_overcommit_gpus",
    "b5.shared_status.peak_rss_mb",
    "estimator.p99_ms",
    "estimator.requests_to_members_per_answer",
)


def flat_results(sections: list[Section]) -> dict[str, float]:
    results: dict[str, float] = {}
    for section in sections:
        for key, value in section.results.items():
            number = float(value)
            results[key] = NOT_MEASURED if math.isnan(number) or math.isinf(number) else number
    for key in REQUIRED_KEYS:
        results.setdefault(key, NOT_MEASURED)
    return results


def write_results(out: Path, sections: list[Section]) -> dict[str, float]:
    results = flat_results(sections)
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return results


def write_report(out: Path, sections: list[Section], *, quick: bool, seconds: float) -> Path:
    lines = [
        "# tidal benchmarks",
        "",
        f"Run {datetime.now(tz=UTC).strftime('%Y-%m-%d %H:%M UTC')} on {platform.node() or 'host'}"
        f" ({platform.python_implementation()} {platform.python_version()}, "
        f"{_cpus()} CPUs, load average {_load()} at the end: the machine is shared, so "
        f"timings are noisy), {'--quick' if quick else 'full'} mode, {seconds:.0f} s in all. "
        "Figures are from tidal's emulator (tidal_sim) over real HTTP on loopback. "
        "A value of -1 in results.json means not measured (the section says why).",
        "",
    ]
    for section in sections:
        lines += [
            f"## {section.title}",
            "",
            *section.markdown,
            "",
            f"_{section.seconds:.0f} s wall_",
            "",
        ]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def _load() -> str:
    import os

    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
