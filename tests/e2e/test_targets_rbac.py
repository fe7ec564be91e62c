"""RBAC proven on each --karmada target: tidal runs as the ServiceAccount `tidal rbac` printed,
holding nothing but the printed rules (applied as admin). A night and a day switch through
`tidal switch`, a rolled-back run, a crash-resumed one and one whose template is deleted
mid-wave all go through without a 403.

On the real plane (karmada-apiserver with --authorization-mode=RBAC) the identity is a
TokenRequest token for that ServiceAccount; on the emulator, its RBAC enforcement with the
same ServiceAccount's user name. The scenario keeps to its own namespace, policy and state
namespace (other scenarios share the plane) and removes them when it ends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.e2e.targets import EmulatorTarget, Placement, RealTarget, Target, kubectl
from tests.engine.crashing import crash_run, wave_starts
from tidal.cli.main import cli
from tidal.daemon.manual import ManualRunJournal
from tidal.daemon.state import run_object_name
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.record import RunRecord
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.karmada.errors import Forbidden
from tidal.karmada.events import (
    ROLLED_BACK,
    SWITCH_STARTED,
    SWITCH_SUCCEEDED,
    EventRecorder,
    configmap_ref,
)
from tidal.karmada.policies import MERGE_PATCH, get_policy
from tidal.loading import load_schedules
from tidal.metrics import Metrics
from tidal.observe import EngineObserver

pytestmark = pytest.mark.e2e

NS = "rbac-app"  # not ai-app: the other target scenarios empty that one
STATE_NS = "tidal-rbac-e2e"
POLICY = "rbac-e2e-cpp"
SCHEDULE = "rbac-e2e"
ROLE_NAME = "tidal-rbac-e2e"
SA = "tidal"
SA_USER = f"system:serviceaccount:{STATE_NS}:{SA}"
CLUSTERS = ("cluster-a", "cluster-b")
REPLICAS = 5
NAMES = [f"{NS}/Deployment/rbac-web-{i}" for i in range(4)]
DAY = {"cluster-a": 4, "cluster-b": 1}
NIGHT = {"cluster-b": 1}
# what a real run records in the CLI's name (tidal.cli.switch): its Events' reportingInstance
CLI_INSTANCE_PREFIX = "cli:"


def _weights(weights: dict[str, int]) -> dict[str, Any]:
    return {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": [c]}, "weight": w} for c, w in weights.items()
            ]
        },
    }


def team_objects() -> list[dict[str, Any]]:
    """Namespace rbac-app, the policy (4:1, no team label) and four Deployments of 5."""
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}},
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy",
            "metadata": {"name": POLICY},
            "spec": {
                "resourceSelectors": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "namespace": NS,
                        "labelSelector": {"matchLabels": {"team": "rbac"}},
                    }
                ],
                "placement": {
                    "clusterAffinity": {"clusterNames": list(CLUSTERS)},
                    "replicaScheduling": _weights(DAY),
                },
            },
        },
    ]
    for workload in NAMES:
        name = workload.rsplit("/", 1)[1]
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": NS, "labels": {"team": "rbac"}},
                "spec": {
                    "replicas": REPLICAS,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "registry.example.com/web:1",
                                    "resources": {"requests": {"cpu": "100m"}},
                                }
                            ]
                        },
                    },
                },
            }
        )
    return objs


def schedule(tmp: Path, wave_timeout: float, **rollout: Any) -> Path:
    """The schedule: night patches the policy to cluster-b only, day back to 4:1; waves of 2,
    no pause, surge by default, cluster-b never below 1 ready, rollback on failure."""
    window = {"trigger": "touch"}
    doc = {
        "apiVersion": "tidal.io/v1alpha1",
        "kind": "TidalSchedule",
        "metadata": {"name": SCHEDULE},
        "spec": {
            "timeZone": "UTC",
            "workloads": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": NS,
                    "labelSelector": {"matchLabels": {"team": "rbac"}},
                }
            ],
            "windows": [
                {
                    "name": name,
                    "start": start,
                    **window,
                    "policies": [
                        {
                            "kind": "ClusterPropagationPolicy",
                            "name": POLICY,
                            "patch": {"spec": {"placement": {"replicaScheduling": _weights(w)}}},
                        }
                    ],
                }
                for name, start, w in (("night", "23:00", NIGHT), ("day", "07:00", DAY))
            ],
            "rollout": {
                "waveSize": 2,
                "pauseBetweenWaves": "0s",
                "waveTimeout": f"{int(wave_timeout)}s",
                "order": "name",
                "floors": [{"clusters": ["cluster-b"], "minReadyReplicas": 1}],
                "onFailure": "rollback",
                **rollout,
            },
        },
    }
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"{SCHEDULE}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def printed_rbac(schedules: Path) -> list[dict[str, Any]]:
    """What `tidal rbac SCHEDULES_DIR` prints for the schedule, bound to its default subject
    (the ServiceAccount STATE_NS/tidal, printed too)."""
    out = CliRunner().invoke(
        cli, ["rbac", str(schedules), "--state-namespace", STATE_NS, "--name", ROLE_NAME]
    )
    assert out.exit_code == 0, out.output
    objs = [o for o in yaml.safe_load_all(out.stdout) if o]
    (account,) = [o for o in objs if o["kind"] == "ServiceAccount"]
    assert (account["metadata"]["namespace"], account["metadata"]["name"]) == (STATE_NS, SA)
    return objs


def identity_kubeconfig(target: Target, tmp: Path) -> Path:
    """A kubeconfig that authenticates as the printed ServiceAccount."""
    path = tmp / "tidal-sa.kubeconfig"
    if isinstance(target, EmulatorTarget):
        written: Path = target.emu.write_kubeconfig(path, user=SA_USER)
        return written
    token = kubectl(
        target.kubeconfig, "create", "token", SA, "-n", STATE_NS, "--duration", "1h"
    ).strip()
    admin = yaml.safe_load(target.kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "tidal",
                "clusters": [{"name": "karmada", "cluster": server}],
                "users": [{"name": SA_USER, "user": {"token": token}}],
                "contexts": [{"name": "tidal", "context": {"cluster": "karmada", "user": SA_USER}}],
            }
        )
    )
    return path


class Outcomes:
    """Every answer the Karmada API gave tidal's client: (verb, resource, status code)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def __call__(self, verb: str, resource: str, code: int) -> None:
        self.seen.append((verb, resource, code))

    def refused(self) -> list[tuple[str, str, int]]:
        return sorted({s for s in self.seen if s[2] in (401, 403)})


