"""The Daemon: schedules directory + scheduler + lease + state + HTTP, wired together.

Stopping (SIGTERM): no new passes start; the journal refuses further saves, so a running switch
stops at its next step boundary with its state persisted; the lease is released; exit 0.
Losing the lease (or a 409 on a state write): stop acting at once and exit 1; a standby
takes over and resumes from the state.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from tidal.daemon.budget import SharedBudget
from tidal.daemon.command_api import Answer, CommandServer, advertised_url, error
from tidal.daemon.commands import CommandRefused, ask_retry, give, no_schedule
from tidal.daemon.http import HealthServer
from tidal.daemon.lease import (
    ElectionTimings,
    KarmadaLeaseStore,
    LeaderElector,
    LeaseStore,
    RunLock,
    api_annotation,
    leader_api_url,
    run_lock_name,
)
from tidal.daemon.lifecycle import Lifecycle, Stage
from tidal.daemon.queue import QueuePublisher, queue_report
from tidal.daemon.reconcile import Reconciler, RunOutcome, RunShare, RunSwitch
from tidal.daemon.reload import DirectoryWatcher, Loader, ScheduleDirectory, loader_for
from tidal.daemon.scheduler import Dispatcher, WindowScheduler
from tidal.daemon.state import StateStore
from tidal.daemon.sweeping import SweepLoop
from tidal.domain.clock import Clock, SystemClock
from tidal.domain.run_control import Source, Verb
from tidal.domain.team_capacity import TeamEstimate
from tidal.domain.windows import start_in_force, times_of
from tidal.engine.events import EngineEvent, OnEvent
from tidal.engine.journal import Journal
from tidal.karmada.client import KarmadaClient
from tidal.karmada.informer import SharedReads
from tidal.loading.loader import LoadedSchedule
from tidal.metrics import DaemonMetrics, Metrics, NullMetrics
from tidal.settings import Settings

log = structlog.get_logger("tidal.daemon")

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 1


class EngineRunSwitch:
    """tidal.engine.switch.run_switch with the daemon's settings for every run."""

    def __init__(
        self, settings: Settings, on_command: Callable[[str, str, str], None] | None = None
    ) -> None:
        self.policy_settle = settings.karmada.policy_settle_seconds
        self.on_command = on_command  # an operator's command a run acted on (metered)
        self.estimator = settings.estimator  # its teams file: dynamic splits take it in

    def __call__(
        self,
        client: KarmadaClient,
        loaded: LoadedSchedule,
        window_name: str,
        *,
        clock: Clock,
        journal: Journal,
        **given: Any,
    ) -> RunOutcome:
        """`given`: the rest of RunSwitch's keywords (on_event, run_id, resume, budget, reads),
        passed on as they come."""
        from tidal.daemon.interlude import OperatorInterlude
        from tidal.engine.switch import run_switch

        interlude = (
            OperatorInterlude(journal, loaded.schedule.name, clock, self.on_command)
            if isinstance(journal, StateStore)
            else None
        )
        return run_switch(
            client,
            loaded,
            window_name,
            clock=clock,
            journal=journal,
            **given,
            policy_settle=self.policy_settle,
            interlude=interlude,
            team=self._team(client),
        )

    def _team(self, client: KarmadaClient) -> TeamEstimate | None:
        """The team estimate for this run (the teams file read now, the members once); None
        without a teams file, or with one that does not load (logged)."""
        if self.estimator.teams is None:
            return None
        from datetime import UTC, datetime

        from tidal.estimator.planned import team_estimate
        from tidal.loading.teams import TeamsFileError, load_teams

        try:
            teams = load_teams(self.estimator.teams)
        except TeamsFileError as exc:
            log.warning("estimator_teams_invalid", error=str(exc).splitlines()[0])
            return None
        return team_estimate(client, teams, lambda: datetime.now(UTC), self.estimator.stale_seconds)


class _AlwaysLeader:
    """Leader election disabled (single replica): always leading."""

    holder: str | None = None
    api_reachable = True  # it asks the API nothing

    def __init__(self, identity: str) -> None:
        self.holder = identity

    def is_leader(self) -> bool:
        return True

    def release(self) -> None:
        pass


@dataclass(frozen=True)
class Wiring:
    """What a daemon may be given instead of its defaults (tests, the demo): each None is the
    production part built from the settings."""

    clock: Clock | None = None
    run_switch: RunSwitch | None = None  # default: EngineRunSwitch over the engine
    metrics: Metrics | None = None  # default: no metrics, no observer, no Events
    load: Loader | None = None  # default: the loader of the settings' CRDs
    lease_store: LeaseStore | None = None  # default: the leader Lease in Karmada
    lock_store: Callable[[str], LeaseStore] | None = None  # default: run-lock Leases
    on_event: OnEvent | None = None  # one more engine-event observer
    watch: bool = True  # watch the schedules directory for changes


