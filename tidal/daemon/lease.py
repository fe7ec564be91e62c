"""Leader election on a coordination.k8s.io/v1 Lease, with our own small elector.

Why not kubernetes.leaderelection: it does not release the Lease on shutdown, keeps leading
after its callback returns, and measures deadlines with wall-clock time.

Rules (as client-go, but on monotonic time):
- a standby may take the Lease only when its record has not changed for leaseDuration, measured
  from when *this* replica observed the change (no trust in other replicas' clocks);
- the leader renews every retryPeriod; `is_leader()` turns False as soon as renewDeadline has
  passed since the last successful renew, even if the renewing thread is stuck (or the process
  was stopped), so nothing mutates after that; since renewDeadline < leaseDuration, the leader
  has stopped before any standby may take over;
- on shutdown the leader releases the Lease (empty holder), so a standby takes over at once.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from tidal.domain.clock import Clock
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import AlreadyExists, Conflict, KarmadaError
from tidal.karmada.objects import Obj
from tidal.karmada.views import LeaseView
from tidal.settings import LeaderElectionSettings

log = structlog.get_logger("tidal.daemon.lease")

# The leader's command API (tidal.daemon.command_api), on its Lease: {"holder": identity,
# "url": "http://host:port"}; read only while `holder` is still the Lease's holder.
API_ANNOTATION = "tidal.io/command-api"


def api_annotation(identity: str, url: str) -> dict[str, str]:
    return {API_ANNOTATION: json.dumps({"holder": identity, "url": url}, sort_keys=True)}


def leader_api_url(lease: Obj | None) -> str | None:
    """The command API address the Lease's current holder published; None when the Lease has
    no holder or its holder published none."""
    view = LeaseView.of(lease)
    text = (view.metadata.get("annotations") or {}).get(API_ANNOTATION)
    if view.holder is None or not text:
        return None
    try:
        published = json.loads(text)
    except ValueError:
        return None
    if not isinstance(published, dict) or published.get("holder") != view.holder:
        return None  # a former holder's address
    url = published.get("url")
    return url if isinstance(url, str) and url else None


class LeaseStore(Protocol):
    def get(self) -> Obj | None: ...
    def create(self, spec: Obj) -> Obj: ...
    def update(self, lease: Obj) -> Obj: ...


class KarmadaLeaseStore:
    """The Lease object in the Karmada control plane."""

    def __init__(self, client: KarmadaClient, namespace: str, name: str) -> None:
        self.client, self.namespace, self.name = client, namespace, name

    def get(self) -> Obj | None:
        from tidal.karmada.leases import get_lease

        return get_lease(self.client, self.namespace, self.name)

    def create(self, spec: Obj) -> Obj:
        from tidal.karmada.leases import create_lease

        return create_lease(self.client, self.namespace, self.name, spec)

    def update(self, lease: Obj) -> Obj:
        from tidal.karmada.leases import update_lease

        return update_lease(self.client, lease)


@dataclass(frozen=True)
class ElectionTimings:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    @classmethod
    def of(cls, settings: LeaderElectionSettings) -> ElectionTimings:
        return cls(
            settings.lease_duration_seconds,
            settings.renew_deadline_seconds,
            settings.retry_period_seconds,
        )

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs retryPeriod < renewDeadline < leaseDuration "
                f"(got {self.retry_period}, {self.renew_deadline}, {self.lease_duration})"
            )


def micro_time(instant: datetime) -> str:
    """metav1.MicroTime: RFC3339 with microseconds, UTC."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """One replica's view of the Lease. Drive it with `run(stop)` or step it in tests."""

    def __init__(
        self,
        store: LeaseStore,
        identity: str,
        clock: Clock,
        timings: ElectionTimings = ElectionTimings(),
        *,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        preempt: Callable[[str], bool] = lambda holder: False,
        publish: Callable[[], dict[str, str]] = dict,
    ) -> None:
        self.store = store
        self.publish = publish  # annotations the holder keeps on the Lease (its API address)
        self.identity = identity
        self.clock = clock
        self.timings = timings
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.preempt = preempt  # holders whose claim is known to be stale: take over at once
        self._lock = threading.Lock()
        self._leading = False
        self._last_renew = 0.0  # monotonic time of the last successful acquire/renew
        self._observed_record: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self.holder: str | None = None  # who holds the Lease, as last seen
        self.api_reachable = True  # the last Lease request got an answer

    # --- questions -------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True only while the last renew is younger than the renew deadline."""
        with self._lock:
            if not self._leading:
                return False
            return self.clock.monotonic() - self._last_renew < self.timings.renew_deadline

    # --- the gate of acting writes (tidal.karmada.client.WriteGate) ---------------------------
    def seconds_left(self) -> float:
        """How long we may still act: until the renew deadline of the last renew (a standby
        waits the longer leaseDuration from its own later observation of that renew)."""
        with self._lock:
            if not self._leading:
                return 0.0
            return self.timings.renew_deadline - (self.clock.monotonic() - self._last_renew)

    def give_up(self, reason: str) -> None:
        self._step_down(reason)

    # --- one step --------------------------------------------------------------------------
    def try_acquire_or_renew(self, *, renew_only: bool = False) -> bool:
        """One attempt to take or keep the Lease; True when we hold it afterwards.

        `renew_only`: keep it only; never take a Lease that no longer names us (a process
        woken from SIGSTOP must not grab a Lease that was released meanwhile)."""
        now_m = self.clock.monotonic()
        if renew_only and not self.check_deadline():
            return False
        try:
            lease = self.store.get()
            self.api_reachable = True
            if renew_only and LeaseView.of(lease).holder != self.identity:
                self._step_down("lease no longer names us")
                return False
            if lease is None:
                self._create(now_m)
                return True
            return self._take_or_keep(lease, now_m)
        except (Conflict, AlreadyExists):
            return False
        except KarmadaError as exc:
            self.api_reachable = exc.code != 0
            log.warning("lease_request_failed", error=str(exc), identity=self.identity)
            return False

    def _create(self, now_m: float) -> None:
        """No Lease yet: create it naming us (and publish our address on it)."""
        created = self.store.create(self._spec(None))
        if self.publish():
            self._annotate(created)
            self.store.update(created)
        self._won(now_m)

    def _take_or_keep(self, lease: Obj, now_m: float) -> bool:
        """Renew our Lease or take one whose holder let it expire; False while another
        holds it (stepping down if we thought we led)."""
        view = LeaseView(lease)
        holder = view.holder
        self.holder = holder
        record = view.record()
        if record != self._observed_record:
            self._observed_record, self._observed_at = record, now_m
        duration = view.duration_seconds or self.timings.lease_duration
        if (
            holder
            and holder != self.identity
            and now_m < self._observed_at + duration
            and not self.preempt(holder)
        ):
            if self._leading:
                self._step_down(f"lease taken by {holder}")
            return False
        lease["spec"] = self._spec(dict(view.spec))
        self._annotate(lease)
        updated = self.store.update(lease)
        self._observed_record = LeaseView(updated).record()
        self._observed_at = now_m
        self._won(now_m)
        return True

    def _spec(self, previous: Obj | None) -> Obj:
        now = micro_time(self.clock.now())
        prev = previous or {}
        mine = prev.get("holderIdentity") == self.identity
        transitions = int(prev.get("leaseTransitions") or 0)
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": round(self.timings.lease_duration),
            "acquireTime": prev.get("acquireTime") if mine and prev.get("acquireTime") else now,
            "renewTime": now,
            "leaseTransitions": transitions if mine or previous is None else transitions + 1,
        }

    def _annotate(self, lease: Obj) -> None:
        """Put what this holder publishes on the Lease (the annotations it sets, replaced)."""
        published = self.publish()
        if published:
            meta = lease.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **published}

    def _won(self, now_m: float) -> None:
        with self._lock:
            started = not self._leading
            self._leading = True
            self._last_renew = now_m
        self.holder = self.identity
        if started:
            log.info("leader_elected", identity=self.identity)
            self.on_started_leading()

    def check_deadline(self) -> bool:
        """Step down when the renew deadline passed; True when still leading."""
        with self._lock:
            if not self._leading:
                return False
            if self.clock.monotonic() - self._last_renew < self.timings.renew_deadline:
                return True
        self._step_down("renew deadline passed")
        return False

    def _step_down(self, reason: str) -> None:
        with self._lock:
            was, self._leading = self._leading, False
        if was:
            log.error("leader_lost", identity=self.identity, reason=reason)
            self.on_stopped_leading()

    def release(self) -> None:
        """Give the Lease up (empty holder) if we hold it; best effort."""
        with self._lock:
            was_leading, self._leading = self._leading, False
        if not was_leading:
            return
        try:
            lease = self.store.get()
            if lease is None or LeaseView(lease).holder != self.identity:
                return
            spec = dict(LeaseView(lease).spec)
            spec.update(
                {
                    "holderIdentity": None,
                    "leaseDurationSeconds": 1,
                    "renewTime": micro_time(self.clock.now()),
                }
            )
            lease["spec"] = spec
            self.store.update(lease)
            log.info("leader_released", identity=self.identity)
        except KarmadaError as exc:
            log.warning("lease_release_failed", error=str(exc), identity=self.identity)

    # --- the loop --------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Acquire, then renew until stopped or the deadline passes (then return)."""
        retry = self.timings.retry_period
        while not stop.is_set():
            if self.try_acquire_or_renew():
                break
            if stop.wait(retry):
                return
        while not stop.is_set():
            if stop.wait(retry):
                return
            self.try_acquire_or_renew(renew_only=True)
            if not self.check_deadline():
                return