def _cleanup(target: Target, rbac: list[dict[str, Any]]) -> None:
    """Remove the scenario's objects as admin (namespaces last: their Deployments go first)."""
    if isinstance(target, EmulatorTarget):
        return  # the emulator goes with the test
    kc = target.kubeconfig
    kubectl(kc, "delete", "cpp", POLICY, "--ignore-not-found", "--wait=true", timeout=120)
    kubectl(
        kc,
        "delete",
        "deployments,overridepolicies",
        "-n",
        NS,
        "--all",
        "--ignore-not-found",
        "--wait=true",
        timeout=120,
    )
    kubectl(
        kc,
        "delete",
        "events",
        "-n",
        "default",
        "--field-selector",
        f"involvedObject.name={POLICY}",
        "--ignore-not-found",
    )
    kubectl(
        kc,
        "delete",
        "-f",
        "-",
        "--ignore-not-found",
        "--wait=false",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}),
    )
    # waited for: a next run applying into a namespace still terminating would be refused
    kubectl(
        kc, "delete", "namespace", NS, STATE_NS, "--ignore-not-found", "--wait=true", timeout=180
    )


@pytest.fixture
def scene(target: Target, request: pytest.FixtureRequest) -> Iterator[Target]:
    """The scenario's view of the target: on the real plane a sampler of rbac-app's members
    (the fixture's samples ai-app); everything it made is removed at the end."""
    if isinstance(target, EmulatorTarget):
        yield target
        return
    plane = request.getfixturevalue("real_plane")
    ours = RealTarget(plane.kubeconfig, plane.members, NS, plane.version)
    try:
        yield ours
    finally:
        ours.close()


