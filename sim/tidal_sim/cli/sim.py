"""`tidal sim`: run the Karmada emulator on loopback until interrupted."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK
from tidal_sim.clock import ScaledClock
from tidal_sim.emulator import DEFAULT_TOPOLOGY, Emulator
from tidal_sim.topology import TopologyError
from tidal_sim.version import LATEST_RELEASE, KarmadaVersion


@click.command("sim")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="port on 127.0.0.1 to serve on (0: any free port)",
)
@click.option(
    "--topology",
    type=click.Path(path_type=Path, exists=False),
    default=None,
    help="YAML file or directory of manifests to start with "
    "(default: the built-in two-cluster demo topology)",
)
@click.option("--empty", is_flag=True, help="start with no topology at all (only namespaces)")
@click.option(
    "--kubeconfig-out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("tidal-sim.kubeconfig"),
    show_default=True,
    help="where to write a kubeconfig for kubectl and tidal",
)
@click.option(
    "--speed",
    type=float,
    default=1.0,
    show_default=True,
    help="simulated seconds per real second (pod start-up, termination, latency)",
)
@click.option("--seed", type=int, default=0, show_default=True, help="seed for random faults")
@click.option(
    "--karmada-version",
    type=click.Choice([v.value for v in KarmadaVersion]),
    default=None,
    help="the Karmada release to behave as (default: the topology's karmadaVersion, else "
    f"the latest release, {LATEST_RELEASE.value}); see docs/fidelity.md",
)
def sim_command(
    port: int,
    topology: Path | None,
    empty: bool,
    kubeconfig_out: Path,
    speed: float,
    seed: int,
    karmada_version: str | None,
) -> None:
    """Serve a Karmada emulator (Kubernetes API over HTTP) until Ctrl-C or SIGTERM.

    Prints the URL and writes a kubeconfig, e.g.
    `kubectl --kubeconfig tidal-sim.kubeconfig get clusterpropagationpolicies`.
    Admin endpoints: /sim/v1/timeline, /sim/v1/requests, /sim/v1/requestlog, /sim/v1/faults.
    """
    if speed <= 0:
        raise click.BadParameter("must be positive", param_hint="--speed")
    source = None if empty else (topology or DEFAULT_TOPOLOGY)
    try:
        version = KarmadaVersion(karmada_version) if karmada_version else None
        emulator = Emulator(
            source, clock=ScaledClock(speed), port=port, seed=seed, karmada_version=version
        )
        emulator.start()
    except TopologyError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(INVALID_INPUT) from None
    except OSError as exc:
        click.echo(
            f"error: cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}; pick another --port",
            err=True,
        )
        raise SystemExit(INVALID_INPUT) from None
    signalled: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        # a note only: Event.set() here could wait for the lock of the Event.wait this very
        # thread is inside, and hang
        signalled.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        path = emulator.write_kubeconfig(kubeconfig_out)
        click.echo(
            f"tidal sim serving {emulator.url} (as Karmada v{emulator.karmada_version.value})",
            nl=True,
        )
        click.echo(f"kubeconfig: {path}")
        crds = emulator.validator.source
        if crds.notice:
            click.echo(f"tidal sim: {crds.notice}", err=True)
        elif crds.directory is not None:
            click.echo(f"Karmada CRD schemas: {crds.directory} (from the {crds.origin})")
        click.echo(f"try: kubectl --kubeconfig {path} get clusters,cpp")
        while not signalled:
            time.sleep(0.2)
    finally:
        emulator.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("tidal sim stopped")
    raise SystemExit(OK)


COMMANDS = [sim_command]
