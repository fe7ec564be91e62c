"""`python -m benchmarks.soak --minutes N --out DIR [--seed S]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.soak.runner import run_soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak", description="chaos soak of two tidal daemons"
    )
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    def progress(text: str) -> None:
        if not args.quiet:
            print(text, flush=True)

    result = run_soak(args.minutes, args.out, args.seed, progress)
    print((args.out / "soak.md").read_text().split("\n## Faults")[0])
    return 0 if not result["violations"] else 1


if __name__ == "__main__":
    sys.exit(main())
