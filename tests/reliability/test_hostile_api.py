"""Hostile API answers: truncated JSON, objects of the wrong kind, a binding without status, a
Cluster without resourceSummary. `tidal switch` ends with a clear one-line reason (or succeeds
after retrying) and never a traceback; `tidal run` keeps running through them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    STATE_NS,
    schedule_text,
    settle,
    topology,
    wait_for,
    write_due_schedule,
)
from tidal_sim.clock import ScaledClock

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]


def _schedule(tmp: Path) -> Path:
    night = datetime.now(UTC).replace(second=0, microsecond=0)
    text = schedule_text(night, night + timedelta(hours=12)).replace(
        "waveTimeout: 60s", "waveTimeout: 6s"
    )
    path = tmp / "team-t1.yaml"
    path.write_text(text)
    return path


def _clean_env() -> dict[str, str]:
    """No TIDAL_ setting of the test session leaks in, but the emulator's detector has no lag:
    no policy settle wait."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TIDAL_")}
    return {**environ, "TIDAL_KARMADA__POLICY_SETTLE_SECONDS": "0"}


def _switch(emu: Any, tmp: Path) -> tuple[int, Obj | None, str]:
    kubeconfig = emu.write_kubeconfig(tmp / "kubeconfig")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidal",
            "switch",
            str(_schedule(tmp)),
            "--window",
            "night",
            "--kubeconfig",
            str(kubeconfig),
            "--yes",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=_clean_env(),
    )
    try:
        record = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        record = None
    return done.returncode, record, done.stderr


def _strip_status_of(name: str) -> Callable[[Any, Obj | None, Obj], None]:
    def hook(rtype: Any, old: Obj | None, new: Obj) -> None:
        resource = (new.get("spec") or {}).get("resource") or {}
        if rtype.plural == "resourcebindings" and resource.get("name") == name:
            new.pop("status", None)

    return hook


def _strip_summary_of(name: str) -> Callable[[Any, Obj | None, Obj], None]:
    def hook(rtype: Any, old: Obj | None, new: Obj) -> None:
        if rtype.plural == "clusters" and new["metadata"]["name"] == name:
            (new.get("status") or {}).pop("resourceSummary", None)

    return hook


def _summary_gone(emu: Any, name: str) -> None:
    emu.store.admission.append(_strip_summary_of(name))
    emu.set_cluster_ready(name, True)  # any write runs the admission hook


CASES: dict[str, Callable[[Any], None]] = {
    "truncated-binding-list": lambda emu: emu.faults.inject(
        type="truncate", verb="list", resource="resourcebindings", count=2
    ),
    "truncated-policy-get": lambda emu: emu.faults.inject(
        type="truncate", verb="get", resource="clusterpropagationpolicies", count=1
    ),
    "truncated-everything-sometimes": lambda emu: emu.faults.inject(
        type="truncate", verb="get,list,patch", resource="*", probability=0.2, count=6
    ),
    "wrong-kind-binding-list": lambda emu: emu.faults.inject(
        type="wrong-kind", verb="list", resource="resourcebindings", count=1
    ),
    "wrong-kind-template-list": lambda emu: emu.faults.inject(
        type="wrong-kind", verb="list", resource="deployments", count=1
    ),
    "wrong-kind-clusters": lambda emu: emu.faults.inject(
        type="wrong-kind", verb="get,list", resource="clusters"
    ),
    "wrong-kind-policy-patch": lambda emu: emu.faults.inject(
        type="wrong-kind", verb="patch", resource="clusterpropagationpolicies", count=1
    ),
    "binding-without-status": lambda emu: emu.store.admission.append(_strip_status_of("web-03")),
    "cluster-without-resource-summary": lambda emu: _summary_gone(emu, "cluster-b"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_switch_survives_hostile_answers(make_emulator: Any, tmp_path: Path, case: str) -> None:
    """A hostile answer: exit 0 (retried), 2 (wave failed, with a reason) or 1/3 (one line
    naming the problem); never a traceback."""
    emu = make_emulator(topology(), clock=ScaledClock(20.0))
    settle(emu)
    CASES[case](emu)
    code, record, stderr = _switch(emu, tmp_path)
    assert "Traceback" not in stderr, stderr
    assert code in (0, 1, 2, 3), (code, stderr)
    if code == 2:
        assert record is not None, stderr
        failed = [w for w in record.get("waves", []) if w.get("result") != "succeeded"]
        reasons = [w.get("reason") for w in failed] + [record.get("reason")]
        assert any(reasons), record
    elif code in (1, 3):
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert 1 <= len(lines) <= 5, stderr  # a short explanation, not a dump
    else:
        assert record is not None and record["result"] == "succeeded", (record, stderr)


def _port(log: Path) -> int | None:
    for line in log.read_text(errors="replace").splitlines():
        if '"daemon_started"' in line:
            return int(json.loads(line)["port"])
    return None


def _run_finished(emu: Any) -> bool:
    rtype = emu.kinds.by_kind("v1", "ConfigMap")
    items, _rv = emu.store.list(rtype, STATE_NS, None)
    return any(
        json.loads((i.get("data") or {}).get("run") or "{}").get("phase") == "done" for i in items
    )


def _start_refused(emu: Any) -> bool:
    """The window's start was recorded refused (a binding without status reads as 0 ready, so
    a floor does not hold now): the start ended without a run."""
    rtype = emu.kinds.by_kind("v1", "ConfigMap")
    items, _rv = emu.store.list(rtype, STATE_NS, None)
    return any('"refused"' in ((i.get("data") or {}).get("handled") or "") for i in items)


def test_daemon_keeps_running_through_hostile_answers(make_emulator: Any, tmp_path: Path) -> None:
    """`tidal run` through truncated and wrong-kind answers: the window's start ends (a run, or
    a refusal when the status-less binding breaks a floor), the process stays up and healthy,
    and no worker error or traceback is logged."""
    emu = make_emulator(topology(), clock=ScaledClock(20.0))
    settle(emu)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules)
    emu.faults.inject(type="truncate", verb="list", resource="resourcebindings", count=2)
    emu.faults.inject(type="wrong-kind", verb="list", resource="deployments", count=1)
    emu.faults.inject(type="truncate", verb="get,list", resource="*", probability=0.15)
    emu.faults.inject(
        type="wrong-kind", verb="get,list", resource="resourcebindings,clusters", probability=0.1
    )
    emu.store.admission.append(_strip_status_of("web-05"))
    log = tmp_path / "daemon.log"
    environ = _clean_env()
    environ.update(
        TIDAL_LOG_FORMAT="json",
        TIDAL_STATE_NAMESPACE=STATE_NS,
        TIDAL_PORT="0",
        TIDAL_LEADER_ELECTION__ENABLED="false",
    )
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
                str(emu.write_kubeconfig(tmp_path / "kubeconfig")),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )
    try:
        wait_for(
            lambda: _run_finished(emu) or _start_refused(emu) or proc.poll() is not None,
            120,
            "the window's start to end",
        )
        assert proc.poll() is None, log.read_text()[-3000:]
        port = _port(log)
        assert port is not None
        fired = sum(f.fired for f in emu.faults.list())
        assert fired > 0, log.read_text()[-3000:]  # hostile answers were served
        emu.faults.clear()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        proc.terminate()
        code = proc.wait(60)
    output = log.read_text(errors="replace")
    assert code == 0, output[-3000:]
    assert "Traceback" not in output and "switch_worker_error" not in output, output[-3000:]
