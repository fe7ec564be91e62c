"""A real Prometheus (Debian's `prometheus` binary) on loopback, for end-to-end alert tests.

Started with a temporary config and TSDB, 1-second scrape and rule evaluation, the shipped
rules file; stopped and cleaned up by the context manager.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "tidal" / "rules" / "tidal-alerts.yaml"
T = TypeVar("T")


def prometheus_binary() -> str:
    """Path of `prometheus`; skip locally when absent, fail under CI=true."""
    path = shutil.which("prometheus")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("prometheus is not installed; .ci/run installs Debian's `prometheus`")
        pytest.skip("prometheus not found (install Debian's `prometheus` package)")
    return path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T:
    """Poll `probe` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


class Prometheus:
    """One Prometheus process scraping `targets` (host:port) every second."""

    def __init__(
        self, workdir: Path, targets: list[str], *, rules: Path = RULES, job: str = "tidal"
    ) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(rules)],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
        }
        self.config = workdir / "prometheus.yml"
        self.config.write_text(json.dumps(config))  # JSON is YAML
        self.log = workdir / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Prometheus:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    prometheus_binary(),
                    f"--config.file={self.config}",
                    f"--storage.tsdb.path={self.workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )
        wait_for("Prometheus to be ready", self._ready, timeout)
        return self

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            pytest.fail(
                f"prometheus exited ({self.process.returncode}): {self.log.read_text()[-2000:]}"
            )
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- HTTP API ----------------------------------------------------------------------------

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; the decoded `data`, or a test failure naming the error."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=5) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        assert body.get("status") == "success", f"{path} {params}: {body}"
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query; the result vector (or scalar/matrix data)."""
        return list(self.api("query", query=expr)["result"])

    def alerts(self) -> list[dict[str, Any]]:
        """Every pending or firing alert."""
        return list(self.api("alerts")["alerts"])

    def targets_up(self) -> bool:
        """Every scrape target is up."""
        active = self.api("targets")["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)

    def firing(self, alertname: str, **labels: str) -> dict[str, Any] | None:
        """The first firing alert with that name and (at least) those labels, if any."""
        for alert in self.alerts():
            got = alert["labels"]
            if (
                alert["state"] == "firing"
                and got.get("alertname") == alertname
                and all(got.get(k) == v for k, v in labels.items())
            ):
                return alert
        return None
