"""The API cost of a surging switch, counted exactly by the emulator: per wave a fixed number
of requests whatever its size, plus one touch per template (issue 26). The run lists and
watches each kind once, before its first wave, and no wave opens a watch of its own; the
overrides of a wave are one per distinct split, not one per workload."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.surge_helpers import no_overrides, surge_schedule, team
from tests.e2e.switch_helpers import MakeEmulator, client_for
from tests.e2e.switch_helpers import switch as run_window
from tidal.engine import events as ev

pytestmark = pytest.mark.e2e

# every wave of a touch-triggered surge: one touch per template, and no override request of
# its own once the first wave has raised every surge ahead (the run's groups, one per distinct
# split, created by the first wave and joined by the others in one update each; each wave
# parked there after its move, all deleted by the run's last release in one request); before it,
# the policy the run wrote is read afresh (a GET: the drift check never trusts an informer
# that may trail a hand edit), and its destinations' Ready from the Cluster informer
PER_WAVE: dict[str, int] = {"get clusterpropagationpolicies": 1}


def _per_wave(
    emu: Any, client: Any, path: Path, window: str
) -> tuple[list[Counter[str]], Counter[str]]:
    """Each wave's requests ("verb resource": count, between its start and finish events)
    and those of the rest of the run."""
    marks: list[tuple[str, int, int]] = []

    def mark(event: Any) -> None:
        if isinstance(event, (ev.PolicyChanged, ev.WaveFinished)):
            log = emu.request_log()
            marks.append((type(event).__name__, event.wave or 0, log[-1].seq if log else 0))

    emu.reset_requests()
    record = run_window(client, path, window, on_event=mark)
    assert record.result == "succeeded", record.to_json()
    log = [r for r in emu.request_log() if not r.dry_run]
    # a wave's requests: from the previous wave's end (the first: the policy change's) to
    # its own, so the checks made before it starts count as its own
    ends = {w: seq for kind, w, seq in marks if kind == "WaveFinished"}
    first = max(seq for kind, _w, seq in marks if kind == "PolicyChanged" and seq <= ends[1])
    starts = {w: ends.get(w - 1, first) for w in ends}
    waves = [
        Counter(f"{r.verb} {r.resource}" for r in log if starts[w] < r.seq <= ends[w])
        for w in sorted(starts)
    ]
    inside = {r.seq for r in log for w in starts if starts[w] < r.seq <= ends[w]}
    rest = Counter(f"{r.verb} {r.resource}" for r in log if r.seq not in inside)
    return waves, rest


@pytest.mark.parametrize("wave_size", [2, 4])
def test_a_surge_wave_costs_the_same_requests_whatever_its_size_but_its_touches(
    make_switch_emulator: MakeEmulator, tmp_path: Path, wave_size: int
) -> None:
    """8 workloads of 5 and 6 replicas in turn (two splits in every wave) in waves of 2 and of
    4: each wave sends the same requests but one touch per template, and the run one list and
    one watch per kind. The destination has room for every surge, so the first wave raises
    the others' ahead (tidal.engine.pacing) into the run's two groups: two creates and two
    updates, counted in it, none later; the run's last release is one deletecollection."""
    emu = make_switch_emulator(team([5, 6, 5, 6, 5, 6, 5, 6]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(
        tmp_path, f"waveSize: {wave_size}\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n"
    )
    waves, rest = _per_wave(emu, client, path, "night")
    assert len(waves) == 8 // wave_size
    for number, counts in enumerate(waves, 1):
        assert counts == Counter(
            {
                **PER_WAVE,
                "create overridepolicies": 2 if number == 1 else 0,
                "update overridepolicies": 2 if number == 1 else 0,
                "patch deployments": wave_size,
            }
        ), f"wave {number}"
    assert not any(key.startswith("watch") for counts in waves for key in counts)
    assert rest == Counter(
        {  # plan, leftovers check, policy change (Lazy on, then off)
            "list deployments": 1,
            "list resourcebindings": 1,
            "watch resourcebindings": 1,
            "list clusters": 1,
            "watch clusters": 1,
            # the policies: listed and watched once (the bridge-mark check, the plan and the
            # patches' first attempts read that cache); the drift checks GET (per wave)
            "list clusterpropagationpolicies": 1,
            "watch clusterpropagationpolicies": 1,
            # leftovers: swept at the start; at the end only if the start kept any
            "list overridepolicies": 1,
            "list clusteroverridepolicies": 1,
            "patch clusterpropagationpolicies": 2,
            # the run's last release: every group by its owner labels
            "deletecollection overridepolicies": 1,
        }
    )
    no_overrides(client)


def _without(verb: str, resource: str = "") -> Callable[[dict[str, Any]], None]:
    """An edit of a printed RBAC rule: `verb` dropped where a resource ends with `resource`."""

    def edit(rule: dict[str, Any]) -> None:
        if any(r.endswith(resource) for r in rule.get("resources") or []):
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]

    return edit


def _printed_rbac_as_tidal(
    make_switch_emulator: MakeEmulator, tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> tuple[Any, Any, Path]:
    """A 2-wave surge schedule and an emulator enforcing the RBAC `tidal rbac` printed for it,
    each rule passed through `edit` (a grant from an older tidal); the emulator, a client
    acting as the user tidal, and the schedule's path, the request log reset."""
    import yaml
    from click.testing import CliRunner

    from tests.e2e.test_rbac_enforced import _post_as_admin
    from tidal.cli.main import cli
    from tidal.karmada.client import KarmadaClient

    emu = make_switch_emulator(team([5, 6, 5, 6]))
    path = surge_schedule(tmp_path, "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n")
    printed = CliRunner().invoke(
        cli,
        [
            "rbac",
            str(path.parent),
            "--user",
            "tidal",
            "--state-namespace",
            "default",
            "--template-resource",
            "deployments.apps@ai-app",
        ],
    )
    assert printed.exit_code == 0, printed.output
    for obj in yaml.safe_load_all(printed.stdout):
        for rule in (obj or {}).get("rules") or []:
            edit(rule)
        if obj:
            _post_as_admin(emu.url, obj)
    emu.enforce_rbac(True)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc", user="tidal"))
    emu.reset_requests()
    return emu, client, path


def test_an_rbac_without_deletecollection_releases_each_override_on_its_own(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """As a user whose RBAC was printed before deletecollection was granted: the first release
    is refused once (403), then each of the run's two groups is deleted on its own; the switch
    succeeds and leaves none."""
    emu, client, path = _printed_rbac_as_tidal(
        make_switch_emulator, tmp_path, _without("deletecollection")
    )
    record = run_window(client, path, "night")
    assert record.result == "succeeded", record.to_json()
    ours = [
        (r.verb, r.code)
        for r in emu.request_log()
        if r.identity == "tidal"
        and r.resource == "overridepolicies"
        and r.verb in ("deletecollection", "delete")
    ]
    assert ours == [
        ("deletecollection", 403),
        ("delete", 200),
        ("delete", 200),
    ]
    no_overrides(client)


def test_an_rbac_without_the_policy_watch_reads_each_policy_with_a_get(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """As a user whose RBAC was printed before policies were watched: the policy listing is
    refused once (403), then every policy read is a GET, as before; the switch succeeds."""
    emu, client, path = _printed_rbac_as_tidal(
        make_switch_emulator, tmp_path, _without("watch", "propagationpolicies")
    )
    record = run_window(client, path, "night")
    assert record.result == "succeeded", record.to_json()
    ours = Counter(
        (r.verb, r.code)
        for r in emu.request_log()
        if r.identity == "tidal" and r.resource == "clusterpropagationpolicies" and not r.dry_run
    )
    # the list is allowed, its watch refused: the cache is dropped before anyone reads it,
    # and every policy read is a GET: the bridge-mark check and the plan (one each), the Lazy
    # patch and its removal (a GET before each), the drift check before each of the 2 waves
    assert ours == Counter(
        {("list", 200): 1, ("watch", 403): 1, ("get", 200): 6, ("patch", 200): 2}
    )
    no_overrides(client)
