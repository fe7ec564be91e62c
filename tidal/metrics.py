"""Every Prometheus metric tidal exports, in one place, on a registry owned by one `Metrics` object.

Built once in main and passed down; nothing here is module-global, so tests build as many
independent `Metrics` as they like. Labels are bounded: schedule, window, cluster, result,
reason, file, verb, resource, code, event. Never a workload name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final, Literal, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from tidal.domain.outcomes import FailureReason, RunResult, WaveResult
from tidal.domain.windows import WindowTimes, next_start_of, start_in_force

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_WINDOW_PERIOD_SECONDS",
    "RUN_RESULTS",
    "SCHEDULER_EVENTS",
    "WAVE_FAILURE_REASONS",
    "WAVE_RESULTS",
    "DaemonMetrics",
    "Metrics",
    "NullMetrics",
    "ScheduleLabels",
    "labels_of",
    "window_period_seconds",
]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

SchedulerEvent = Literal["error", "missed", "max_instances"]

# The label values of tidal_switch_runs_total, tidal_waves_total and the failure reasons, from
# the shared enums (a failed wave that was moved back is counted as failed).
RUN_RESULTS: Final[tuple[str, ...]] = tuple(r.metric_label for r in RunResult)
WAVE_RESULTS: Final[tuple[str, ...]] = tuple(dict.fromkeys(r.metric_label for r in WaveResult))
WAVE_FAILURE_REASONS: Final[tuple[FailureReason, ...]] = tuple(FailureReason)
SCHEDULER_EVENTS: Final[tuple[SchedulerEvent, ...]] = ("error", "missed", "max_instances")
BLOCKED_REASONS: Final = ("state_corrupt",)
# Why a start was refused: an unsafe plan, a bad schedule or API answer, anything else.
REFUSED_REASONS: Final = ("unsafe_plan", "policy_invalid", "not_resolved", "api_error", "internal")

# A window that starts at a fixed local time every day comes round once a day.
DEFAULT_WINDOW_PERIOD_SECONDS: Final = 86400.0

# Switches run from seconds (the emulator) to hours (thousands of workloads).
_SWITCH_BUCKETS: Final = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, float("inf"))
_WAVE_BUCKETS: Final = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, float("inf"))

# Waits for a slot or for capacity: none at all to most of a night.
_WAIT_BUCKETS: Final = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, float("inf"))
WAIT_REASONS: Final = ("slot", "capacity")

_VERBS: Final = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "apply"}
)


@dataclass(frozen=True)
class ScheduleLabels:
    """The label values one schedule contributes: its windows and the clusters of its floors."""

    name: str
    windows: Sequence[str]
    clusters: Sequence[str] = ()
    periods: Mapping[str, float] = field(default_factory=dict)
    team: str = ""  # the schedule's tidal.io/team label; its name when unset
    file: str = ""


TEAM_LABEL: Final = "tidal.io/team"


def labels_of(schedule: Any) -> ScheduleLabels:
    """Read the label values out of a TidalSchedule (or a LoadedSchedule wrapping one)."""
    path = getattr(schedule, "path", None)
    schedule = getattr(schedule, "schedule", schedule)
    spec = schedule.spec
    windows = [w.name for w in spec.windows]
    clusters: set[str] = set()
    floors = list(getattr(spec.rollout, "floors", None) or [])
    for window in spec.windows:
        override = getattr(window, "rollout", None)
        floors.extend(getattr(override, "floors", None) or [])
    for floor in floors:
        clusters.update(getattr(floor, "clusters", None) or [])
    name = schedule.metadata.name
    team = (getattr(schedule.metadata, "labels", None) or {}).get(TEAM_LABEL) or name
    return ScheduleLabels(
        name, windows, sorted(clusters), team=team, file=str(path) if path is not None else ""
    )


def window_period_seconds(times: WindowTimes, window: str, now: datetime) -> float | None:
    """How long a window's success may be old right now before it is overdue (minus margin).

    The longer of the gap we are in (latest start -> next start) and the gap before it: so a
    weekday window is not overdue over the weekend, a skipped date does not page, and a switch
    still running just after a start that follows a long gap does not page either.
    """
    single = replace(times, starts=tuple((n, s) for n, s in times.starts if n == window))
    if not single.starts:
        return None
    latest = start_in_force(single, now)
    following = next_start_of(single, window, now)
    gaps: list[timedelta] = []
    if latest is not None and following is not None:
        gaps.append(following.at - latest.at)
    if latest is not None:
        before = start_in_force(single, latest.at - timedelta(microseconds=1))
        if before is not None:
            gaps.append(latest.at - before.at)
    return max(gaps).total_seconds() if gaps else None


class Metrics:
    """The metric set of one tidal process, with its own CollectorRegistry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        sw, sc = ("schedule", "window"), ("schedule", "cluster")

        def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
            return Counter(name, doc, labels, registry=r)

        def gauge(name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
            return Gauge(name, doc, labels, registry=r)

        def histogram(name: str, doc: str, buckets: Sequence[float]) -> Histogram:
            return Histogram(name, doc, sw, buckets=buckets, registry=r)

        self.switch_runs = counter(
            "tidal_switch_runs_total", "Switches finished, by result.", (*sw, "result")
        )
        self.switch_duration = histogram(
            "tidal_switch_duration_seconds",
            "Wall time of a switch from start to finish.",
            _SWITCH_BUCKETS,
        )
        self.waves = counter("tidal_waves_total", "Waves finished, by result.", (*sw, "result"))
        self.wave_duration = histogram(
            "tidal_wave_duration_seconds",
            "Wall time of a wave from trigger to its last gate.",
            _WAVE_BUCKETS,
        )
        self.wave_failures = counter(
            "tidal_wave_failures_total", "Failed waves, by reason.", (*sw, "reason")
        )
        self.last_wave_failure = gauge(
            "tidal_last_wave_failure_timestamp_seconds",
            "When a wave of a switch to the window last failed, by reason (0: never).",
            (*sw, "reason"),
        )
        self.floor_breaches = counter(
            "tidal_floor_breaches_total", "Floor breaches seen while a wave was watched.", sc
        )
        self.floor_min_ready = gauge(
            "tidal_floor_min_ready_replicas",
            "Lowest ready replicas of any workload of the schedule in the cluster, last seen.",
            sc,
        )
        self.floor_required = gauge(
            "tidal_floor_required_replicas", "Ready replicas the floor requires in the cluster.", sc
        )
        self.last_success = gauge(
            "tidal_last_success_timestamp_seconds",
            "When a switch to the window last succeeded (0: never, as far as this replica knows).",
            sw,
        )
        self.next_run = gauge(
            "tidal_next_run_timestamp_seconds",
            "When the window is next due (0: not scheduled).",
            sw,
        )
        self.window_period = gauge(
            "tidal_window_period_seconds", "How often the window comes round.", sw
        )
        self.switches_refused = counter(
            "tidal_switches_refused_total",
            "Window starts whose switch was refused before any write, by reason.",
            (*sw, "reason"),
        )
        self.last_refusal = gauge(
            "tidal_last_switch_refused_timestamp_seconds",
            "When a switch to the window was last refused before any write, by reason.",
            (*sw, "reason"),
        )
        self.run_commands = counter(
            "tidal_run_commands_total",
            "Operator commands (pause, resume, abort, promote) a run in flight acted on, by "
            "how they came (api: the daemon's command API; cli: written to the state object).",
            ("schedule", "command", "source"),
        )
        self.command_requests = counter(
            "tidal_command_requests_total",
            "Requests to the daemon's command API, by command and HTTP status code (a standby "
            "counts the ones it forwarded, with the leader's code).",
            ("command", "code"),
        )
        self.windows_missed = counter(
            "tidal_windows_missed_total",
            "Windows not carried out because their start was outside the catch-up window.",
            sw,
        )
        self.schedule_config_valid = gauge(
            "tidal_schedule_config_valid",
            "1 if the schedule file loaded cleanly, else 0.",
            ["file"],
        )
        self.schedules_loaded = gauge("tidal_schedules_loaded", "Schedules currently in force.")
        self.leader = gauge("tidal_leader", "1 on the replica that acts, 0 on standbys.")
        self.kube_api_requests = counter(
            "tidal_kube_api_requests_total",
            "Requests to the Karmada apiserver, by outcome.",
            ["verb", "resource", "code"],
        )
        self.scheduler_job_errors = counter(
            "tidal_scheduler_job_errors_total",
            "APScheduler job problems: errors, missed runs, runs refused at max instances.",
            ["event"],
        )
        self.clock_skew = gauge(
            "tidal_clock_skew_seconds",
            "How far this replica's clock is ahead of the API server's (its Date header).",
        )
        self.clock_skew_max = gauge(
            "tidal_clock_skew_max_seconds",
            "The skew beyond which this replica refuses to act (scheduler.maxClockSkewSeconds).",
        )
        for event in SCHEDULER_EVENTS:
            self.scheduler_job_errors.labels(event=event)
        self.state_corrupt_total = counter(
            "tidal_state_corrupt_total",
            "Passes that found a state object of the schedule unreadable.",
            ["schedule"],
        )
        self.switch_worker_errors = counter(
            "tidal_switch_worker_errors_total",
            "Passes of the schedule that ended in an error (retried at the next pass).",
            ["schedule"],
        )
        self.journal_lost_total = counter(
            "tidal_journal_lost_total",
            "Runs whose run-state object vanished while they were unfinished.",
            ["schedule"],
        )
        self.policy_drift = gauge(
            "tidal_policy_drift",
            "Policies of the window in force edited by hand since its run wrote them.",
            ["schedule"],
        )
        self.schedule_info = gauge(
            "tidal_schedule_info",
            "1 per loaded schedule, with the team that owns it (metadata.labels tidal.io/team).",
            ("schedule", "team", "file"),
        )
        self.schedule_blocked = gauge(
            "tidal_schedule_blocked",
            "1 while the schedule cannot act, by reason (state_corrupt).",
            ("schedule", "reason"),
        )
        self.schedules_waiting = gauge(
            "tidal_schedules_waiting",
            "Schedules waiting, by reason: slot (every concurrent switch slot taken) or "
            "capacity (a wave waits for surge room in its destination).",
            ["reason"],
        )
        self.waiting_since = gauge(
            "tidal_schedule_waiting_since_timestamp_seconds",
            "Since when the schedule waits, by reason (0: not waiting).",
            ("schedule", "reason"),
        )
        self.wait_seconds = Histogram(
            "tidal_schedule_wait_seconds",
            "How long a schedule waited for a slot or for capacity, per wait that ended.",
            ["reason"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.capacity_leased = gauge(
            "tidal_capacity_leased",
            "Surge capacity the daemon's waves hold in the cluster now (GPUs and pods as "
            "counts, cpu in cores, memory in bytes).",
            ("cluster", "resource"),
        )
        self.leftovers = gauge(
            "tidal_leftover_objects",
            "Temporary objects tidal wrote whose run is no longer active (surge overrides, "
            "bridge placements, a temporary Lazy), after the last sweep.",
            ("kind", "schedule"),
        )
        self.leftovers_overdue = gauge(
            "tidal_leftover_overdue_objects",
            "Of tidal_leftover_objects, those older than TIDAL_SWEEPER__ALERT_AGE_SECONDS.",
            ("kind", "schedule"),
        )
        self._leftover_series: set[tuple[str, str]] = set()
        for reason in WAIT_REASONS:
            self.schedules_waiting.labels(reason)
            self.wait_seconds.labels(reason)
        self._waiting: dict[tuple[str, str], float] = {}
        self._leased: set[tuple[str, str]] = set()
        self.leader.set(0)
        self.schedules_loaded.set(0)
        self._published_periods: set[tuple[str, str]] = set()
        self._last_success: dict[tuple[str, str], float] = {}

    # --- start-up -----------------------------------------------------------------------------

    def preset(self, schedules: Iterable[Any]) -> None:
        """Create every known label combination at 0 so that alerts never meet a missing series.

        Accepts TidalSchedule / LoadedSchedule objects or `ScheduleLabels`. Values already
        counted are kept: presetting again after a reload only adds what is new.
        """
        for item in schedules:
            labels = item if isinstance(item, ScheduleLabels) else labels_of(item)
            s = labels.name
            for w in labels.windows:
                self._preset_window(labels, w)
            for key in [k for k in self.schedule_info._metrics if k[0] == s]:
                self.schedule_info.remove(*key)
            self.schedule_info.labels(s, labels.team or s, labels.file).set(1)
            self.state_corrupt_total.labels(s)
            self.switch_worker_errors.labels(s)
            self.journal_lost_total.labels(s)
            self.policy_drift.labels(s)
            for blocked in BLOCKED_REASONS:
                self.schedule_blocked.labels(s, blocked)
            for c in labels.clusters:
                self.floor_breaches.labels(s, c)
                self.floor_min_ready.labels(s, c)
                self.floor_required.labels(s, c)

    def _preset_window(self, labels: ScheduleLabels, w: str) -> None:
        """Every series of one window of a schedule, at 0 (its period published once)."""
        s = labels.name
        for result in RUN_RESULTS:
            self.switch_runs.labels(s, w, result)
        for wave_result in WAVE_RESULTS:
            self.waves.labels(s, w, wave_result)
        for reason in WAVE_FAILURE_REASONS:
            self.wave_failures.labels(s, w, reason)
            self.last_wave_failure.labels(s, w, reason)
        for metric in (
            self.switch_duration,
            self.wave_duration,
            self.last_success,
            self.next_run,
            self.windows_missed,
        ):
            metric.labels(s, w)
        for refused in REFUSED_REASONS:
            self.switches_refused.labels(s, w, refused)
        if w in labels.periods or (s, w) not in self._published_periods:
            self.window_period.labels(s, w).set(
                labels.periods.get(w, DEFAULT_WINDOW_PERIOD_SECONDS)
            )

    def forget_schedule(self, name: str) -> None:
        """Drop every series of a schedule that was removed from the schedules directory."""
        # prometheus_client lists a metric's children only through its private `_metrics`.
        for metric in (
            self.switch_runs,
            self.switch_duration,
            self.waves,
            self.wave_duration,
            self.wave_failures,
            self.last_wave_failure,
            self.floor_breaches,
            self.floor_min_ready,
            self.floor_required,
            self.last_success,
            self.next_run,
            self.window_period,
            self.windows_missed,
            self.state_corrupt_total,
            self.schedule_blocked,
            self.switches_refused,
            self.switch_worker_errors,
            self.journal_lost_total,
            self.policy_drift,
            self.schedule_info,
            self.run_commands,
        ):
            for key in [k for k in metric._metrics if k[0] == name]:
                metric.remove(*key)
        self._published_periods = {k for k in self._published_periods if k[0] != name}
        self._last_success = {k: v for k, v in self._last_success.items() if k[0] != name}

    # --- switches -----------------------------------------------------------------------------

    def run_finished(
        self,
        schedule: str,
        window: str,
        result: RunResult,
        duration_seconds: float,
        finished_at: float,
    ) -> None:
        """Count a finished switch; a success also moves the window's last-success time."""
        self.switch_runs.labels(schedule, window, result.metric_label).inc()
        self.switch_duration.labels(schedule, window).observe(max(duration_seconds, 0.0))
        if result is RunResult.SUCCEEDED:
            self.set_last_success(schedule, window, finished_at)

    def wave_finished(
        self,
        schedule: str,
        window: str,
        result: WaveResult,
        duration_seconds: float,
        reason: FailureReason | None = None,
        finished_at: float | None = None,
    ) -> None:
        """Count a finished wave; a failed one is also counted, and timed, under its reason."""
        self.waves.labels(schedule, window, result.metric_label).inc()
        self.wave_duration.labels(schedule, window).observe(max(duration_seconds, 0.0))
        if result.metric_label == WaveResult.FAILED:
            cause = reason or FailureReason.API_ERROR
            self.wave_failures.labels(schedule, window, cause).inc()
            if finished_at is not None:
                self.last_wave_failure.labels(schedule, window, cause).set(finished_at)

    def floor_observed(self, schedule: str, cluster: str, min_ready: int, required: int) -> None:
        """Record the lowest ready replicas seen in a cluster against its floor."""
        self.floor_min_ready.labels(schedule, cluster).set(min_ready)
        self.floor_required.labels(schedule, cluster).set(required)

    def floor_breached(self, schedule: str, cluster: str, min_ready: int, required: int) -> None:
        """Count a floor breach and record how far below the floor it went."""
        self.floor_breaches.labels(schedule, cluster).inc()
        self.floor_observed(schedule, cluster, min_ready, required)

    # --- daemon -------------------------------------------------------------------------------

    def state_corrupt(self, schedule: str) -> None:
        """A pass found a state object of the schedule unreadable: counted, schedule blocked."""
        self.state_corrupt_total.labels(schedule).inc()
        self.schedule_blocked.labels(schedule, "state_corrupt").set(1)

    def switch_worker_error(self, schedule: str) -> None:
        """Count a pass of the schedule that ended in an error."""
        self.switch_worker_errors.labels(schedule).inc()

    def journal_lost(self, schedule: str) -> None:
        """Count an unfinished run whose run-state object was deleted under it."""
        self.journal_lost_total.labels(schedule).inc()

    def set_leftovers(self, counts: Mapping[tuple[str, str], tuple[int, int]]) -> None:
        """(kind, schedule) -> (leftovers, overdue ones) after a sweep; series gone since
        drop to 0."""
        for key in self._leftover_series - set(counts):
            self.leftovers.labels(*key).set(0)
            self.leftovers_overdue.labels(*key).set(0)
        for key, (count, overdue) in counts.items():
            self.leftovers.labels(*key).set(count)
            self.leftovers_overdue.labels(*key).set(overdue)
        self._leftover_series |= set(counts)

    def set_policy_drift(self, schedule: str, policies: int) -> None:
        """How many policies of the window in force were edited since its run wrote them."""
        self.policy_drift.labels(schedule).set(policies)

    def schedule_unblocked(self, schedule: str) -> None:
        """A pass of the schedule went through: nothing blocks it."""
        for reason in BLOCKED_REASONS:
            self.schedule_blocked.labels(schedule, reason).set(0)

    def set_last_success(self, schedule: str, window: str, timestamp: float) -> None:
        """Set when a switch to the window last succeeded."""
        self.last_success.labels(schedule, window).set(timestamp)
        self._last_success[(schedule, window)] = timestamp

    def restore_last_run(self, state: Any) -> None:
        """Publish what a persisted run (a RunState) says, on start-up or a new leader.

        A finished success moves the window's last-success time (never backwards), so a
        restarted or newly elected replica does not report "never" for a window that ran.
        """
        result, finished_at = getattr(state, "result", None), getattr(state, "finished_at", None)
        if result != RunResult.SUCCEEDED or not finished_at:
            return
        try:
            finished = datetime.fromisoformat(str(state.finished_at).replace("Z", "+00:00"))
        except ValueError:
            return
        key = (str(state.schedule), str(state.window))
        if finished.timestamp() > self._last_success.get(key, 0.0):
            self.set_last_success(*key, finished.timestamp())

    def set_next_run(self, schedule: str, window: str, timestamp: float | None) -> None:
        """Publish when the window is next due (None: not scheduled, e.g. suspended)."""
        self.next_run.labels(schedule, window).set(timestamp or 0.0)

    def publish_window_times(self, schedule: str, times: WindowTimes, now: datetime) -> None:
        """Publish each window's next start and current period (call at every resync)."""
        for window, _ in times.starts:
            following = next_start_of(times, window, now)
            self.set_next_run(schedule, window, following.at.timestamp() if following else None)
            period = window_period_seconds(times, window, now)
            if period is not None:
                self.window_period.labels(schedule, window).set(period)
                self._published_periods.add((schedule, window))

    def switch_refused(self, schedule: str, window: str, reason: str, at: float) -> None:
        """Count a window start refused before any write (the alert compares the time with
        the window's last success)."""
        self.switches_refused.labels(schedule, window, reason).inc()
        self.last_refusal.labels(schedule, window, reason).set(at)

    def window_missed(self, schedule: str, window: str) -> None:
        """Count a window whose start fell outside the catch-up window."""
        self.windows_missed.labels(schedule, window).inc()

    def run_command(self, schedule: str, command: str, source: str) -> None:
        """Count an operator's command a run in flight acted on (tidal.daemon.interlude)."""
        self.run_commands.labels(schedule, command, source).inc()

    def command_request(self, command: str, code: int) -> None:
        """Count a request the command API answered (tidal.daemon.command_api)."""
        self.command_requests.labels(command, str(code)).inc()

    def set_clock_skew(self, skew: float, limit: float) -> None:
        """Publish the last measured clock skew and the limit it is held to."""
        self.clock_skew.set(skew)
        self.clock_skew_max.set(limit)

    def config_loaded(self, valid_by_file: Mapping[str, bool], schedules_in_force: int) -> None:
        """Publish the outcome of a (re)load: one series per schedule file, plus the count."""
        for key in list(self.schedule_config_valid._metrics):
            if key[0] not in valid_by_file:
                self.schedule_config_valid.remove(*key)
        for file, valid in valid_by_file.items():
            self.schedule_config_valid.labels(file).set(1 if valid else 0)
        self.schedules_loaded.set(schedules_in_force)

    def set_leader(self, leading: bool) -> None:
        """1 while this replica holds the lease, 0 otherwise."""
        self.leader.set(1 if leading else 0)

    # --- hooks --------------------------------------------------------------------------------

    def on_request(self, verb: str, resource: str, code: int | str) -> None:
        """The KarmadaClient request hook: count one API request by verb, resource and code.

        `code` is the HTTP status, or a short word ("error") when no response came back.
        """
        verb = verb.lower()
        self.kube_api_requests.labels(
            verb if verb in _VERBS else "other", resource, str(code)
        ).inc()

    def set_queue(
        self,
        slots: Mapping[str, datetime],
        capacity: Mapping[str, Any],
        leased: Mapping[str, Mapping[str, float]],
        now: datetime,
    ) -> None:
        """Who waits (for a slot; for capacity: `capacity` maps schedule -> an object with
        `since`), what is leased; a wait that ended is observed in the histogram."""
        waiting = {(name, "slot"): since.timestamp() for name, since in slots.items()}
        waiting.update(
            {(name, "capacity"): wait.since.timestamp() for name, wait in capacity.items()}
        )
        for key, since in self._waiting.items():
            if key not in waiting:
                self.wait_seconds.labels(key[1]).observe(max(0.0, now.timestamp() - since))
                self.waiting_since.labels(*key).set(0)
        for key, since in waiting.items():
            self.waiting_since.labels(*key).set(since)
        self._waiting = waiting
        for reason in WAIT_REASONS:
            self.schedules_waiting.labels(reason).set(sum(1 for _, r in waiting if r == reason))
        now_leased = {
            (c, res): amount for c, amounts in leased.items() for res, amount in amounts.items()
        }
        for key in self._leased - set(now_leased):
            self.capacity_leased.labels(*key).set(0)
        for key, amount in now_leased.items():
            self.capacity_leased.labels(*key).set(amount)
        self._leased = set(now_leased)

    def on_scheduler_event(self, event: Any) -> None:
        """APScheduler listener for job error / missed / max-instances events."""
        from apscheduler.events import (  # local: only the daemon has a scheduler
            EVENT_JOB_ERROR,
            EVENT_JOB_MAX_INSTANCES,
            EVENT_JOB_MISSED,
        )

        code = getattr(event, "code", 0)
        if code == EVENT_JOB_ERROR:
            self.scheduler_job_errors.labels(event="error").inc()
        elif code == EVENT_JOB_MISSED:
            self.scheduler_job_errors.labels(event="missed").inc()
        elif code == EVENT_JOB_MAX_INSTANCES:
            self.scheduler_job_errors.labels(event="max_instances").inc()

    @staticmethod
    def scheduler_event_mask() -> int:
        """The mask to pass to `scheduler.add_listener(metrics.on_scheduler_event, mask)`."""
        from apscheduler.events import (
            EVENT_JOB_ERROR,
            EVENT_JOB_MAX_INSTANCES,
            EVENT_JOB_MISSED,
        )

        return int(EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)

    # --- exposition ---------------------------------------------------------------------------

    def render(self) -> bytes:
        """The text exposition of every metric, as served on /metrics."""
        return generate_latest(self.registry)


class DaemonMetrics(Protocol):
    """What the daemon reports through: Metrics, or NullMetrics when it exports nothing (the
    bodies here, which record nothing, are NullMetrics')."""

    def preset(self, schedules: Iterable[Any]) -> None:
        return None

    def forget_schedule(self, name: str) -> None:
        return None

    def state_corrupt(self, schedule: str) -> None:
        return None

    def switch_worker_error(self, schedule: str) -> None:
        return None

    def journal_lost(self, schedule: str) -> None:
        return None

    def set_policy_drift(self, schedule: str, policies: int) -> None:
        return None

    def set_leftovers(self, counts: Mapping[tuple[str, str], tuple[int, int]]) -> None:
        return None

    def schedule_unblocked(self, schedule: str) -> None:
        return None

    def restore_last_run(self, state: Any) -> None:
        return None

    def publish_window_times(self, schedule: str, times: WindowTimes, now: datetime) -> None:
        return None

    def switch_refused(self, schedule: str, window: str, reason: str, at: float) -> None:
        return None

    def window_missed(self, schedule: str, window: str) -> None:
        return None

    def run_command(self, schedule: str, command: str, source: str) -> None:
        return None

    def command_request(self, command: str, code: int) -> None:
        return None

    def set_clock_skew(self, skew: float, limit: float) -> None:
        return None

    def config_loaded(self, valid_by_file: Mapping[str, bool], schedules_in_force: int) -> None:
        return None

    def set_leader(self, leading: bool) -> None:
        return None

    def on_scheduler_event(self, event: Any) -> None:
        return None

    def set_queue(
        self,
        slots: Mapping[str, datetime],
        capacity: Mapping[str, Any],
        leased: Mapping[str, Mapping[str, float]],
        now: datetime,
    ) -> None:
        return None

    def render(self) -> bytes: ...


class NullMetrics(DaemonMetrics):
    """Metrics that record nothing (a daemon built without an exporter, tests)."""

    def render(self) -> bytes:
        """An empty exposition."""
        return bytes(generate_latest(CollectorRegistry()))
