"""`python -m tools.realkarmada build|up|down|modules|load-demo|estimator`: the real-Karmada
tier's command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tools.realkarmada.versions import DEFAULT_KARMADA, ToolchainError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.realkarmada")
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the upstream commands (cached)")
    b.add_argument("--karmada-version", default=DEFAULT_KARMADA)
    b.add_argument("--log", type=Path, help="go build output (default: in the cache dir)")
    m = sub.add_parser("modules", help="regenerate the committed wrapper modules")
    m.add_argument("--karmada-version", default=DEFAULT_KARMADA)
    u = sub.add_parser("up", help="start the control plane and two members; return when ready")
    u.add_argument("--karmada-version", default=DEFAULT_KARMADA)
    u.add_argument("--kubeconfig-out", type=Path, required=True)
    u.add_argument("--work-dir", type=Path)
    d = sub.add_parser("down", help="stop every process `up` started and remove its work dir")
    d.add_argument("--work-dir", type=Path)
    ld = sub.add_parser("load-demo", help="apply the demo topology's teams to a running plane")
    ld.add_argument("--kubeconfig", type=Path, required=True)
    ld.add_argument("--work-dir", type=Path, help="the plane's work dir (its tidal estimator)")
    e = sub.add_parser(
        "estimator",
        help="where the plane's tidal estimator listens, and its "
        "teams file (read again when it changes)",
    )
    e.add_argument("--work-dir", type=Path)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ToolchainError as e:
        print(f"realkarmada {args.cmd}: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.cmd == "modules":
        from tools.realkarmada.modules import write_modules
        from tools.realkarmada.versions import MODULES_DIR, Release

        write_modules(Release.of(args.karmada_version), MODULES_DIR)
        return 0
    if args.cmd == "build":
        from tools.realkarmada.build import build

        started = time.monotonic()
        built = build(args.karmada_version, args.log)
        print(
            f"built {built.release.karmada} (kubernetes {built.release.kubernetes}) in "
            f"{time.monotonic() - started:.1f}s: {built.bin_dir}"
        )
        return 0
    from tools.realkarmada import plane

    if args.cmd == "load-demo":
        from tools.realkarmada.demo import load_demo
        from tools.realkarmada.procs import PlaneError

        try:
            print(
                f"applied {load_demo(args.kubeconfig, args.work_dir)} objects of the demo "
                "topology, GPU resource models, and the demo's team capacity"
            )
        except PlaneError as e:
            print(f"realkarmada load-demo: {e}", file=sys.stderr)
            return 1
        return 0

    if args.cmd == "estimator":
        from tools.realkarmada import estimator
        from tools.realkarmada.procs import PlaneError

        try:
            info = estimator.info(args.work_dir or plane.default_work_dir())
        except (PlaneError, OSError) as e:
            print(f"realkarmada estimator: {e}", file=sys.stderr)
            return 1
        print(
            f"grpc 127.0.0.1:{info['grpc']} http http://127.0.0.1:{info['http']} "
            f"teams {info['teams']}"
        )
        return 0
    if args.cmd == "up":
        return plane.up_command(args.karmada_version, args.kubeconfig_out, args.work_dir)
    return plane.down_command(args.work_dir)


if __name__ == "__main__":
    sys.exit(main())
