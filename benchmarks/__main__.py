"""`python -m benchmarks --out DIR [--quick] [--only b1,b2,...] [--karmada-kubeconfig FILE]`:
run, then write DIR/report.md, DIR/results.json and the PNG plots. With --karmada-kubeconfig,
B1's surge night and B3's counts also run against that Karmada plane and the emulator over HTTP
(benchmarks/real.py); `--only ''` runs that alone."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import time
import traceback
from pathlib import Path

from benchmarks.harness import RunConfig, Section
from benchmarks.report import write_report, write_results

BENCHMARKS = {
    "b1": ("benchmarks.b1_availability", "B1: availability during the night switch"),
    "b2": ("benchmarks.b2_scale", "B2: scale of planning"),
    "b3": ("benchmarks.b3_api_cost", "B3: API cost per switch"),
    "b4": ("benchmarks.b4_overhead", "B4: engine overhead per wave"),
    "b5": ("benchmarks.b5_platform", "B5: the platform-wide night"),
    "sim": ("benchmarks.sim_throughput", "Emulator throughput"),
    "estimator": ("benchmarks.estimator", "tidal estimator: answer latency and member cost"),
}


def _quiet() -> None:
    """Benchmarks print their own progress; the engine's log lines would drown it."""
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    logging.getLogger().setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--out", required=True, type=Path, help="directory for the report")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="B2/B3 and the emulator benchmark at 1/10 size (under 3 minutes)",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="toy sizes, for the smoke test only (figures meaningless)",
    )
    parser.add_argument(
        "--only",
        default=",".join(BENCHMARKS),
        help=f"comma-separated subset of {','.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--karmada-kubeconfig",
        type=Path,
        help="a real Karmada plane (python -m tools.realkarmada up --kubeconfig-out FILE): "
        "run B1's surge night and B3's counts there too, beside the emulator's",
    )
    parser.add_argument(
        "--real-workloads",
        type=int,
        default=20,
        help="workloads of the real-plane arms (team 1005 of the demo topology: at most 20)",
    )
    args = parser.parse_args(argv)
    if args.karmada_kubeconfig is not None and not args.karmada_kubeconfig.is_file():
        parser.error(
            f"--karmada-kubeconfig {args.karmada_kubeconfig}: no such file; pass the kubeconfig "
            "`python -m tools.realkarmada up --kubeconfig-out FILE` wrote"
        )
    if not 1 <= args.real_workloads <= 20:
        parser.error("--real-workloads: choose 1 to 20 (team 1005 of the demo topology)")
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(
            f"--only: unknown benchmark(s) {', '.join(unknown)}; "
            f"choose from {', '.join(BENCHMARKS)}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    _quiet()
    cfg = RunConfig(args.out, args.quick or args.tiny, args.tiny)
    sections: list[Section] = []
    t0 = time.monotonic()
    jobs = [(name, *BENCHMARKS[name]) for name in chosen]
    if args.karmada_kubeconfig is not None:
        jobs.append(("real", "benchmarks.real", "Real Karmada: B1 surge night and B3 counts"))
    for name, module_name, title in jobs:
        print(f"[{time.monotonic() - t0:6.1f}s] {title} ...", flush=True)
        started = time.monotonic()
        try:
            module = importlib.import_module(module_name)
            section: Section = (
                module.run_remote(cfg, args.karmada_kubeconfig, workloads=args.real_workloads)
                if name == "real"
                else module.run(cfg)
            )
        except Exception as exc:  # one broken benchmark must not lose the others' figures
            section = Section(name, title)
            section.say(
                f"**Not measured**: the benchmark failed: `{type(exc).__name__}: {exc}`",
                "",
                "```",
                traceback.format_exc()[-3000:],
                "```",
            )
            print(f"  failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        section.seconds = time.monotonic() - started
        sections.append(section)
        for key, value in sorted(section.results.items()):
            print(f"  {key} = {value:g}", flush=True)
    total = time.monotonic() - t0
    write_results(args.out, sections)
    report = write_report(args.out, sections, quick=args.quick, seconds=total)
    print(f"[{total:6.1f}s] wrote {report} and {args.out / 'results.json'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
