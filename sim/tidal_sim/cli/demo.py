"""`tidal demo`: the emulator, two example teams and the daemon; a night and a day switch, live."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK, UNSAFE_PLAN, WAVE_FAILED

INTERRUPTED = 130  # as the shell reports a SIGINT, and as tidal.cli.main does


@click.command("demo")
@click.option(
    "--keep", is_flag=True, help="leave the emulator running after the summary (Ctrl-C ends it)"
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="summary format; with json, progress goes to stderr and stdout is the JSON",
)
@click.option(
    "--speed", type=float, default=10.0, show_default=True, help="simulated seconds per real second"
)
@click.option(
    "--plot",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("tidal-demo.png"),
    show_default=True,
    metavar="FILE",
    help="where to write the picture of the demo (replicas per cluster over time, "
    "waves, floors); needs matplotlib (pip install 'tidal[plot]')",
)
def demo_command(keep: bool, output: str, speed: float, plot: Path) -> None:
    """Run a night switch and a day switch of two teams against the built-in emulator.

    No cluster needed: the emulator (tidal sim) starts with the default topology, the example
    schedules (./schedules/ if present, else the copies shipped with tidal) get their windows
    brought forward to the next minutes, and the real daemon carries them out while you watch
    waves, gates, ready replicas per cluster and floors. Ends with a summary, where each team
    started and ended per cluster (and why a split differs from the start), and a picture of
    the replicas over time (--plot); exit 0 when every switch succeeded without breaching a
    floor (2: a switch failed, 3: one was refused).
    """
    from rich.console import Console

    from tidal_sim.demo.render import LiveProgress, PlainProgress
    from tidal_sim.demo.runner import Demo, DemoError, DemoOptions, Progress

    if speed <= 0:
        raise click.BadParameter("must be positive", param_hint="--speed")
    stream = sys.stderr if output == "json" else sys.stdout
    # Not a terminal: no width to detect; wide enough that the summary's rows do not wrap.
    console = Console(file=stream, width=None if stream.isatty() else 120)

    def make_progress(totals: Any, sim_now: Any) -> Progress:
        if stream.isatty():
            return LiveProgress(console, totals, sim_now, "tidal demo")
        return PlainProgress(stream, totals, sim_now)

    # About 45 s of real time at x10; a slower clock gets proportionally longer.
    limit = max(110.0, 1100.0 / speed)
    demo = Demo(DemoOptions(cwd=Path.cwd(), speed=speed, time_limit=limit), make_progress)
    try:
        result = demo.run()
    except DemoError as exc:
        demo.close(remove=False)
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    except KeyboardInterrupt:
        demo.close(remove=True)
        raise
    except BaseException:
        demo.close(remove=False)  # keeps the daemon log of whatever went wrong
        raise
    kept = (keep or not result.ok) and not result.interrupted
    _summary(result, console, output, kept=kept, speed=speed, plot=plot)
    if keep and not result.interrupted:
        _keep(result, console, to_stderr=output == "json")
    demo.close(remove=not kept or keep)  # a failed run keeps its daemon log for a look
    sys.exit(_exit_code(result))


def _exit_code(result: Any) -> int:
    if result.interrupted:
        return INTERRUPTED
    return OK if result.ok else UNSAFE_PLAN if result.refused else WAVE_FAILED


def _summary(
    result: Any, console: Any, output: str, *, kept: bool, speed: float, plot: Path
) -> None:
    """The result as JSON on stdout, or the summary table, the splits, the picture's path and
    a verdict line."""
    from tidal_sim.demo.render import splits_table, summary_table

    picture, no_picture = _picture(result, plot)
    if output == "json":
        click.echo(
            json.dumps(
                {**result.to_json(kept=kept), "picture": str(picture) if picture else None},
                indent=2,
            )
        )
        if no_picture:
            click.echo(no_picture, err=True)
        return
    console.print(summary_table(result.tracker))
    console.print(splits_table(result.splits))
    for split in result.splits:
        console.print(f"{split.why}.")
    console.print(f"picture: {picture}" if picture else no_picture)
    verdict = (
        "every switch succeeded, no floor breached"
        if result.ok
        else "interrupted"
        if result.interrupted
        else f"NOT all switches succeeded (daemon log: {result.log})"
    )
    console.print(f"{verdict}; {result.wall_seconds:.0f}s wall time at x{speed:g}")


def _picture(result: Any, path: Path) -> tuple[Path | None, str]:
    """The demo's picture, or None and a one-line note saying why not."""
    from tidal.plot import PlotUnavailable

    try:
        return result.picture(path), ""
    except PlotUnavailable as exc:
        return None, f"no picture: {exc}"
    except OSError as exc:
        return None, f"no picture: cannot write {path}: {exc.strerror or exc}; pass --plot FILE"


def _keep(result: Any, console: Any, *, to_stderr: bool) -> None:
    """Print how to poke at the emulator, then wait for Ctrl-C (or SIGTERM)."""
    kc = result.kubeconfig
    schedules = (
        Path("schedules")
        if (Path("schedules") / "team-1005.yaml").is_file()
        else result.workdir / "schedules"
    )
    ran = result.workdir / "schedules"  # the copies the daemon ran: windows brought forward
    # Plain echo: commands must not be wrapped at the console's width (copy and paste).
    click.echo(
        f"\nThe emulator keeps running (simulated clock x{result.speed:g}; `tidal status`"
        " reads the real clock: its next starts are the real day's). Kubeconfig:\n"
        f"  {kc}\nTry:\n"
        f"  tidal status --schedules {ran} --kubeconfig {kc}\n"
        f"  kubectl --kubeconfig {kc} get cpp\n"
        f"  kubectl --kubeconfig {kc} get deploy,rb -n ai-app\n"
        f"  kubectl --kubeconfig {kc} describe cpp team-1005-cpp   # the daemon's Events\n"
        f"  tidal plan {schedules}/team-1005.yaml --window night --kubeconfig {kc}\n"
        f"  tidal switch {schedules}/team-1005.yaml --window night --kubeconfig {kc}\n"
        "Ctrl-C to stop.",
        err=to_stderr,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        console.print("stopping the emulator")


COMMANDS = [demo_command]
