"""Every command's error output passes the log redaction: a failing kubeconfig exec plugin
that echoes its credential never gets it printed, whichever command ran."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
SECRETS = ("sup3r-s3cret-T0KEN", "hunter2xyz", "sk-live-abcdef123456")


@pytest.fixture
def leaky_kubeconfig(tmp_path: Path) -> Path:
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        echo 'got {{"kind":"ExecCredential","status":{{"token":"{SECRETS[0]}"}}}}' >&2
        echo 'password={SECRETS[1]} and {SECRETS[2]}' >&2
        exit 1
        """)
    )
    plugin.chmod(0o755)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:9"}}}}]
        users: [{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1,
                 command: {plugin}, interactiveMode: Never}}}}}}]
        contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
        current-context: c
        """)
    )
    return kubeconfig


SCHEDULE = str(REPO / "schedules" / "team-1005.yaml")
COMMANDS = {
    "status": ["status", "--schedules", str(REPO / "schedules")],
    "plan": ["plan", SCHEDULE, "--window", "night"],
    "switch": ["switch", SCHEDULE, "--window", "night", "--yes"],
    "suspend": ["suspend", "team-1005"],
    "rbac": ["rbac", str(REPO / "schedules")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_exec_plugin_credential_is_never_printed(leaky_kubeconfig: Path, command: str) -> None:
    """The plugin's echoed output is redacted from stdout and stderr; the error still shows."""
    args = COMMANDS[command]
    if command != "rbac":
        args = [*args, "--kubeconfig", str(leaky_kubeconfig)]
    env = dict(os.environ, TIDAL_KUBECONFIG=str(leaky_kubeconfig), TIDAL_LOG_FORMAT="json")
    done = subprocess.run(
        [sys.executable, "-m", "tidal", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=REPO,
    )
    output = done.stdout + done.stderr
    for secret in SECRETS:
        assert secret not in output, output
    if command != "rbac":
        assert done.returncode != 0
        assert "Traceback" not in output


def test_redacting_stream_redacts_each_message_and_keeps_its_newline() -> None:
    """One write is one message: redacted whole, its line end kept."""
    from tidal.cli.redacting import RedactingStream

    out = io.StringIO()
    stream = RedactingStream(out)
    stream.write("error: exec: process returned 1. token sk-live-1\n")
    stream.write("error: Authorization: Bearer abc.def\n")
    assert out.getvalue() == (
        "error: exec: process returned 1. (plugin output [REDACTED])\n"
        "error: Authorization: [REDACTED]\n"
    )
