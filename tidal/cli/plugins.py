"""Sub-commands that other distributions add: the `tidal.commands` entry-point group.

tidal-sim (the emulator, not part of the product) registers `tidal sim` and `tidal demo` there.
When it is not installed those two names still answer, with one line saying how to get them.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

import click
import structlog

from tidal.cli.exitcodes import INVALID_INPUT

GROUP = "tidal.commands"
# Commands that README and docs promise; they come from the tidal-sim distribution.
OPTIONAL = {
    "sim": "serve the Karmada emulator (needs tidal-sim)",
    "demo": "a night and a day switch against the emulator (needs tidal-sim)",
}
INSTALL_HINT = "pip install -e ./sim (from a tidal checkout) or pip install tidal-sim"

log = structlog.get_logger(__name__)


def discovered() -> list[click.Command]:
    """The commands every installed distribution registers under `tidal.commands`."""
    commands: list[click.Command] = []
    for entry in entry_points(group=GROUP):
        command = _load(entry)
        if command is not None:
            commands.append(command)
    return commands


def _load(entry: EntryPoint) -> click.Command | None:
    try:
        loaded = entry.load()
    except Exception as exc:  # a broken plug-in must not take the product's CLI down
        log.warning("plugin_command_unavailable", entry_point=entry.value, error=str(exc))
        return None
    if not isinstance(loaded, click.Command):
        log.warning(
            "plugin_command_unavailable",
            entry_point=entry.value,
            error=f"not a click command but {type(loaded).__name__}",
        )
        return None
    return loaded


def missing(name: str, summary: str) -> click.Command:
    """A stand-in for an optional command whose distribution is not installed."""

    @click.command(
        name,
        help=summary,
        short_help=summary,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def stand_in() -> None:
        click.echo(
            f"error: `tidal {name}` comes with the emulator distribution tidal-sim, "
            f"which is not installed; install it with: {INSTALL_HINT}",
            err=True,
        )
        raise SystemExit(INVALID_INPUT)

    return stand_in