class LockBusy(Exception):
    """Another process is switching this schedule right now."""

    def __init__(self, schedule: str, holder: str | None) -> None:
        super().__init__(
            f"schedule {schedule} is being switched by {holder}; try again later "
            "(or `tidal hold`/`tidal skip` to steer the daemon)"
        )
        self.holder = holder


def run_lock_name(schedule: str) -> str:
    return f"tidal-run-{schedule}"


class RunLock:
    """The per-schedule lock every switch takes, the daemon's and `tidal switch`'s alike: a
    Lease `tidal-run-<schedule>` held and renewed for the length of the run.

    Identities are "daemon:<id>" or "cli:<id>". The leading daemon takes a lock held by another
    daemon replica at once (only the leader acts, so that claim is stale; the journal's 409
    fences a late writer); a lock held by a manual run is waited for."""

    def __init__(
        self,
        store: LeaseStore,
        schedule: str,
        identity: str,
        clock: Clock,
        timings: ElectionTimings = ElectionTimings(),
        *,
        preempt: Callable[[str], bool] = lambda holder: False,
    ) -> None:
        self.schedule = schedule
        self.elector = LeaderElector(store, identity, clock, timings, preempt=preempt)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def holder(self) -> str | None:
        return self.elector.holder

    def try_acquire(self) -> bool:
        return self.elector.try_acquire_or_renew()

    def held(self) -> bool:
        return self.elector.is_leader()

    def acquire(self, wait_seconds: float) -> None:
        """Take the lock, waiting up to `wait_seconds` for a stale holder to expire."""
        deadline = self.elector.clock.monotonic() + wait_seconds
        while not self.try_acquire():
            if self.elector.clock.monotonic() >= deadline:
                raise LockBusy(self.schedule, self.holder)
            self.elector.clock.sleep(self.elector.timings.retry_period)
        self._start_renewing()

    def _start_renewing(self) -> None:
        self._stop.clear()

        def renew() -> None:
            while not self._stop.wait(self.elector.timings.retry_period):
                self.elector.try_acquire_or_renew(renew_only=True)
                if not self.elector.check_deadline():
                    return

        self._thread = threading.Thread(
            target=renew, name=f"tidal-lock-{self.schedule}", daemon=True
        )
        self._thread.start()

    @contextlib.contextmanager
    def holding(self) -> Iterator[bool]:
        """Try the lock once; while the block runs it is renewed, and released after. Yields
        whether it was taken (False: another holder has it; nothing to release)."""
        if not self.try_acquire():
            yield False
            return
        self._start_renewing()
        try:
            yield True
        finally:
            self.release()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.elector.release()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def manual_run_lock(
    client: KarmadaClient,
    namespace: str,
    schedule: str,
    identity: str,
    clock: Clock,
    timings: ElectionTimings = ElectionTimings(),
) -> RunLock:
    """For `tidal switch`: take the schedule's run lock (waiting out a stale holder) or raise
    LockBusy. Use as `with manual_run_lock(...) as lock:` and pass `lock.held` as a guard."""
    lock = RunLock(
        KarmadaLeaseStore(client, namespace, run_lock_name(schedule)),
        schedule,
        f"cli:{identity}",
        clock,
        timings,
    )
    lock.acquire(wait_seconds=timings.lease_duration + timings.retry_period)
    return lock