def _ready(weights: dict[str, int], names: list[str] = NAMES) -> Any:
    """Every workload of `names` fully assigned and ready where `weights` put it (day: 4/1,
    night: 0/5)."""
    want = (
        {"cluster-a": 4, "cluster-b": 1}
        if "cluster-a" in weights
        else {"cluster-a": 0, "cluster-b": REPLICAS}
    )

    def ok(now: Placement) -> bool:
        return all(now.get((w, c), (0, 0)) == (n, n) for w in names for c, n in want.items())

    return ok


def _cli_switch(path: Path, window: str, kubeconfig: Path, settle: float) -> None:
    env = {"TIDAL_STATE_NAMESPACE": STATE_NS, "TIDAL_KARMADA__POLICY_SETTLE_SECONDS": str(settle)}
    result = CliRunner(env=env).invoke(
        cli, ["switch", str(path), "--window", window, "--kubeconfig", str(kubeconfig), "--yes"]
    )
    assert result.exit_code == 0, f"{window}: {result.output}"


def _events_of_cli(admin: KarmadaClient) -> list[dict[str, Any]]:
    """The Events tidal's CLI runs wrote about the policy and the schedule's run state."""
    events = admin.resource_for("v1", "Event")
    out = []
    for namespace, name in (("default", POLICY), (STATE_NS, run_object_name(SCHEDULE))):
        items = admin.request("list", events, "GET", events.path(namespace))["items"]
        out += [
            e
            for e in items
            if e["involvedObject"]["name"] == name
            and str(e.get("reportingInstance", "")).startswith(CLI_INSTANCE_PREFIX)
        ]
    return out


def test_switches_rollback_and_resume_with_only_the_printed_rbac(
    target: Target, scene: Target, tmp_path: Path, fidelity: dict[str, Any]
) -> None:
    """As the printed ServiceAccount: `tidal switch` night then day (Events written, each with
    its object's uid), a floor breach rolled back, a crash at wave 2 resumed, a template deleted
    mid-wave; the API refuses no request and an outsider is refused."""
    admin = scene.client()
    schedules = tmp_path / "schedules"
    path = schedule(schedules, scene.patience)
    rbac = printed_rbac(schedules)
    try:
        scene.apply(team_objects())
        scene.apply(rbac)
        if isinstance(scene, EmulatorTarget):
            scene.emu.enforce_rbac(True)
        scene.wait_for(_ready(DAY), "day placement, all ready")
        scene.wait_reported(dict.fromkeys(NAMES, REPLICAS), NS)
        kubeconfig = identity_kubeconfig(scene, tmp_path)
        outcomes = Outcomes()
        client = KarmadaClient.from_kubeconfig(
            kubeconfig,
            on_request=outcomes,
            retry=RetryPolicy(attempts=8, base_delay=0.05, max_delay=0.5, max_retry_after=1.0),
        )
        _outsider_refused(scene, tmp_path)
        # the identity holds its grant: it reads its policy, by name
        assert get_policy(client, "ClusterPropagationPolicy", POLICY, None)

        for window, weights in (("night", NIGHT), ("day", DAY)):
            _cli_switch(path, window, kubeconfig, scene.policy_settle)
            scene.wait_for(_ready(weights), f"{window} placement, all ready", 60)
            scene.wait_reported(dict.fromkeys(NAMES, REPLICAS), NS)
        written = _events_of_cli(admin)
        reasons = [e["reason"] for e in written]
        assert reasons.count(SWITCH_STARTED) >= 2 and reasons.count(SWITCH_SUCCEEDED) >= 2, reasons
        # the uid comes from a GET of the object as tidal: a refused one would leave it out
        assert all(e["involvedObject"].get("uid") for e in written), written

        fidelity["rollback"] = _rolled_back(scene, client, admin, tmp_path)
        fidelity["resume"] = _crash_resumed(scene, client, path)
        fidelity["deleted"] = _template_deleted_mid_wave(scene, client, tmp_path)
        # the gate read the deleted template as tidal: found gone, not refused
        assert ("get", "deployments", 404) in outcomes.seen, sorted(set(outcomes.seen))
        assert outcomes.seen, "no request went through the hooked client"
        assert outcomes.refused() == [], f"the printed RBAC refused: {outcomes.refused()}"
        if isinstance(scene, EmulatorTarget):
            log = [r for r in scene.emu.request_log() if r.identity == SA_USER]
            refused = sorted(
                {(r.verb, r.group, r.resource, r.namespace, r.name) for r in log if r.code == 403},
                key=str,
            )
            assert log and not refused, f"the printed RBAC refused: {refused}"
        fidelity["requests"] = len(outcomes.seen)
    finally:
        _cleanup(scene, rbac)


