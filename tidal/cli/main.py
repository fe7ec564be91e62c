"""The `tidal` command: a click group; each sub-command lives in its own module."""

from __future__ import annotations

import sys

import click

from tidal import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tidal")
def cli() -> None:
    """Scheduled, wave-by-wave tidal switches on a Karmada control plane."""
    from tidal.cli.redacting import redact_stderr

    redact_stderr()


def _register() -> None:
    # Sub-commands register here, one module each, so the group stays thin.
    import importlib

    for name in ("validate", "schema", "sim", "plan", "switch", "run", "status", "controls",
                 "demo", "rbac"):
        try:
            module = importlib.import_module(f"tidal.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"tidal.cli.{name}":
                continue  # not built yet
            raise
        for command in getattr(module, "COMMANDS", ()):
            cli.add_command(command)


_register()


def main() -> None:
    try:
        cli.main(prog_name="tidal", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
