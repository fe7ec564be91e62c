"""A Lazy an earlier run left, adopted by a run that then rolls back, is taken off by that
rollback, unless taking it off would move templates at once (then it is kept, marked and
said); a template Karmada moved under the Lazy policy because a user changed it mid-run is
moved back in its wave; `tidal status` shows a Lazy tidal left held, whichever run left it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    NS,
    MakeEmulator,
    client_for,
    load_one,
    schedule_text,
    switch,
    write_schedule,
    writes,
)
from tests.e2e.test_switch_failures import _emulator, _lazy_marks, _schedule
from tests.engine.crashing import Crash
from tidal.daemon.status import lazy_held
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.engine.switch import run_switch
from tidal.karmada.bindings import list_bindings
from tidal.karmada.client import CLUSTERS
from tidal.karmada.policies import MERGE_PATCH
from tidal.karmada.views import BindingView
from tidal.loading.loader import load_schedule_file

pytestmark = pytest.mark.e2e
LAZY_MARKS = {"tidal.io/lazy-added-by", "tidal.io/activation-before-lazy"}


def test_rolled_back_run_that_adopted_a_lazy_takes_it_off(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A halted night (journal forgotten) leaves a marked Lazy; the next night adopts it, moves
    every other template in one wave, fails and rolls back: nothing is held by the Lazy, so the
    policy's original activationPreference is back and the marks gone."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    first = switch(client, _schedule(tmp_path, timeout="2s"), "night", journal=InMemoryJournal())
    assert first.result == "failed"
    assert _lazy_marks(client) == ("Lazy", LAZY_MARKS)
    body = {"status": {"resourceSummary": {"allocatable": {"cpu": "1000", "pods": "1000"}}}}
    client.request(
        "patch",
        CLUSTERS,
        "PATCH",
        CLUSTERS.path(name="cluster-b", subresource="status"),
        body=body,
        content_type=MERGE_PATCH,
    )
    emu.set_pods_fail("cluster-b")  # the one wave is triggered, then times out
    one_wave = "waveSize: 100%\nwaveTimeout: 2s\nonFailure: rollback\nstrategy: direct"
    second = switch(
        client,
        write_schedule(tmp_path, schedule_text("team-f", one_wave)),
        "night",
        journal=InMemoryJournal(),
    )
    assert second.result == "rolledBack", second.to_json()
    assert [w.result for w in second.waves] == ["failed"] and not second.left_lazy
    assert _lazy_marks(client) == (None, set())


def _clusters_of(client: Any) -> dict[str, set[str]]:
    """Template name -> the clusters its binding assigns replicas to."""
    return {
        str(BindingView(b).spec["resource"]["name"]): {
            c for c, n in BindingView(b).assignment().items() if n
        }
        for b in list_bindings(client, NS)[0]
    }


def test_a_rollback_keeps_an_adopted_lazy_that_holds_unmoved_templates(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Soak-30's last two moves: a halted night moved web-0/1 only; the next night adopts its
    Lazy, fails before any trigger and rolls back. Lifting the Lazy then would move web-2/3 at
    once, outside any wave: the rollback keeps it (marked, with a warning) and they stay."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    first = switch(client, _schedule(tmp_path, timeout="2s"), "night", journal=InMemoryJournal())
    assert first.result == "failed", first.to_json()
    day = _clusters_of(client)
    assert day["web-2"] == day["web-3"] == {"cluster-a", "cluster-b"}
    emu.set_cluster_ready("cluster-b", False)  # the destination: wave 1 fails before its trigger
    second = switch(
        client,
        _schedule(tmp_path, timeout="2s", on_failure="rollback", floors=""),
        "night",
        journal=InMemoryJournal(),
    )
    assert second.result == "rolledBack", second.to_json()
    time.sleep(0.5)  # ten emulated seconds: a lifted Lazy would have moved them by now
    after = _clusters_of(client)
    assert (after["web-2"], after["web-3"]) == (day["web-2"], day["web-3"])
    assert _lazy_marks(client) == ("Lazy", LAZY_MARKS)
    assert any("stays Lazy" in w and "web-2" in w for w in second.warnings), second.warnings
    assert second.left_lazy == [("ClusterPropagationPolicy/team-cpp", None)]


WEB_3 = f"{NS}/Deployment/web-3"


def _scaling_web_3(
    emu: Any,
    client: Any,
    after: Callable[[Any], None] | None = None,
    *,
    replicas: int = 6,
    at_wave: int = 1,
) -> Callable[[Any], None]:
    """An engine observer that scales web-3 (wave 4's) to `replicas` when wave `at_wave`
    starts, while the night policy is Lazy, and waits until Karmada placed it at night; then
    calls `after`."""
    deployments = emu.kinds.by_kind("apps/v1", "Deployment")
    assert deployments is not None

    def observe(event: Any) -> None:
        if isinstance(event, ev.WaveStarted) and event.wave == at_wave and not event.rollback:
            emu.store.mutate(
                deployments, NS, "web-3", lambda o: o["spec"].update(replicas=replicas)
            )
            deadline = time.monotonic() + 2
            while _clusters_of(client)["web-3"] != {"cluster-b"} and time.monotonic() < deadline:
                time.sleep(0.02)
        if after is not None:
            after(event)

    return observe


def test_a_template_scaled_mid_run_is_moved_back_in_its_wave(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Soak-30's first move: web-3 (wave 4, never started) is scaled while the night policy is
    Lazy, so Karmada places it at night; wave 1 fails and the rollback moves web-3 back in wave
    4's rollback (under the floors), not all at once when the Lazy is lifted."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    events: list[Any] = []
    record = switch(
        client,
        _schedule(tmp_path, timeout="2s", on_failure="rollback"),
        "night",
        journal=InMemoryJournal(),
        events=events,
        on_event=_scaling_web_3(emu, client),
    )
    assert record.result == "rolledBack", record.to_json()
    back = [e.workloads for e in events if isinstance(e, ev.WaveStarted) and e.rollback]
    assert (WEB_3,) in back, back
    assert not [e for e in events if isinstance(e, ev.RunWarning) and e.code == "lazy_kept"]
    assert _lazy_marks(client) == (None, set())
    assert _clusters_of(client)["web-3"] == {"cluster-a", "cluster-b"}


@pytest.mark.parametrize("moment", ["before its touch", "after its touch"])
def test_a_crash_while_moving_a_scaled_template_back_resumes_once(
    make_switch_emulator: MakeEmulator, tmp_path: Path, moment: str
) -> None:
    """Killed as web-3's rollback wave starts, or once its touch is journalled, the resumed
    rollback moves web-3 back, touching it again only if the crash came before the touch."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    loaded = load_one(_schedule(tmp_path, timeout="2s", on_failure="rollback"))
    journal = InMemoryJournal()
    wave_of_web_3: list[int] = []

    def crash(event: Any) -> None:
        if isinstance(event, ev.WaveStarted) and event.rollback and event.workloads == (WEB_3,):
            wave_of_web_3.append(int(event.wave or 0))
            if moment == "before its touch":
                raise Crash
        if (
            isinstance(event, ev.GatePassed)
            and event.gate == "triggered"
            and wave_of_web_3
            and event.wave == wave_of_web_3[0]
        ):
            raise Crash

    with pytest.raises(Crash):
        run_switch(
            client,
            loaded,
            "night",
            clock=SystemClock(),
            journal=journal,
            on_event=_scaling_web_3(emu, client, after=crash),
        )
    emu.reset_requests()
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "rolledBack", record.to_json()
    touched = [r for r in writes(emu) if r.resource == "deployments" and r.name == "web-3"]
    assert len(touched) == (1 if moment == "before its touch" else 0), touched
    assert _lazy_marks(client) == (None, set())
    time.sleep(0.2)  # four emulated seconds for the last reschedule
    assert _clusters_of(client)["web-3"] == {"cluster-a", "cluster-b"}


def test_status_shows_a_lazy_left_by_a_forgotten_run(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The held Lazy is read from the policy's marks, not from the last run's journal."""
    emu = _emulator(make_switch_emulator, b_cpu="6")
    client = client_for(emu, tmp_path)
    path = _schedule(tmp_path, timeout="2s")
    assert switch(client, path, "night", journal=InMemoryJournal()).result == "failed"
    loaded, errors = load_schedule_file(path)
    assert loaded is not None and not errors
    assert lazy_held(client, None, loaded.schedule) == [
        {"policy": "ClusterPropagationPolicy/team-cpp", "restoreTo": None}
    ]