def _outsider_refused(scene: Target, tmp: Path) -> None:
    """The same target refuses an identity the printed RBAC does not bind: enforcement is on."""
    if isinstance(scene, EmulatorTarget):
        outsider = scene.emu.write_kubeconfig(tmp / "eve.kubeconfig", user="eve")
    else:  # another ServiceAccount of the state namespace, bound to nothing
        kubectl(scene.kubeconfig, "create", "serviceaccount", "eve", "-n", STATE_NS)
        token = kubectl(scene.kubeconfig, "create", "token", "eve", "-n", STATE_NS).strip()
        doc = yaml.safe_load(scene.kubeconfig.read_text())
        doc["users"] = [{"name": doc["contexts"][0]["context"]["user"], "user": {"token": token}}]
        outsider = tmp / "eve.kubeconfig"
        outsider.write_text(yaml.safe_dump(doc))
    with pytest.raises(Forbidden):
        get_policy(
            KarmadaClient.from_kubeconfig(outsider, retry=RetryPolicy(attempts=1)),
            "ClusterPropagationPolicy",
            POLICY,
            None,
        )


def _observed(client: KarmadaClient, journal: ManualRunJournal) -> EngineObserver:
    """The CLI's observer (Events on the policy and the run state) on the hooked client."""
    return EngineObserver(
        Metrics(),
        recorder=EventRecorder(client, instance=f"test:{SCHEDULE}", may_write=journal.holds_lock),
        state_object=lambda s: configmap_ref(run_object_name(s), STATE_NS),
    )


def _journal(client: KarmadaClient) -> ManualRunJournal:
    return ManualRunJournal(client, STATE_NS, "rbac-e2e", SystemClock())


def _load(path: Path) -> Any:
    result = load_schedules([path])
    assert not result.errors, [str(e) for e in result.errors]
    return result.schedules[0]


def _rolled_back(
    scene: Target, client: KarmadaClient, admin: KarmadaClient, tmp: Path
) -> dict[str, Any]:
    """Night moving directly with a 20% floor: a wave-2 Deployment scaled to 50 (as admin)
    while wave 1 runs breaks its floor; the run rolls wave 1 back to the day placement."""
    path = schedule(
        tmp / "direct", scene.patience, strategy="direct", floors=[{"minAvailablePercent": 20}]
    )
    deployments = admin.resource_for("apps/v1", "Deployment")
    victim = NAMES[-1].rsplit("/", 1)[1]

    def scale(replicas: int) -> None:
        admin.request(
            "patch",
            deployments,
            "PATCH",
            deployments.path(NS, victim),
            body={"spec": {"replicas": replicas}},
            content_type=MERGE_PATCH,
        )

    seen: list[Any] = []
    journal = _journal(client)
    observer = _observed(client, journal)

    def on_event(event: Any) -> None:
        seen.append(event)
        observer(event)
        if isinstance(event, ev.WaveStarted) and event.wave == 1 and not event.rollback:
            scale(50)
        if (
            isinstance(event, ev.FloorBreached)
            and sum(isinstance(e, ev.FloorBreached) for e in seen) == 1
        ):
            scale(REPLICAS)  # the cause goes away: the rollback wave can converge

    try:
        record = run_switch(
            client,
            _load(path),
            "night",
            clock=SystemClock(),
            journal=journal,
            on_event=on_event,
            policy_settle=scene.policy_settle,
        )
    finally:
        journal.close()
    rollbacks = [e for e in seen if isinstance(e, ev.WaveStarted) and e.rollback]
    # wave 2 too when Karmada re-placed the scaled Deployment under the night policy
    assert record.result == "rolledBack" and 1 in {e.wave for e in rollbacks}, (
        _summary(record),
        [(e.wave, e.workloads) for e in rollbacks],
    )
    breach = next(e for e in seen if isinstance(e, ev.FloorBreached))
    assert breach.workload == NAMES[-1]
    placement = get_policy(client, "ClusterPropagationPolicy", POLICY, None)["spec"]["placement"]
    assert placement["replicaScheduling"] == _weights(DAY)
    scene.wait_for(_ready(DAY), "day placement after the rollback", 90)
    scene.wait_reported(dict.fromkeys(NAMES, REPLICAS), NS)
    events = _events_of(scene, ROLLED_BACK)
    assert events, "no RolledBack Event on the policy"
    return {
        "result": record.result,
        "breach": breach.workload,
        "waves": [(w.index, w.result) for w in record.waves],
    }


