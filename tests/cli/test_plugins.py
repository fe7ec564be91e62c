"""`tidal sim` and `tidal demo` come from tidal-sim through the `tidal.commands` entry points;
without it they answer with one line saying how to install it."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import click
import pytest
import structlog
from click.testing import CliRunner

from tidal.cli import plugins
from tidal.cli.exitcodes import INVALID_INPUT
from tidal.cli.main import cli


def test_installed_tidal_sim_registers_sim_and_demo() -> None:
    """With tidal-sim installed the group holds its real commands, loaded by entry point."""
    found = {command.name: command for command in plugins.discovered()}
    assert {"sim", "demo"} <= set(found)
    assert cli.commands["sim"] is found["sim"] and cli.commands["demo"] is found["demo"]
    assert found["demo"].callback is not None
    assert found["demo"].callback.__module__ == "tidal_sim.cli.demo"


@pytest.mark.parametrize("args", [["demo"], ["sim", "--port", "0"]])
def test_without_tidal_sim_the_command_says_how_to_install_it(args: list[str]) -> None:
    """The stand-in prints one error line naming tidal-sim and the install command, exit 1."""
    group = click.Group("tidal")
    group.add_command(plugins.missing(args[0], plugins.OPTIONAL[args[0]]))
    result = CliRunner().invoke(group, args)
    assert result.exit_code == INVALID_INPUT
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "tidal-sim" in lines[0] and "pip install -e ./sim" in lines[0]


def test_a_broken_plugin_does_not_break_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry point that fails to load, or is no click command, is skipped (and logged)."""
    broken = EntryPoint("broken", "tidal_sim.no_such_module:command", plugins.GROUP)
    odd = EntryPoint("odd", "tidal.cli.exitcodes:OK", plugins.GROUP)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [broken, odd])
    with structlog.testing.capture_logs() as logs:
        assert plugins.discovered() == []
    assert [(e["event"], e["entry_point"]) for e in logs] == [
        ("plugin_command_unavailable", broken.value),
        ("plugin_command_unavailable", odd.value),
    ]
