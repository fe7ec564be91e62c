"""How a wave is set in motion: touch (a tidal.io/ annotation on each template, which
activates a Lazy policy for exactly that template), rebalance (one WorkloadRebalancer per
wave: a Fresh reschedule), or both; and `auto`, which picks one per issue 2's rule."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tidal.domain.placement import Placement
from tidal.domain.prediction import placement_mode
from tidal.engine.resolve import PolicyTarget, Workload
from tidal.engine.states import AUTO, Trigger
from tidal.karmada import rebalancers as rebalancers_api
from tidal.karmada import templates as templates_api
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.errors import NotFound
from tidal.karmada.objects import WorkloadRebalancer
from tidal.karmada.views import BindingView, ObjectView

REBALANCER_TTL_SECONDS = 600
# template touches of one wave in flight at once (within the client's rate limit)
TOUCHES_AT_ONCE = 8


def binding_placement(workload: Workload) -> Placement | None:
    """The placement the workload's binding carries now (None without a binding)."""
    return BindingView.of(workload.binding).placement


def placement_changes(targets: Sequence[PolicyTarget], workloads: Sequence[Workload]) -> bool:
    by_policy = {t.key: Placement(t.target_placement) for t in targets}
    return any(binding_placement(w) != by_policy.get(w.policy) for w in workloads)


def lazy_swap(targets: Sequence[PolicyTarget]) -> bool:
    """A swap to a Lazy policy: its templates are claimed only at their next edit, and
    Karmada's scheduler ignores unclaimed bindings, so a rebalance alone moves nothing."""
    return any(t.swap_from and t.target_spec.get("activationPreference") == "Lazy" for t in targets)


def choose(trigger: str, targets: Sequence[PolicyTarget], workloads: Sequence[Workload]) -> Trigger:
    """auto: touch for a placement change, both when that placement is dynamic or
    aggregated, rebalance when the placement stays the same (both for a swap to a Lazy
    policy, which needs the touch to claim the templates)."""
    if trigger == Trigger.REBALANCE and lazy_swap(targets):
        return Trigger.BOTH
    if trigger != AUTO:
        return Trigger(trigger)
    if not placement_changes(targets, workloads):
        return Trigger.BOTH if lazy_swap(targets) else Trigger.REBALANCE
    if any(placement_mode(t.target_placement) in ("dynamic", "aggregated") for t in targets):
        return Trigger.BOTH
    return Trigger.TOUCH


@dataclass
class TouchResult:
    touched: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    objects: dict[str, Obj] = field(default_factory=dict)  # each template as the touch left it


def touch_wave(
    client: KarmadaClient,
    workloads: Sequence[Workload],
    *,
    stamp: str,
    run_id: str,
    skip: Sequence[str] = (),
) -> TouchResult:
    """One merge patch per template, up to TOUCHES_AT_ONCE in flight (each is a round trip
    the wave waits for, and a wave's move starts only once all have landed); a template
    deleted meanwhile is reported, not fatal. Results are in the wave's order."""

    def touch(w: Workload) -> Obj | None:
        try:
            return templates_api.touch(
                client,
                w.key.api_version,
                w.key.kind,
                w.key.namespace or None,
                w.key.name,
                stamp=stamp,
                run_id=run_id,
            )
        except NotFound:
            return None

    todo = [w for w in workloads if w.name not in skip]
    # an in-process API (no background watch) is driven by its caller's thread alone
    at_once = TOUCHES_AT_ONCE if client.background_watch and len(todo) > 1 else 1
    if at_once == 1:
        done = [touch(w) for w in todo]
    else:
        with ThreadPoolExecutor(max_workers=min(at_once, len(todo))) as pool:
            done = list(pool.map(touch, todo))
    landed = dict(zip((w.name for w in todo), done, strict=True))
    result = TouchResult()
    for w in workloads:
        if w.name not in landed:  # skipped: touched before
            result.touched.append(w.name)
        elif (obj := landed[w.name]) is None:
            result.deleted.append(w.name)
        else:
            result.touched.append(w.name)
            result.versions[w.name] = ObjectView(obj).resource_version
            result.objects[w.name] = obj
    return result


def rebalancer_name(
    schedule: str, run_id: str, wave: int, attempt: int = 0, rollback: bool = False
) -> str:
    """The name of a wave's rebalancer; `wave` counts from 1, as the journal's waves do (the
    names are what they were when it counted from 0: a journal in flight finds its own)."""
    if wave < 1:
        raise ValueError(f"rebalancer_name: wave {wave} (waves count from 1)")
    base = f"tidal-{schedule}-{run_id}-w{wave}" + ("-back" if rollback else "")
    if attempt:
        base += f"-r{attempt}"
    name = re.sub(r"[^a-z0-9.-]+", "-", base.lower()).strip("-.")
    return name[:253]


def is_rollback_rebalancer(name: str) -> bool:
    return "-back" in name.rsplit("-w", 1)[-1]


def rebalance_wave(
    client: KarmadaClient,
    name: str,
    workloads: Sequence[Workload],
    *,
    schedule: str,
    run_id: str,
    annotations: dict[str, str] | None = None,
) -> WorkloadRebalancer:
    refs = [w.ref() for w in workloads]
    return rebalancers_api.create_rebalancer(
        client,
        name,
        refs,
        ttl_seconds=REBALANCER_TTL_SECONDS,
        labels=rebalancer_labels(schedule, run_id),
        annotations=annotations,
    )


def rebalancer_labels(schedule: str, run_id: str) -> dict[str, str]:
    """The owner labels of a run's rebalancers."""
    return {"tidal.io/schedule": _label_value(schedule), "tidal.io/run": _label_value(run_id)}


def rebalancer_selector(schedule: str, run_id: str) -> str:
    """The label selector of every rebalancer of one run."""
    return ",".join(f"{k}={v}" for k, v in rebalancer_labels(schedule, run_id).items())


def _label_value(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)
