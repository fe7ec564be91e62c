"""`kubectl tidal ...`: the kubectl plugin the package installs as kubectl-tidal."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tidal.cli.main import cli

REPO = Path(__file__).parents[2]


def test_the_package_installs_kubectl_tidal() -> None:
    """pyproject declares the console script kubectl-tidal, kubectl's plugin name for
    `kubectl tidal`."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-tidal"] == "tidal.cli.main:kubectl_main"


def _plugin(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl-tidal as kubectl runs it: an executable of that name on PATH, here a stand-in
    that calls the entry point (the installed script may predate this checkout)."""
    script = tmp_path / "kubectl-tidal"
    script.write_text(
        f"#!{sys.executable}\nfrom tidal.cli.main import kubectl_main\nkubectl_main()\n"
    )
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "sim")]))
    return subprocess.run(
        [str(script), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_the_plugin_has_every_verb_of_tidal(tmp_path: Path) -> None:
    """`kubectl tidal --help` lists every verb of `tidal` and names itself `kubectl tidal`;
    a verb's help says `kubectl tidal VERB`."""
    done = _plugin(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: kubectl tidal ")
    listed = done.stdout.split("Commands:", 1)[1]
    verbs = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert verbs == set(cli.commands)
    switch = _plugin(tmp_path, "switch", "--help")
    assert switch.stdout.startswith("Usage: kubectl tidal switch ")


def test_the_plugin_sends_commands_to_a_daemon(tmp_path: Path) -> None:
    """`kubectl tidal pause|resume|abort|promote|retry` take --daemon and --token-file; a
    daemon that does not answer is one line and exit 1."""
    for verb in ("pause", "resume", "abort", "promote", "retry"):
        helped = _plugin(tmp_path, verb, "--help")
        assert helped.stdout.startswith(f"Usage: kubectl tidal {verb} ")
        assert "--daemon URL" in helped.stdout and "--token-file" in helped.stdout
    refused = _plugin(tmp_path, "abort", "team-1", "--daemon", "http://127.0.0.1:1")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: the daemon at http://127.0.0.1:1 did not answer")
    assert len(refused.stderr.strip().splitlines()) == 1
