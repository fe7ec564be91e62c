"""The daemons under test: `tidal run` subprocesses, restarted when they exit, with their
memory, sockets and /metrics sampled from outside (/proc and HTTP)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.soak.scenario import daemon_env

_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9.eE+-]+|NaN|[+-]Inf)$")


@dataclass
class Sample:
    at: float
    rss_mb: float
    sockets: int
    ready: bool = False  # the daemon served /metrics before this sample (imports done)


@dataclass
class Incarnation:
    """One process of one replica."""

    who: str
    proc: subprocess.Popen[bytes]
    started: float
    port: int | None = None
    samples: list[Sample] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    metrics_at: float = 0.0  # when /metrics was last read
    stopped: bool = False  # SIGSTOPped by the chaos
    exit_code: int | None = None
    ended: float | None = None  # when its exit was noticed
    log_offset: int = 0  # where its lines begin in the replica's log (shared by incarnations)


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def _sockets(pid: int) -> int | None:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    count = 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            continue
    return count


def parse_metrics(text: str) -> dict[str, float]:
    """Sum of every sample per metric name (labels folded)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        match = _METRIC.match(line.strip())
        if match and not line.startswith("#"):
            try:
                out[match.group(1)] = out.get(match.group(1), 0.0) + float(match.group(3))
            except ValueError:
                continue
    return out


class Fleet:
    def __init__(self, emu: Any, workdir: Path, schedules: Path, names: tuple[str, ...]) -> None:
        self.emu, self.workdir, self.schedules, self.names = emu, workdir, schedules, names
        self.current: dict[str, Incarnation] = {}
        self.history: list[Incarnation] = []
        self.restarts = 0

    def log_path(self, who: str) -> Path:
        return self.workdir / f"daemon-{who}.log"

    def start(self, who: str) -> Incarnation:
        kubeconfig = self.emu.write_kubeconfig(self.workdir / f"kubeconfig-{who}", user=who)
        env = dict(os.environ, **daemon_env(who))
        log = self.log_path(who).open("ab")
        offset = log.tell()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tidal",
                "run",
                "--schedules",
                str(self.schedules),
                "--kubeconfig",
                str(kubeconfig),
                "--port",
                "0",
                "--identity",
                who,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        inc = Incarnation(who, proc, time.time(), log_offset=offset)
        self.current[who] = inc
        self.history.append(inc)
        return inc

    def start_all(self) -> None:
        for who in self.names:
            self.start(who)

    def by_identity(self, who: str | None) -> Incarnation | None:
        inc = self.current.get(who or "")
        return inc if inc is not None and inc.proc.poll() is None else None

    def supervise(self) -> list[str]:
        """Restart replicas whose process exited (as a Deployment would); what happened."""
        notes = []
        for who, inc in list(self.current.items()):
            code = inc.proc.poll()
            if code is None:
                continue
            inc.exit_code, inc.ended = code, time.time()
            notes.append(f"{who} exited {code}")
            self.restarts += 1
            self.start(who)
        return notes

    def signal(self, inc: Incarnation, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            inc.proc.send_signal(sig)
        if sig == signal.SIGSTOP:
            inc.stopped = True
        elif sig == signal.SIGCONT:
            inc.stopped = False

    def _port(self, inc: Incarnation) -> int | None:
        if inc.port is None:
            try:  # only this process's lines: an earlier one's port is dead
                with self.log_path(inc.who).open("rb") as fh:
                    fh.seek(inc.log_offset)
                    lines = fh.read().decode(errors="replace").splitlines()
            except OSError:
                return None
            for line in reversed(lines):
                if '"daemon_started"' in line:
                    try:
                        port = json.loads(line).get("port")
                    except ValueError:
                        continue
                    if port:
                        inc.port = int(port)
                    break
        return inc.port

    def sample(self) -> None:
        for inc in list(self.current.values()):
            if inc.proc.poll() is not None or inc.stopped:
                continue
            rss, socks = _rss_mb(inc.proc.pid), _sockets(inc.proc.pid)
            if rss is not None and socks is not None:
                inc.samples.append(Sample(time.time(), rss, socks, ready=bool(inc.metrics_at)))
            port = self._port(inc)
            if port and time.time() - inc.started > 2:
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/metrics", timeout=2
                    ) as resp:
                        inc.metrics = parse_metrics(resp.read().decode())
                        inc.metrics_at = time.time()
                except OSError:
                    pass

    def scraped_after(self, t: float, who: str | None = None) -> bool:
        """The process of `who` alive at `t` (every one, without `who`) had its /metrics read
        after `t`: a counter raised by a process killed before its next scrape is lost to any
        scraper, Prometheus too."""
        alive = [
            inc
            for inc in self.history
            if (who is None or inc.who == who)
            and inc.started <= t
            and (inc.ended is None or inc.ended > t)
        ]
        return all(inc.metrics_at > t for inc in alive)

    def metrics_text(self) -> list[str]:
        texts = []
        for inc in self.current.values():
            port = self._port(inc)
            if port and inc.proc.poll() is None and not inc.stopped:
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/metrics", timeout=2
                    ) as resp:
                        texts.append(resp.read().decode())
                except OSError:
                    continue
        return texts

    def metric_total(self, name: str) -> float:
        return sum(inc.metrics.get(name, 0.0) for inc in self.history)

    def stop_all(self, timeout: float = 25.0) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for inc in self.current.values():
            if inc.stopped:
                self.signal(inc, signal.SIGCONT)
            if inc.proc.poll() is None:
                inc.proc.send_signal(signal.SIGTERM)
        for who, inc in self.current.items():
            try:
                codes[who] = inc.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                inc.proc.kill()
                codes[who] = None
        return codes
