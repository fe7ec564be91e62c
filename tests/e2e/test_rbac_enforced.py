"""RBAC proven, not asserted: the emulator enforces RBAC for user `tidal`, who holds only what
`tidal rbac` printed; a night and a day switch, a rolled-back run and a resumed one (with a
template deleted mid-run) all go through without a single 403."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.e2e.switch_helpers import (
    DAY,
    NIGHT_TO_B,
    NS,
    MakeEmulator,
    load_one,
    schedule_text,
    weights_window,
    write_schedule,
)
from tidal.cli.main import cli
from tidal.daemon.manual import ManualRunJournal
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient
from tidal.karmada.policies import get_policy

pytestmark = pytest.mark.e2e
STATE_NS = "tidal-system"
PLURALS = {
    "ServiceAccount": "serviceaccounts",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Namespace": "namespaces",
}


class Crash(Exception):
    pass


def _post_as_admin(url: str, obj: dict[str, Any]) -> None:
    kind = obj["kind"]
    group_version = obj["apiVersion"]
    base = f"{url}/api/v1" if group_version == "v1" else f"{url}/apis/{group_version}"
    namespace = obj.get("metadata", {}).get("namespace")
    path = (
        f"{base}/namespaces/{namespace}/{PLURALS[kind]}" if namespace else f"{base}/{PLURALS[kind]}"
    )
    request = urllib.request.Request(
        path,
        data=json.dumps(obj).encode(),
        method="POST",
        headers={"Authorization": "Bearer sim:admin", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201, (kind, response.status)


def test_switches_rollback_and_resume_with_only_the_printed_rbac(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Night, day, a rollback (cluster-b NotReady before wave 2) and a crash-resume (a
    template deleted mid-run) as user tidal: no request is refused."""
    emu = make_switch_emulator(workloads=4, cpu="1", b_cpu="1000")
    rollout = "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 30s\nonFailure: rollback"
    windows = NIGHT_TO_B + weights_window("day", "07:00", {"cluster-a": 4, "cluster-b": 1})
    schedules = tmp_path / "schedules"
    schedules.mkdir()
    path = write_schedule(schedules, schedule_text("team-r", rollout, windows=windows))
    printed = CliRunner().invoke(
        cli,
        [
            "rbac",
            str(schedules),
            "--user",
            "tidal",
            "--state-namespace",
            STATE_NS,
            "--template-resource",
            f"deployments.apps@{NS}",
        ],
    )
    assert printed.exit_code == 0, printed.output
    _post_as_admin(
        emu.url, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}
    )
    for obj in yaml.safe_load_all(printed.stdout):
        if obj:
            _post_as_admin(emu.url, obj)
    emu.enforce_rbac(True)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig", user="tidal")
    client = KarmadaClient.from_kubeconfig(kubeconfig)
    outsider = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "k2", user="eve"))
    with pytest.raises(Exception, match="forbidden"):
        get_policy(outsider, "ClusterPropagationPolicy", "team-cpp", None)
    emu.reset_requests()

    env = {"TIDAL_STATE_NAMESPACE": STATE_NS}
    for window in ("night", "day"):
        result = CliRunner(env=env).invoke(
            cli, ["switch", str(path), "--window", window, "--kubeconfig", str(kubeconfig), "--yes"]
        )
        assert result.exit_code == 0, f"{window}: {result.output}"

    def journal() -> ManualRunJournal:
        return ManualRunJournal(client, STATE_NS, "rbac-test", SystemClock())

    def not_ready_after_wave_1(event: Any) -> None:
        if isinstance(event, ev.WaveFinished) and event.wave == 1 and not event.rollback:
            emu.set_cluster_ready("cluster-b", False, reason="ClusterNotReachable")

    loaded = load_one(path)
    first = journal()
    record = run_switch(
        client, loaded, "night", clock=SystemClock(), journal=first, on_event=not_ready_after_wave_1
    )
    first.close()
    assert record.result == "rolledBack", record.to_json()
    emu.set_cluster_ready("cluster-b", True)
    assert (
        get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)["spec"]["placement"][
            "replicaScheduling"
        ]
        == DAY["replicaScheduling"]
    )

    in_wave: list[str] = []

    def delete_then_crash(event: Any) -> None:
        # a template of the wave in flight deleted after its trigger: the gate finds its
        # binding gone and reads the template (the path that needs `get` on templates)
        if isinstance(event, ev.WaveStarted) and event.wave == 1:
            in_wave.extend(event.workloads)
            # the wave cannot converge until the gate has found the binding gone (set before
            # the trigger: a pod started before it would let the wave pass without the skip)
            emu.set_pods_fail("cluster-b")
        if isinstance(event, ev.GatePassed) and event.wave == 1 and event.gate == "triggered":
            admin = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "admin"))
            res = admin.resource_for("apps/v1", "Deployment")
            admin.request("delete", res, "DELETE", res.path(NS, in_wave[0].rsplit("/", 1)[1]))
        if isinstance(event, ev.WorkloadSkipped):
            emu.set_pods_fail("cluster-b", False)
        if isinstance(event, ev.WaveStarted) and event.wave == 2:
            raise Crash

    # moving directly: a surged wave is ready at once after its trigger, so the binding would
    # vanish only after the gate passed; this path needs it to vanish while the gate waits
    direct = load_one(
        write_schedule(
            tmp_path, schedule_text("team-r", rollout + "\nstrategy: direct", windows=windows)
        )
    )
    crashed = journal()
    with pytest.raises(Crash):
        run_switch(
            client,
            direct,
            "night",
            clock=SystemClock(),
            journal=crashed,
            on_event=delete_then_crash,
        )
    crashed.close()  # a fenced stop: the lock is given back, the journal stays unfinished
    # cluster-b's pods start again for the resume: under load wave 1 can converge before the
    # pods-fail mark takes effect, so the crash comes with the mark still set and no skip yet
    # (the resume then finds the template gone itself, the same `get` the RBAC must grant)
    emu.set_pods_fail("cluster-b", False)
    resumed = journal()
    record = run_switch(client, direct, "night", clock=SystemClock(), journal=resumed)
    resumed.close()
    assert record.result == "succeeded", record.to_json()
    assert any("left out" in w for w in record.warnings), record.warnings
    refused = sorted(
        {
            (r.verb, r.group, r.resource, r.namespace, r.name)
            for r in emu.request_log()
            if r.identity == "tidal" and r.code == 403
        },
        key=str,
    )
    assert not refused, f"the printed RBAC refused: {refused}"
    assert any(r.identity == "tidal" for r in emu.request_log())
