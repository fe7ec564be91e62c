"""Processes of the plane: started detached, each logging to its own file, recorded by PID in the
work dir's state file so that `down` (another process, later) stops exactly those."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

STATE = "plane.json"


class PlaneError(RuntimeError):
    """The plane did not come up (or down); the message names the process and its last log lines."""


LISTEN_PORTS = range(20000, 32768)  # below Linux's default ephemeral range (32768-60999)


def _ephemeral() -> range:
    """The ports the kernel hands out to outgoing connections (and to bind(0))."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def free_port(taken: set[int] | None = None) -> int:
    """A port free now and outside the ephemeral range. The plane's ports are chosen before its
    processes start; one from the ephemeral range can meanwhile become the local end of an
    outgoing connection (seen in CI: the scheduler's health port taken), one outside cannot."""
    ephemeral, taken = _ephemeral(), taken if taken is not None else set()
    candidates = [p for p in LISTEN_PORTS if p not in ephemeral and p not in taken]
    for port in random.sample(candidates, min(len(candidates), 200)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    with socket.socket() as s:  # a kernel whose ephemeral range covers everything
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + line[:300] for line in text[-lines:])


class Supervisor:
    """Starts and records the plane's processes; `state` is persisted after every change."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.state: dict[str, object] = {"pids": {}}
        self.popen: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def pids(self) -> dict[str, int]:
        return self.state["pids"]  # type: ignore[return-value]

    def save(self) -> None:
        (self.work / STATE).write_text(json.dumps(self.state, indent=2))

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Path:
        log = self.logs / f"{name}.log"
        with log.open("ab") as f:
            f.write(f"$ {' '.join(args)}\n".encode())
            f.flush()
            proc = subprocess.Popen(
                args,
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.work,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        self.popen[name] = proc
        self.pids[name] = proc.pid
        starts: dict[str, int] = self.state.setdefault("starts", {})  # type: ignore[assignment]
        starts[name] = start_time(proc.pid) or 0
        self.save()
        return log

    def wait(self, name: str, ready: Callable[[], bool], timeout: float = 90.0) -> None:
        """Poll `ready` until it is true; if the process exits or time runs out, raise with its
        last log lines."""
        deadline = time.monotonic() + timeout
        proc = self.popen.get(name)
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                log = self.logs / f"{name}.log"
                raise PlaneError(
                    f"{name} exited with code {proc.returncode}; last lines of {log}:\n{tail(log)}"
                )
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.5)
        raise PlaneError(
            f"{name} not ready after {timeout:.0f}s; last lines of "
            f"{self.logs / (name + '.log')}:\n{tail(self.logs / (name + '.log'))}"
        )


def https_ok(url: str, ca: Path, cert: Path | None = None, key: Path | None = None) -> bool:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    with urllib.request.urlopen(url, context=ctx, timeout=3) as r:
        return int(r.status) == 200


def tls_ok(port: int, ca: Path) -> bool:
    """A TLS handshake with 127.0.0.1:port verifies against `ca` (servers with no health URL)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=3) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1"),
    ):
        return True


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as r:
        return int(r.status) == 200


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(") ", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def stop_pids(
    pids: dict[str, int], grace: float = 10.0, starts: dict[str, int] | None = None
) -> list[str]:
    """SIGTERM each recorded process group, then SIGKILL what is left; returns names stopped.
    With `starts`, a PID whose start time differs (reused by another process since) is left."""
    alive: dict[str, int] = {}
    for name, pid in pids.items():
        if starts and starts.get(name) and start_time(pid) != starts[name]:
            continue
        try:
            os.killpg(pid, signal.SIGTERM)
            alive[name] = pid
        except ProcessLookupError:
            continue
        except PermissionError:
            continue
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        for name, pid in list(alive.items()):
            if not _running(pid):
                del alive[name]
        time.sleep(0.2)
    for pid in alive.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    return list(pids)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False
