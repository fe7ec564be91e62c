"""A run journalled by the release before grouped overrides (one OverridePolicy per workload,
named by its rank) resumes mid-surge under the current one: its overrides are replaced by the
wave's grouped ones, held until those are written, and none is left at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.surge_helpers import no_overrides, team
from tests.e2e.switch_helpers import NS, MakeEmulator
from tests.engine.crashing import crashed_while_wave_1_surges
from tidal.domain.clock import SystemClock
from tidal.engine.states import SurgeStep
from tidal.engine.switch import run_switch
from tidal.karmada.overrides import (
    OverrideRef,
    Owner,
    ReplicaOverride,
    TemplateRef,
    apply_override,
    delete_override,
    list_overrides,
)

pytestmark = pytest.mark.e2e


def _per_workload_name(owner: Owner, index: int) -> str:
    """How the release before grouping named a workload's override (its rank in the wave)."""
    return f"tidal-{owner.schedule}-{owner.run_id}-w{owner.wave}-{index}".lower()


def test_a_mid_surge_journal_with_one_override_per_workload_resumes_clean(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Crashed while wave 1's surged replicas start, its journal and overrides put back as the
    older release wrote them (one per workload): the resume writes one grouped override,
    deletes the older ones only after it, and ends with none left."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client, loaded, journal = crashed_while_wave_1_surges(emu, tmp_path)
    state = journal.load("team-s")
    assert state is not None
    record = state.waves[0].forward.surge
    assert record is not None and record.step is SurgeStep.SURGED
    owner = Owner("team-s", state.run_id, 1)
    older = []
    for index, name in enumerate(sorted(record.targets)):
        template = name.split("/")[-1]
        override = ReplicaOverride(
            _per_workload_name(owner, index),
            owner,
            (TemplateRef("apps/v1", "Deployment", template, NS),),
            record.targets[name],
        )
        apply_override(client, override)
        older.append(str(override.ref))
    for text in record.overrides:  # what this release wrote goes: the older one's stays
        delete_override(client, OverrideRef.parse(text))
    record.overrides = list(older)
    journal.save(state)
    # (wave 2's surge went up ahead of its turn, in its own grouped override: tidal.engine.pacing)
    wave_1 = [v.name for v in list_overrides(client, schedule="team-s") if "-w1-" in v.name]
    assert sorted(wave_1) == sorted(OverrideRef.parse(t).name for t in older)

    emu.reset_requests()
    resumed = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert resumed.result == "succeeded", resumed.to_json()
    assert resumed.run_id == state.run_id
    calls = [
        (r.verb, r.name or "")
        for r in emu.request_log()
        if r.resource == "overridepolicies" and r.verb in ("create", "patch", "delete")
    ]
    grouped_first = next(i for i, (verb, _n) in enumerate(calls) if verb == "create")
    older_gone = [
        i
        for i, (verb, name) in enumerate(calls)
        if verb == "delete" and f"{OverrideRef.parse(older[0]).name}" == name
    ]
    assert older_gone and grouped_first < older_gone[0]
    no_overrides(client)
