"""Options and output habits every command shares: where the kubeconfig is, and how wide a
table may be."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import click

kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="kubeconfig of the Karmada apiserver (TIDAL_KUBECONFIG; else KUBECONFIG, the pod's "
    "service account, ~/.kube/config)",
)
context_option = click.option(
    "--context", default=None, help="kubeconfig context (TIDAL_CONTEXT; default: the current one)"
)
schedules_option = click.option(
    "--schedules",
    type=click.Path(path_type=Path),
    help="schedules directory (TIDAL_SCHEDULES)",
)
teams_option = click.option(
    "--teams",
    type=click.Path(path_type=Path, dir_okay=False),
    help="the team estimator's TeamCapacity file, when one is deployed "
    "(TIDAL_ESTIMATOR__TEAMS): dynamic splits take its answers into account",
)
yes_option = click.option("--yes", is_flag=True, help="do not ask for confirmation")


def table_width(stream: IO[str], columns: int | None, piped: int) -> int | None:
    """The width of a table: COLUMNS when set, the terminal's own on a terminal (None lets
    rich ask it), else `piped` (wide enough that no value is cut)."""
    if columns is not None:
        return columns
    return None if stream.isatty() else piped
