"""Every bad setting or flag of `tidal run` is one line naming the setting and the expected form,
exit 1 (2 for click's own usage errors), never a traceback. Real subprocesses, as a pod runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidal_sim.emulator import Emulator

# (environment, extra flags, words the one-line error must contain)
ENV_CASES: list[tuple[dict[str, str], list[str], tuple[str, ...]]] = [
    ({"TIDAL_PORT": "abc"}, [], ("TIDAL_PORT", "integer")),
    ({"TIDAL_PORT": "70000"}, [], ("TIDAL_PORT", "65535")),
    ({"TIDAL_LOG_FORMAT": "xml"}, [], ("TIDAL_LOG_FORMAT", "'json'")),
    ({"TIDAL_LOG_LEVEL": "LOUD"}, [], ("TIDAL_LOG_LEVEL", "'DEBUG'")),
    ({"TIDAL_STATE_NAMESPACE": "Bad_NS!"}, [], ("TIDAL_STATE_NAMESPACE", "namespace name")),
    ({"TIDAL_IDENTITY": ""}, [], ("TIDAL_IDENTITY", "at least 1 character")),
    (
        {"TIDAL_LEADER_ELECTION__ENABLED": "maybe"},
        [],
        ("TIDAL_LEADER_ELECTION__ENABLED", "boolean"),
    ),
    (
        {"TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS": "-1"},
        [],
        ("TIDAL_LEADER_ELECTION__LEASE_DURATION_SECONDS", "greater than 0"),
    ),
    (
        {"TIDAL_LEADER_ELECTION__RENEW_DEADLINE_SECONDS": "20"},
        [],
        ("TIDAL_LEADER_ELECTION", "RENEW_DEADLINE_SECONDS < LEASE_DURATION_SECONDS"),
    ),
    (
        {"TIDAL_LEADER_ELECTION__LEASE_NAME": "Bad Name"},
        [],
        ("TIDAL_LEADER_ELECTION__LEASE_NAME", "object name"),
    ),
    (
        {"TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES": "0"},
        [],
        ("TIDAL_SCHEDULER__MAX_CONCURRENT_SWITCHES", "greater than or equal to 1"),
    ),
    ({"TIDAL_SCHEDULER": "fast"}, [], ("TIDAL_SCHEDULER", "JSON object", "TIDAL_SCHEDULER__")),
    ({"TIDAL_CONTEXT": "nowhere"}, [], ("nowhere", "TIDAL_KUBECONFIG")),
    ({}, ["--kubeconfig", "{missing}"], ("does not exist", "TIDAL_KUBECONFIG")),
    ({}, ["--kubeconfig", "{garbage}"], ("not valid YAML", "line 1", "TIDAL_KUBECONFIG")),
    ({}, ["--kubeconfig", "{list}"], ("not a kubeconfig", "TIDAL_KUBECONFIG")),
    ({}, ["--kubeconfig", "{binary}"], ("cannot read kubeconfig", "TIDAL_KUBECONFIG")),
    ({}, ["--schedules", "{missing}"], ("schedules directory", "TIDAL_SCHEDULES")),
]
USAGE_CASES: list[tuple[list[str], tuple[str, ...]]] = [
    (["--port", "abc"], ("--port", "not a valid integer")),
    (["--schedules", "{file}"], ("--schedules", "is a file")),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A reachable emulator's kubeconfig, a schedules directory and some broken files."""
    tmp = tmp_path_factory.mktemp("settings")
    emu = Emulator().start()
    (tmp / "schedules").mkdir()
    (tmp / "garbage").write_text("{{{ not yaml")
    (tmp / "list").write_text("- a\n- b\n")
    (tmp / "binary").write_bytes(b"\xff\xfe\x00bad")
    (tmp / "file").write_text("x: 1\n")
    paths = {
        "kubeconfig": str(emu.write_kubeconfig(tmp / "kubeconfig")),
        "schedules": str(tmp / "schedules"),
        "missing": str(tmp / "missing" / "x"),
        **{name: str(tmp / name) for name in ("garbage", "list", "binary", "file")},
    }
    yield paths
    emu.stop()


def _run(
    world: dict[str, str], env: dict[str, str], flags: list[str]
) -> subprocess.CompletedProcess[str]:
    flags = [f.format(**world) for f in flags]
    args = [sys.executable, "-m", "tidal", "run"]
    if "--schedules" not in flags:
        args += ["--schedules", world["schedules"]]
    if "--kubeconfig" not in flags:
        args += ["--kubeconfig", world["kubeconfig"]]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TIDAL_")}
    # a valid setting list must never start the daemon: the timeout would say so
    return subprocess.run(
        args + flags,
        env={**environ, "TIDAL_PORT": "0", **env},
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(world["schedules"]).parent,
    )


@pytest.mark.parametrize(
    ("env", "flags", "words"),
    ENV_CASES,
    ids=[",".join(list(e) + f) or "-" for e, f, _w in ENV_CASES],
)
def test_bad_setting_is_one_line_naming_it(
    world: dict[str, str], env: dict[str, str], flags: list[str], words: tuple[str, ...]
) -> None:
    """A bad TIDAL_* value or file: exit 1, one `error:` line naming the setting and form."""
    done = _run(world, env, flags)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize(("flags", "words"), USAGE_CASES, ids=[f[0] for f, _w in USAGE_CASES])
def test_bad_flag_is_a_usage_error_naming_it(
    world: dict[str, str], flags: list[str], words: tuple[str, ...]
) -> None:
    """A bad flag value is click's usage error (exit 2) naming the flag, no traceback."""
    done = _run(world, {}, flags)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)
