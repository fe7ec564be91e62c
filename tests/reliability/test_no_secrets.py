"""No secret reaches logs, metrics, Events or state objects: a `tidal run` daemon at DEBUG with a
bearer token in its kubeconfig carries out a window through injected API errors; the token is
searched for (clear and base64) in its output, its /metrics, and every ConfigMap, Event and
Lease in the emulator."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.e2e.daemon_helpers import STATE_NS, settle, topology, wait_for, write_due_schedule
from tidal_sim.clock import ScaledClock

pytestmark = pytest.mark.e2e
TOKEN = "tidal-test-Secret-7f3a9c1e5b2d"


def _kubeconfig(emu: Any, path: Path) -> Path:
    config = emu.kubeconfig(user="tidal")
    config["users"][0]["user"] = {"token": TOKEN}
    with path.open("w") as fh:
        YAML().dump(config, fh)
    return path


def _port(log: Path) -> int | None:
    for line in log.read_text(errors="replace").splitlines():
        if '"daemon_started"' in line:
            return int(json.loads(line)["port"])
    return None


def _stored(emu: Any, api_version: str, kind: str) -> str:
    rtype = emu.kinds.by_kind(api_version, kind)
    items, _rv = emu.store.list(rtype, None, None)
    return json.dumps(items)


def _finished(emu: Any) -> bool:
    rtype = emu.kinds.by_kind("v1", "ConfigMap")
    items, _rv = emu.store.list(rtype, STATE_NS, None)
    for item in items:
        run = (item.get("data") or {}).get("run")
        if run and json.loads(run).get("phase") == "done":
            return True
    return False


def test_token_reaches_no_log_metric_event_or_state(make_emulator: Any, tmp_path: Path) -> None:
    """A full window at DEBUG with 500s and 429s: the kubeconfig token appears nowhere."""
    emu = make_emulator(topology(), clock=ScaledClock(20.0))
    settle(emu)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules)
    kubeconfig = _kubeconfig(emu, tmp_path / "kubeconfig")
    emu.faults.inject(type="error", verb="patch,list", resource="*", probability=0.3, count=4)
    emu.faults.inject(type="throttle", verb="*", resource="resourcebindings", count=2)
    log = tmp_path / "daemon.log"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TIDAL_")}
    environ.update(
        TIDAL_LOG_FORMAT="json",
        TIDAL_LOG_LEVEL="DEBUG",
        TIDAL_STATE_NAMESPACE=STATE_NS,
        TIDAL_PORT="0",
        TIDAL_LEADER_ELECTION__ENABLED="false",
        TIDAL_KARMADA__POLICY_SETTLE_SECONDS="0",
    )  # the emulator's detector: no lag
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tidal",
                "run",
                "--schedules",
                str(schedules),
                "--kubeconfig",
                str(kubeconfig),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )
    try:
        wait_for(lambda: _finished(emu), 60, "the window's run to finish")
        port = _port(log)
        assert port, log.read_text()[-2000:]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
        time.sleep(0.5)  # the run's last Events
    finally:
        proc.terminate()
        proc.wait(20)
    output = log.read_text(errors="replace")
    assert '"level": "debug"' in output  # DEBUG lines were written and searched
    assert sum(f.fired for f in emu.faults.list()) > 0  # error paths were logged too
    assert "tidal_switch_runs_total" in metrics
    places = {
        "daemon output": output,
        "/metrics": metrics,
        "ConfigMaps": _stored(emu, "v1", "ConfigMap"),
        "Events": _stored(emu, "v1", "Event"),
        "Leases": _stored(emu, "coordination.k8s.io/v1", "Lease"),
        "request log identities": " ".join(r.identity for r in emu.request_log()),
    }
    forms = (TOKEN, base64.b64encode(TOKEN.encode()).decode(), TOKEN[len("tidal-test-") :])
    leaks = [(where, form) for where, text in places.items() for form in forms if form in text]
    assert leaks == []
