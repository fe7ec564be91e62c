"""`tidal estimator`: serve Karmada's scheduler-estimator protocol with team-level capacity;
`tidal estimator check`: tell whether karmada-scheduler reaches it. Exit 1 on invalid input
(check: when a cluster is not reached or not asked)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tidal.cli.exitcodes import INVALID_INPUT, OK
from tidal.cli.plan import client_of, fail
from tidal.cli.stop_signals import StopSignals


def _settings(
    kubeconfig: Path | None, context: str | None, port: int | None, estimator: dict[str, Any]
) -> Any:
    from tidal.logs import configure_logging
    from tidal.settings import SettingsError, load_settings

    try:
        settings = load_settings(
            kubeconfig=kubeconfig, context=context, port=port, estimator=estimator or None
        )
    except SettingsError as exc:
        fail(str(exc))
    configure_logging(settings.log_format, settings.log_level)
    return settings


def _karmada_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--kubeconfig and --context, as both estimator commands take them."""
    f = click.option("--context", default=None, help="kubeconfig context (TIDAL_CONTEXT)")(f)
    return click.option(
        "--kubeconfig",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="kubeconfig of the Karmada apiserver (TIDAL_KUBECONFIG)",
    )(f)


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@click.group("estimator", invoke_without_command=True)
@click.option(
    "--teams",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="the TeamCapacity file (TIDAL_ESTIMATOR__TEAMS)",
)
@_karmada_options
@click.option(
    "--grpc-port",
    type=int,
    default=None,
    help="gRPC port karmada-scheduler dials (TIDAL_ESTIMATOR__GRPC_PORT; 10352)",
)
@click.option(
    "--port",
    type=int,
    default=None,
    help="port for /healthz, /readyz, /metrics, /status (TIDAL_PORT; 8080)",
)
@click.option("--address", default=None, help="listen address (TIDAL_ESTIMATOR__ADDRESS)")
@click.option(
    "--refresh-seconds",
    type=float,
    default=None,
    help="members re-read this often (TIDAL_ESTIMATOR__REFRESH_SECONDS; 15)",
)
@click.pass_context
def estimator_command(
    ctx: click.Context,
    teams: Path | None,
    kubeconfig: Path | None,
    context: str | None,
    grpc_port: int | None,
    port: int | None,
    address: str | None,
    refresh_seconds: float | None,
) -> None:
    """Serve team-level capacity to karmada-scheduler (its scheduler-estimator gRPC service),
    for every member cluster from one process."""
    if ctx.invoked_subcommand is not None:
        return
    from tidal.estimator.app import EstimatorApp
    from tidal.loading.teams import TeamsFileError, load_teams

    settings = _settings(
        kubeconfig,
        context,
        port,
        _given(teams=teams, grpc_port=grpc_port, address=address, refresh_seconds=refresh_seconds),
    )
    if settings.estimator.teams is None:
        fail("no teams file; pass --teams FILE or set TIDAL_ESTIMATOR__TEAMS")
    try:
        rules = load_teams(settings.estimator.teams)
    except TeamsFileError as exc:
        fail(str(exc))
    app = EstimatorApp(
        settings.estimator,
        client_of(settings),
        rules,
        http_port=settings.port,
        reload=_reloader(settings.estimator.teams),
    )
    try:
        app.start()
    except OSError as exc:
        fail(f"cannot listen ({exc}); choose other ports with --grpc-port and --port")

    StopSignals().install().wait(app.wait)
    app.stop()


def _reloader(path: Path) -> Any:
    """Reads the teams file again when it changed; a broken edit keeps the last good teams."""
    import structlog

    from tidal.loading.teams import TeamsFileError, load_teams

    log = structlog.get_logger("tidal.estimator")

    def stamp() -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    seen = [stamp()]

    def reload() -> Any:
        now = stamp()
        if now == seen[0]:
            return None
        seen[0] = now
        try:
            return load_teams(path)
        except TeamsFileError as exc:
            log.warning("estimator_teams_invalid", error=str(exc).splitlines()[0])
            return None

    return reload


@estimator_command.command("check")
@_karmada_options
@click.option(
    "--estimator",
    "address",
    default="127.0.0.1:10352",
    show_default=True,
    help="the estimator's gRPC address, host:port",
)
@click.option(
    "--status-url",
    default="http://127.0.0.1:8080",
    show_default=True,
    help="the estimator's HTTP address (its /status)",
)
@click.option(
    "--namespace",
    default="karmada-system",
    show_default=True,
    help="karmada-scheduler's --scheduler-estimator-namespace",
)
@click.option(
    "--prefix",
    default="karmada-scheduler-estimator",
    show_default=True,
    help="karmada-scheduler's --scheduler-estimator-service-prefix",
)
@click.option(
    "--port",
    "service_port",
    type=int,
    default=10352,
    show_default=True,
    help="karmada-scheduler's --scheduler-estimator-port",
)
def check_command(
    kubeconfig: Path | None,
    context: str | None,
    address: str,
    status_url: str,
    namespace: str,
    prefix: str,
    service_port: int,
) -> None:
    """Tell, per member cluster, whether karmada-scheduler reaches the estimator and asks it."""
    from tidal.estimator.check import check
    from tidal.karmada.clusters import list_clusters
    from tidal.karmada.errors import KarmadaError

    settings = _settings(kubeconfig, context, None, {})
    client = client_of(settings)
    try:
        clusters = sorted(str((c.get("metadata") or {}).get("name")) for c in list_clusters(client))
    except KarmadaError as exc:
        fail(f"cannot list Karmada's clusters: {exc}")
    checks, status_read = check(
        client,
        clusters,
        estimator=address,
        status_url=status_url,
        namespace=namespace,
        prefix=prefix,
        port=service_port,
    )
    for result in checks:
        click.echo(result.line())
    if not status_read:
        click.echo(f"estimator /status at {status_url} unreadable: requests seen unknown")
    raise SystemExit(OK if checks and all(c.ok for c in checks) else INVALID_INPUT)


COMMANDS = [estimator_command]
