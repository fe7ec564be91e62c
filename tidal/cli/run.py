"""`tidal run`: the long-running daemon (scheduler, lease, state, reload, HTTP)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from tidal.cli.options import context_option, kubeconfig_option
from tidal.cli.plan import fail, karmada_overrides, karmada_version_option
from tidal.cli.stop_signals import StopSignals


@click.command("run")
@click.option(
    "--schedules",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="schedules directory (TIDAL_SCHEDULES)",
)
@kubeconfig_option
@context_option
@click.option(
    "--port", type=int, default=None, help="port for /healthz, /readyz and /metrics (TIDAL_PORT)"
)
@click.option(
    "--listen-address",
    default=None,
    help="IP address to serve them on (TIDAL_LISTEN_ADDRESS; default 0.0.0.0, every "
    "interface; 127.0.0.1 for this host only)",
)
@click.option(
    "--identity",
    default=None,
    help="leader-election identity (TIDAL_IDENTITY; default hostname-pid)",
)
@karmada_version_option
def run_command(
    schedules: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    port: int | None,
    listen_address: str | None,
    identity: str | None,
    karmada_version: str | None,
) -> None:
    """Run the daemon: fire every window once, at the right local time, on one replica."""
    from tidal.daemon.app import Daemon, Wiring
    from tidal.karmada.client import KarmadaClient
    from tidal.karmada.errors import KarmadaError
    from tidal.logs import configure_logging
    from tidal.metrics import Metrics
    from tidal.settings import SettingsError, load_settings

    try:
        settings = load_settings(
            schedules=schedules,
            kubeconfig=kubeconfig,
            context=context,
            port=port,
            listen_address=listen_address,
            identity=identity,
            karmada=karmada_overrides(karmada_version),
        )
    except SettingsError as exc:
        fail(str(exc))
    if not settings.schedules.is_dir():
        fail(
            f"schedules directory {settings.schedules} does not exist; "
            "set --schedules or TIDAL_SCHEDULES"
        )
    configure_logging(settings.log_format, settings.log_level)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # job chatter, not news
    metrics = Metrics()
    try:
        client = KarmadaClient.from_settings(settings, on_request=metrics.on_request)
    except KarmadaError as exc:
        fail(f"{exc}; set --kubeconfig or TIDAL_KUBECONFIG")
    daemon = Daemon(settings, client=client, wiring=Wiring(metrics=metrics))

    signals = StopSignals().install()
    try:
        daemon.start()
    except OSError as exc:
        fail(
            f"cannot serve HTTP on {settings.listen_address} port "
            f"{settings.port}: {exc.strerror}; choose another with --port/TIDAL_PORT or "
            "--listen-address/TIDAL_LISTEN_ADDRESS"
        )
    signals.wait(daemon.wait)
    sys.exit(daemon.shutdown(settings.scheduler.shutdown_grace_seconds))


COMMANDS = [run_command]
