"""A deposed leader writes nothing: two `tidal run` replicas; the leader's template patch gets
a 429 with a Retry-After longer than its Lease while its renewals fail; the standby takes over
and finishes; the emulator's request log shows every acting write made by the Lease holder
of that moment."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    settled_team,
    start_daemon,
    stop_all,
    stored_run,
    wait_for,
    write_due_schedule,
)
from tidal.karmada.client import KarmadaClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
LEADER_LEASE = "tidal-leader"
NOT_ACTING = {"leases", "events", "namespaces"}
READS = {"get", "list", "watch"}


def writes_against_holder(log: list[Any]) -> list[tuple[int, str, str, str | None, str | None]]:
    """Every successful acting write whose writer did not hold the leader Lease at that moment
    (the holder: whoever last wrote the Lease successfully before it; the log names no object
    of a create, so the first Lease created stands for the leader's): (seq, who, verb,
    resource, holder)."""
    holder: str | None = None
    wrong = []
    for r in sorted(log, key=lambda r: r.seq):
        if r.verb in READS or r.code >= 400:
            continue
        if r.resource == "leases":
            if r.name == LEADER_LEASE or (r.verb == "create" and holder is None):
                holder = r.identity
            continue
        if r.resource in NOT_ACTING:
            continue
        if r.identity != holder:
            wrong.append((r.seq, r.identity, r.verb, r.resource, holder))
    return wrong


def test_throttled_leader_that_loses_its_lease_sends_no_late_write(
    make_emulator: Any, tmp_path: Path
) -> None:
    """Retry-After 6 s against a 2 s renew deadline, renewals failing: the leader gives the
    patch up and steps down; the standby finishes the run; no acting write against the holder."""
    emu = settled_team(make_emulator)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause="3s")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    procs = {"a": start_daemon(emu, tmp_path, "a", schedules)}
    try:
        wait_for(lambda: stored_run(client) is not None, 30, "a to start the run")
        procs["b"] = start_daemon(emu, tmp_path, "b", schedules)

        def first_wave_done() -> bool:
            run = stored_run(client)
            return run is not None and len(run.completed_waves) >= 1

        wait_for(first_wave_done, 60, "the first wave")
        emu.faults.inject(
            type="throttle",
            verb="patch",
            resource="deployments",
            identity="replica-a",
            retry_after=6,
            count=1,
        )

        def throttled() -> bool:
            return any(r.code == 429 and r.identity == "replica-a" for r in emu.request_log())

        wait_for(throttled, 30, "a's template patch to be throttled")
        emu.faults.inject(type="error", verb="update,get", resource="leases", identity="replica-a")
        assert procs["a"].wait(30) != 0  # stepped down and exited
        wait_for(
            lambda: getattr(stored_run(client), "finished", False),
            90,
            "the standby to finish the run",
        )
        run = stored_run(client)
        assert run is not None and run.result == "succeeded"
        log = emu.request_log()
        assert any(
            r.identity == "replica-b"
            and r.name == LEADER_LEASE
            and r.code < 400
            and r.verb in ("update", "create")
            for r in log
        )
        assert writes_against_holder(log) == []
        held = next(r for r in log if r.code == 429 and r.identity == "replica-a")
        after = [
            r
            for r in log
            if r.identity == "replica-a"
            and r.seq > held.seq
            and r.verb not in READS
            and r.code < 400
            and r.resource not in NOT_ACTING
        ]
        # the throttled patch is given up, never sent again; the wave's other touches, sent
        # beside it (up to 8 at once), may land once each while a still holds the Lease
        touches = [r.name for r in after if (r.verb, r.resource) == ("patch", "deployments")]
        assert held.name not in touches and len(touches) == len(set(touches))
        late = [(r.verb, r.resource, r.name) for r in after if r.resource != "deployments"]
        assert late == []
    finally:
        stop_all(procs.values())
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