def _summary(record: RunRecord) -> str:
    """The run's result, reason and each wave's, short enough to survive pytest's truncation."""
    waves = "; ".join(f"wave {w.index} {w.result}: {w.reason}" for w in record.waves)
    return f"{record.result.value} ({record.reason}); {waves}"


def _events_of(scene: Target, reason: str) -> list[dict[str, Any]]:
    admin = scene.client()
    events = admin.resource_for("v1", "Event")
    items = admin.request("list", events, "GET", events.path("default"))["items"]
    return [e for e in items if e["involvedObject"]["name"] == POLICY and e["reason"] == reason]


def _crash_resumed(scene: Target, client: KarmadaClient, path: Path) -> dict[str, Any]:
    """Night (surging) crashed as wave 2 starts, its lock given back; a new run carries it on
    from its journal and every workload ends on cluster-b."""
    loaded = _load(path)
    crashed = _journal(client)
    try:
        crash_run(client, loaded, crashed, wave_starts(2), policy_settle=scene.policy_settle)
    finally:
        crashed.close()  # a fenced stop: the lock is given back, the journal stays unfinished
    resumed = _journal(client)
    try:
        record = run_switch(
            client,
            loaded,
            "night",
            clock=SystemClock(),
            journal=resumed,
            on_event=_observed(client, resumed),
            policy_settle=scene.policy_settle,
        )
    finally:
        resumed.close()
    assert record.result == "succeeded", _summary(record)
    scene.wait_for(_ready(NIGHT), "night placement after the resume", 90)
    return {"result": record.result, "waves": [(w.index, w.result) for w in record.waves]}


def _template_deleted_mid_wave(scene: Target, client: KarmadaClient, tmp: Path) -> dict[str, Any]:
    """Day, moving directly: a wave-1 template deleted (as admin) once its trigger is written.
    The gate finds its binding gone and reads the template (the `get` on templates the printed
    RBAC must hold); the run leaves it out and the others end at 4:1."""
    path = schedule(tmp / "deleted", scene.patience, strategy="direct")
    admin = scene.client()
    deployments = admin.resource_for("apps/v1", "Deployment")
    gone = NAMES[0]

    def on_event(event: Any) -> None:
        observer(event)
        if isinstance(event, ev.GatePassed) and event.wave == 1 and event.gate == "triggered":
            admin.request(
                "delete", deployments, "DELETE", deployments.path(NS, gone.rsplit("/", 1)[1])
            )

    journal = _journal(client)
    observer = _observed(client, journal)
    try:
        record = run_switch(
            client,
            _load(path),
            "day",
            clock=SystemClock(),
            journal=journal,
            on_event=on_event,
            policy_settle=scene.policy_settle,
        )
    finally:
        journal.close()
    assert record.result == "succeeded", _summary(record)
    assert any(gone in w and "left out" in w for w in record.warnings), record.warnings
    scene.wait_for(_ready(DAY, NAMES[1:]), "day placement without the deleted one", 90)
    return {"result": record.result, "warnings": record.warnings}
