"""Let Karmada's resource detector finish with a policy's last change before tidal changes the
policy's placement.

Every change of a policy makes the detector re-enqueue the templates the policy claims, each
flagged with whether the policy was Lazy at that moment, and reconcile them later (a
low-priority queue lane) against the policy as it is by then. A template enqueued while the
policy was not Lazy gets whatever placement the policy has when the detector reaches it, even
if the policy has become Lazy since. So a placement written moments after a policy stopped
being Lazy (a previous run lifting its temporary Lazy, an owner's edit) can move templates
of later waves at once, outside any wave. Waiting until the policy's last change is
`settle_seconds` old gives the detector that time; policies that changed long ago cost no wait.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tidal.domain.clock import Clock
from tidal.engine.events import Emitter, EventBase, PolicySettling, policy_ref
from tidal.engine.resolve import PolicyTarget
from tidal.karmada import policies as api
from tidal.karmada.client import KarmadaClient
from tidal.karmada.views import PolicyView

# managedFields times are whole seconds: a change at hh:mm:ss.9 reads as hh:mm:ss
_TRUNCATION = timedelta(seconds=1)
# a last change this far ahead of the server's time as we know it is on another clock (an
# emulator running fast, a restored backup): it says nothing about the detector's queue
_FUTURE_TOLERANCE = timedelta(seconds=2)


def settle_wait(
    last_changed: datetime | None, server_now: datetime, settle_seconds: float
) -> float:
    """Seconds still to wait before `settle_seconds` have passed since `last_changed` (both on
    the API server's clock); never more than the settle time itself."""
    if last_changed is None or settle_seconds <= 0:
        return 0.0
    if last_changed > server_now + _FUTURE_TOLERANCE:
        return 0.0
    due = last_changed + _TRUNCATION + timedelta(seconds=settle_seconds)
    longest = (_TRUNCATION + timedelta(seconds=settle_seconds)).total_seconds()
    return min(longest, max(0.0, (due - server_now).total_seconds()))


def let_detector_settle(
    client: KarmadaClient,
    target: PolicyTarget,
    *,
    clock: Clock,
    settle_seconds: float,
    emitter: Emitter,
    base: EventBase,
) -> float:
    """Wait (on `clock`) until the policy `target` patches last changed `settle_seconds` ago;
    returns the seconds waited."""
    if settle_seconds <= 0 or target.swap_from:
        return 0.0
    view = PolicyView.of(api.find_policy(client, target.kind, target.name, target.namespace))
    if view.written_by(base["window"], base["run_id"]):
        return 0.0  # this run changed it already (a resume): nothing left to wait for
    last = view.last_changed
    ahead = client.clock_offset() or 0.0  # our clock ahead of the server's (its Date header)
    wait = settle_wait(last, clock.now() - timedelta(seconds=ahead), settle_seconds)
    if wait > 0 and last is not None:
        emitter.emit(
            PolicySettling(
                **base,
                kind=target.kind,
                policy=policy_ref(target.namespace, target.name),
                last_changed=last.isoformat(),
                seconds=round(wait, 3),
            )
        )
        clock.sleep(wait)
    return wait