class Daemon:
    def __init__(
        self, settings: Settings, *, client: KarmadaClient, wiring: Wiring = Wiring()
    ) -> None:
        self.settings = settings
        self.client = client
        self.clock = wiring.clock or SystemClock()
        self.exporter = wiring.metrics  # the engine observer reports through it (and Events)
        self.metrics: DaemonMetrics = (
            wiring.metrics if wiring.metrics is not None else NullMetrics()
        )
        self.identity = settings.identity
        self._stop = threading.Event()
        self._stopping = False
        self._exit_code = EXIT_OK
        self._lock = threading.Lock()
        self._observers = [o for o in (wiring.on_event, self._observer()) if o is not None]
        self.timings = ElectionTimings.of(settings.leader_election)  # the lease's and locks'
        self.elector = self._elector(wiring.lease_store)
        self.state = StateStore(
            client,
            settings.state_namespace,
            guard=self.may_act,
            writer=f"daemon:{settings.identity}",
        )
        self.directory = ScheduleDirectory(
            Path(settings.schedules), wiring.load or loader_for(settings.karmada_crds, client)
        )
        api = settings.api
        self.reads = (
            SharedReads(
                client,
                max_watch_seconds=api.shared_watch_seconds,
                member_capacity=settings.watches_members,
            )
            if api.shared_watch
            else None
        )
        self.budget = SharedBudget(
            self.clock,
            on_change=self._budget_changed,
            settle_seconds=settings.scheduler.capacity_settle_seconds,
        )
        self.queue = QueuePublisher(client, settings.state_namespace, self.identity, self.clock)
        self.reconciler = Reconciler(
            client=client,
            state=self.state,
            run_switch=wiring.run_switch or EngineRunSwitch(settings, self.metrics.run_command),
            clock=self.clock,
            get_schedule=self.directory.get,
            is_leader=self.may_act,
            on_event=self._emit,
            on_fenced=self._fenced,
            metrics=self.metrics,
            lock_for=self._run_lock,
            max_clock_skew=settings.scheduler.max_clock_skew_seconds,
            shared_for=self._shared_for,
        )
        self.dispatcher = Dispatcher(
            self.reconciler,
            settings.scheduler.max_concurrent_switches,
            on_error=self._worker_failed,
            priority_of=self._priority,
            clock=self.clock,
            on_change=self._queue_changed,
            waits_for_switch=self._waits_for_switch,
        )
        self.scheduler = WindowScheduler(
            self.clock,
            self._window_fired,
            misfire_grace_seconds=settings.scheduler.misfire_grace_seconds,
            resync_seconds=settings.scheduler.resync_seconds,
            resync=self.resync,
            on_event=self.metrics.on_scheduler_event,
        )
        self.watcher = (
            DirectoryWatcher(Path(settings.schedules), self.reload) if wiring.watch else None
        )
        self.http: HealthServer | None = None
        self._serve_http = True
        self.commands: CommandServer | None = None
        self._api_url: str | None = None  # this replica's command API, published while leading
        self._run_locks: dict[str, RunLock] = {}
        self._lock_store = wiring.lock_store
        self._elector_thread: threading.Thread | None = None
        self.sweeper = SweepLoop(
            client,
            settings.state_namespace,
            self.clock,
            settings.sweeper,
            identity=self.identity,
            may_act=self.may_act,
            loaded=lambda: set(self.directory.catalog.schedules),
            metrics=self.metrics,
            stop=self._stop,
        )
        self.lifecycle = Lifecycle(self._stages())

    def _elector(self, lease_store: LeaseStore | None) -> LeaderElector | _AlwaysLeader:
        """The leader elector of the settings; with one, every acting write (retries too)
        needs the Lease."""
        le = self.settings.leader_election
        if not le.enabled:
            return _AlwaysLeader(self.identity)
        elector = LeaderElector(
            lease_store
            or KarmadaLeaseStore(self.client, self.settings.state_namespace, le.lease_name),
            self.identity,
            self.clock,
            self.timings,
            on_started_leading=self._started_leading,
            on_stopped_leading=self._stopped_leading,
            publish=self._published,
        )
        self.client.gate_writes(elector)
        return elector

    # --- state of the process ---------------------------------------------------------------
    def may_act(self) -> bool:
        return not self._stopping and self.elector.is_leader()

    def healthy(self) -> tuple[bool, str]:
        if self._stop.is_set():
            return False, "stopping"
        if not self.scheduler.running():
            return False, "scheduler not running"
        return True, "ok"

    def ready(self) -> tuple[bool, str]:
        if not self.directory.loaded_once:
            return False, "schedules not loaded"
        thread = self._elector_thread
        if thread is not None and not thread.is_alive() and not self._stop.is_set():
            return False, "leader election is not running (see the lease_thread_died log)"
        if not self.elector.api_reachable:
            return False, "Karmada API not reachable"
        role = "leader" if self.elector.is_leader() else "standby"
        return True, f"ready ({role})"

    # --- wiring ------------------------------------------------------------------------------
    def _observer(self) -> OnEvent | None:
        if self.exporter is None:  # no exporter: no observer (nor Events) either
            return None
        from tidal.daemon.state import run_object_name
        from tidal.karmada.events import EventRecorder, configmap_ref
        from tidal.observe import EngineObserver

        namespace = self.settings.state_namespace
        observer: OnEvent = EngineObserver(
            self.exporter,
            recorder=EventRecorder(
                self.client, instance=self.identity, may_write=lambda: self.may_act()
            ),
            state_object=lambda schedule: configmap_ref(run_object_name(schedule), namespace),
        )
        return observer

    def _run_lock(self, schedule: str) -> RunLock:
        lock = self._run_locks.get(schedule)
        if lock is None:
            store = (
                self._lock_store(schedule)
                if self._lock_store
                else KarmadaLeaseStore(
                    self.client, self.settings.state_namespace, run_lock_name(schedule)
                )
            )
            lock = RunLock(
                store,
                schedule,
                f"daemon:{self.identity}",
                self.clock,
                self.timings,
                preempt=lambda holder: holder.startswith("daemon:"),
            )
            self._run_locks[schedule] = lock
        return lock

    def _waits_for_switch(self, schedule: str, reason: str) -> bool:
        """A queued pass that would start a switch: a window's trigger, or a start in force
        within its catch-up window that no pass has handled yet."""
        if reason.startswith("window:"):
            return True
        loaded = self.directory.get(schedule)
        if loaded is None:
            return False
        times = times_of(loaded.schedule)
        now = self.clock.now()
        start = start_in_force(times, now)
        if start is None or now - start.at > times.catch_up_window:
            return False
        seen = self.reconciler.handled_at.get(schedule)
        return seen is None or seen < start.at

    def _priority(self, schedule: str) -> int:
        loaded = self.directory.get(schedule)
        return loaded.schedule.spec.priority if loaded is not None else 0

    @contextlib.contextmanager
    def _shared_for(self, loaded: LoadedSchedule) -> Iterator[RunShare]:
        """One run's share of the daemon: the informers and its view of the budget; when the
        run ends, however it ends, what it held is given back."""
        schedule = loaded.schedule
        budget = self.budget.for_schedule(schedule.name, schedule.spec.priority)
        try:
            if self.reads is None:
                yield RunShare(budget)
            else:
                with self.reads.in_use():
                    yield RunShare(budget, self.reads)
        finally:
            self.budget.end_run(schedule.name)

    def _budget_changed(self, budget: SharedBudget) -> None:
        self._queue_changed()

    def _queue_changed(self) -> None:
        slots = self.dispatcher.waiting()
        capacity, leased, now = self.budget.waiting(), self.budget.leased(), self.clock.now()
        self.metrics.set_queue(slots, capacity, leased, now)
        self.queue.notify()

    def queue_status(self) -> dict[str, Any]:
        """For each schedule that waits: for a slot or for capacity, and since when; and the
        capacity leased now (the status endpoint, `tidal status`)."""
        return queue_report(
            self.dispatcher.waiting(), self.budget.waiting(), self.budget.leased(), self.clock.now()
        )

    def _emit(self, event: EngineEvent) -> None:
        for observer in self._observers:
            try:
                observer(event)
            except Exception as exc:  # an observer never breaks a switch
                log.warning("event_observer_failed", error=str(exc))

    def _worker_failed(self, schedule: str, exc: Exception) -> None:
        self.metrics.switch_worker_error(schedule)

    def _window_fired(self, schedule: str, window: str) -> None:
        self.dispatcher.submit(schedule, f"window:{window}")

    def _started_leading(self) -> None:
        self.metrics.set_leader(True)
        self.resync("leadership")

    def _stopped_leading(self) -> None:
        self.metrics.set_leader(False)
        self._fail("lost the lease")

    def _fenced(self, why: str) -> None:
        self._fail(f"fenced out: {why}")

    def _fail(self, why: str) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self._exit_code = EXIT_LOST_LEADERSHIP
        log.error("daemon_stopping", reason=why, identity=self.identity)
        self.request_stop()

    def resync(self, reason: str = "resync") -> None:
        for name in sorted(self.directory.catalog.schedules):
            self.dispatcher.submit(name, reason)
        self._queue_changed()  # a change the publish interval held back goes out now
        self._publish_next_runs()

    def reload(self) -> None:
        outcome = self.directory.reload()
        for name in outcome.removed:
            self.scheduler.remove_schedule(name)
            self.metrics.forget_schedule(name)
        for name, loaded in self.directory.catalog.schedules.items():
            self.scheduler.set_schedule(name, times_of(loaded.schedule))
        loaded_all = list(self.directory.catalog.schedules.values())
        if not loaded_all:
            log.warning(
                "no_schedules",
                directory=str(self.settings.schedules),
                files=len(self.directory.catalog.valid_by_file),
                hint="the daemon has nothing to do: put TidalSchedule files (*.yaml) "
                "in the directory, or point --schedules/TIDAL_SCHEDULES at them",
            )
        self.metrics.preset(loaded_all)
        self.metrics.config_loaded(self.directory.catalog.valid_by_file, len(loaded_all))
        self.resync("reload")

    def _publish_next_runs(self) -> None:
        now = self.clock.now()
        for name, loaded in list(self.directory.catalog.schedules.items()):
            self.metrics.publish_window_times(name, times_of(loaded.schedule), now)

    # --- the command API (tidal.daemon.command_api) ------------------------------------------
    def _published(self) -> dict[str, str]:
        return api_annotation(self.identity, self._api_url) if self._api_url else {}

    def leader_url(self) -> str | None:
        """The command API address the leader published on its Lease (None: none known)."""
        from tidal.karmada.errors import KarmadaError

        if not isinstance(self.elector, LeaderElector):
            return None
        try:
            return leader_api_url(self.elector.store.get())
        except KarmadaError as exc:
            log.warning("lease_unreadable", error=str(exc))
            return None

    def give_command(self, name: str, verb: Verb) -> Answer:
        """Carry out one command to schedule NAME, as the leader (tidal.daemon.commands)."""
        from tidal.karmada.errors import KarmadaError

        if self.directory.get(name) is None:
            return error(
                404,
                no_schedule(name, self.settings.schedules, list(self.directory.catalog.schedules)),
            )
        try:
            given = (
                ask_retry(self.state, name)
                if verb is Verb.RETRY
                else give(self.state, name, verb, self.clock.now(), Source.API)
            )
        except CommandRefused as exc:
            return error(409, str(exc))
        except KarmadaError as exc:
            return error(503, f"cannot write the controls of {name}: {exc}")
        log.info(
            "run_command_given",
            schedule=name,
            command=verb.value,
            run_id=given.run_id,
            source=Source.API.value,
        )
        if verb is Verb.RETRY:
            self.dispatcher.submit(name, "retry")
        return Answer(
            202 if verb is Verb.RETRY else 200,
            {
                "message": given.message,
                "schedule": name,
                "command": verb.value,
                "runId": given.run_id,
            },
        )

    def _serve_commands(self) -> None:
        api = self.settings.commands
        if not api.enabled or api.token_file is None:
            return
        self.commands = CommandServer(
            host=self.settings.listen_address,
            port=api.port,
            token_file=api.token_file,
            identity=self.identity,
            is_leader=self.may_act,
            leader_url=self.leader_url,
            give=self.give_command,
            on_answer=self.metrics.command_request,
        ).start()
        self._api_url = advertised_url(
            api.advertise_host, self.settings.listen_address, self.commands.port
        )

    # --- life cycle --------------------------------------------------------------------------
    def _stages(self) -> list[Stage]:
        """The lifecycle table: start order top to bottom; `stop_rank` orders the shutdown."""
        return [
            Stage("state namespace", self._ensure_namespace),
            Stage(
                "http",
                self._start_http,
                lambda _: self._stop_http(),
                "stopped last (the command API with it), so probes answer until the end",
                stop_rank=7,
                enabled=lambda: self._serve_http,
            ),
            Stage(
                "queue publisher",
                lambda: self.queue.start(self.queue_status, self.may_act),
                lambda _: self.queue.stop(),
                "its stop flag; thread joined 2 s",
                stop_rank=4,
            ),
            Stage(
                "dispatcher",
                self.dispatcher.start,
                self._drain,
                "waits for the in-flight passes (the grace), then its workers stop",
                stop_rank=3,
            ),
            Stage(
                "window scheduler",
                self.scheduler.start,
                lambda _: self.scheduler.shutdown(),
                "shut down first: no window fires any more",
                stop_rank=1,
            ),
            Stage("first load", self._first_load),
            Stage(
                "schedules watcher",
                self._start_watcher,
                lambda _: self._stop_watcher(),
                "its stop event; thread joined 2 s",
                stop_rank=2,
                enabled=lambda: self.watcher is not None,
            ),
            Stage(
                "sweeper",
                self.sweeper.start,
                lambda _: self.sweeper.join(timeout=5),
                "the daemon's stop event; thread joined 5 s",
                stop_rank=5,
                enabled=lambda: self.settings.sweeper.enabled,
            ),
            Stage(
                "leadership",
                self._lead,
                lambda _: self._step_down(),
                "the stop event ends the lease thread (joined 5 s); the Lease is released "
                "once the runs are stopped",
                stop_rank=6,
            ),
        ]

    def start(self, *, serve_http: bool = True) -> Daemon:
        self._serve_http = serve_http
        self.lifecycle.start()
        log.info(
            "daemon_started",
            identity=self.identity,
            schedules=str(self.settings.schedules),
            address=self.settings.listen_address,
            port=self.http.port if self.http else None,
            command_api=self._api_url,
        )
        return self

    def _ensure_namespace(self) -> None:
        from tidal.karmada.errors import KarmadaError
        from tidal.karmada.state_objects import ensure_namespace

        try:
            ensure_namespace(self.client, self.settings.state_namespace)
        except KarmadaError as exc:  # reported; readiness shows whether the API answers
            log.warning(
                "state_namespace_unavailable",
                namespace=self.settings.state_namespace,
                error=str(exc),
            )

    def _start_http(self) -> None:
        self.http = HealthServer(
            self.settings.port,
            self.healthy,
            self.ready,
            self.metrics.render,
            host=self.settings.listen_address,
            status=self.queue_status,
        ).start()
        self._serve_commands()

    def _stop_http(self) -> None:
        if self.http is not None:
            self.http.stop()
        if self.commands is not None:
            self.commands.stop()

    def _start_watcher(self) -> None:
        if self.watcher is not None:
            self.watcher.start()

    def _stop_watcher(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()

    def _drain(self, grace_seconds: float) -> None:
        self.dispatcher.wait_idle(grace_seconds)
        self.dispatcher.stop(timeout=1)

    def _lead(self) -> None:
        """Run the lease thread (leader election on), or lead at once (off)."""
        if isinstance(self.elector, LeaderElector):
            self._elector_thread = threading.Thread(
                target=self._elect, args=(self.elector,), name="tidal-lease", daemon=True
            )
            self._elector_thread.start()
        else:
            self.metrics.set_leader(True)

    def _step_down(self) -> None:
        if self._elector_thread is not None:
            self._elector_thread.join(timeout=5)
        self.elector.release()
        self.metrics.set_leader(False)

    def _elect(self, elector: LeaderElector) -> None:
        """The lease thread: a crash is logged and makes the replica unready (never silent)."""
        try:
            elector.run(self._stop)
        except Exception as exc:
            log.error(
                "lease_thread_died",
                identity=self.identity,
                error=str(exc)[:500],
                error_class=type(exc).__name__,
            )
            elector.give_up(f"lease thread died: {type(exc).__name__}")

    def _first_load(self) -> None:
        """Load the schedules on a thread of its own: a slow file never keeps the HTTP server,
        or a SIGTERM (which only sets flags), waiting for it."""
        loader = threading.Thread(target=self._reload_reported, name="tidal-load", daemon=True)
        loader.start()
        while loader.is_alive() and not self._stop.is_set():
            loader.join(0.05)

    def _reload_reported(self) -> None:
        try:
            self.reload()
        except Exception as exc:  # the watcher retries on the next change
            log.error("reload_failed", error=str(exc), error_class=type(exc).__name__)

    def request_stop(self) -> None:
        """Begin shutting down: only sets flags (never from a signal handler: the Event's
        lock may be held by the very thread the handler interrupts; tidal.cli.stop_signals)."""
        self._stopping = True
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._stop.wait(timeout)

    def shutdown(self, grace_seconds: float = 20.0) -> int:
        """Finish the in-flight step, persist, release the lease; the exit code."""
        self.request_stop()
        self.lifecycle.stop(grace_seconds)
        log.info("daemon_stopped", identity=self.identity, exit_code=self._exit_code)
        return self._exit_code
