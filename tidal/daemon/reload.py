"""The schedules directory, loaded and reloaded: a broken file keeps its last good version.

A Kubernetes ConfigMap volume updates by swapping a `..data` symlink, so the directory (not
the files) is watched, recursively; hidden entries are ignored by the loader. A git-sync
checkout is reached through a link it re-points: the link's parent is watched too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("tidal.daemon.reload")

Loader = Callable[[list[Path]], Any]  # -> tidal.loading.LoadResult


def loader_for(crd_dir: Path | None, client: Any = None) -> Loader:
    """The schedule loader, checking policies against the CRDs in `crd_dir` when given, else
    against the schemas `client`'s apiserver publishes (read once per load)."""

    def load(paths: list[Path]) -> Any:
        from tidal.loading.loader import load_schedules
        from tidal.loading.policies import PolicySchemas

        schemas = PolicySchemas.from_crd_dir(crd_dir)
        if schemas is None and client is not None:
            schemas = _published(client)
        return load_schedules(paths, schemas=schemas)

    return load


def _published(client: Any) -> Any:
    from tidal.karmada.errors import KarmadaError
    from tidal.karmada.schemas import published_schemas
    from tidal.loading.policies import POLICY_KINDS, PolicySchemas

    try:
        schemas = PolicySchemas.from_published(published_schemas(client, POLICY_KINDS))
    except KarmadaError as exc:
        log.warning("policy_schemas_unavailable", reason=str(exc))
        return None
    if schemas is None:
        log.warning(
            "policy_schemas_unavailable",
            reason="the apiserver publishes no OpenAPI v3 policy schemas and no "
            "TIDAL_KARMADA_CRDS is set: policy fields are checked by the "
            "apiserver's dry run only",
        )
    return schemas


@dataclass
class Catalog:
    """The schedules in force (by name) and which files are currently broken."""

    schedules: dict[str, Any] = field(default_factory=dict)  # name -> LoadedSchedule
    broken: dict[str, list[str]] = field(default_factory=dict)  # file -> error lines
    valid_by_file: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class ReloadOutcome:
    added: set[str]
    changed: set[str]
    removed: set[str]
    broken: dict[str, list[str]]


class ScheduleDirectory:
    """Loads the directory; `reload()` merges a new load with the last good versions."""

    def __init__(self, directory: Path, load: Loader | None = None) -> None:
        self.directory = directory
        self.load = load or loader_for(None)
        self.catalog = Catalog()
        self.loaded_once = False
        self._lock = threading.Lock()

    def reload(self) -> ReloadOutcome:
        with self._lock:
            result = self.load([self.directory])
            broken: dict[str, list[str]] = {}
            for err in result.errors:
                broken.setdefault(err.file, []).append(str(err))
            new: dict[str, Any] = {loaded.schedule.name: loaded for loaded in result.schedules}
            # A broken file keeps its last good version (if it had one).
            for name, old in self.catalog.schedules.items():
                if str(old.path) in broken and name not in new:
                    new[name] = old
            outcome = self._outcome(new, broken)
            valid = {str(s.path): True for s in result.schedules}
            valid.update({f: False for f in broken})
            newly_broken = {f: e for f, e in broken.items() if self.catalog.broken.get(f) != e}
            self.catalog = Catalog(new, broken, valid)
            self.loaded_once = True
        for file, lines in newly_broken.items():
            for line in lines:
                log.error(
                    "schedule_invalid",
                    file=file,
                    error=line,
                    kept_last_good=any(str(s.path) == file for s in new.values()),
                )
        for event, names in (
            ("schedule_loaded", outcome.added),
            ("schedule_changed", outcome.changed),
            ("schedule_removed", outcome.removed),
        ):
            for name in sorted(names):
                log.info(event, schedule=name)
        return outcome

    def _outcome(self, new: dict[str, Any], broken: dict[str, list[str]]) -> ReloadOutcome:
        """What a load adds, changes (file digest or schedule) and removes against the last."""
        old = self.catalog.schedules
        changed = {
            n
            for n in set(new) & set(old)
            if getattr(new[n], "digest", None) != getattr(old[n], "digest", None)
            or new[n].schedule != old[n].schedule
        }
        return ReloadOutcome(set(new) - set(old), changed, set(old) - set(new), broken)

    def get(self, name: str) -> Any:
        return self.catalog.schedules.get(name)


def watch_roots(directory: Path) -> list[Path]:
    """The directory, and the parent of the first symbolic link on its path when there is one:
    git-sync publishes each checkout by pointing a link at a new worktree (and removes the old
    one), so the link's parent is where that change is seen."""
    roots = [directory]
    current = Path(directory.anchor) if directory.is_absolute() else Path()
    for part in directory.parts[1:] if directory.is_absolute() else directory.parts:
        current = current / part
        if current.is_symlink():
            roots.append(current.parent)
            break
    return roots


class DirectoryWatcher:
    """Calls `on_change()` after files under the directory change (watchfiles, debounced)."""

    def __init__(
        self, directory: Path, on_change: Callable[[], object], debounce_ms: int = 300
    ) -> None:
        self.directory = directory
        self.on_change = on_change
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tidal-reload", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from watchfiles import watch

        try:
            for _changes in watch(
                *watch_roots(self.directory),
                stop_event=self._stop,
                debounce=self.debounce_ms,
                recursive=True,
                rust_timeout=500,
                yield_on_timeout=False,
            ):
                try:
                    self.on_change()
                except Exception as exc:
                    log.exception("reload_failed", error=str(exc), error_class=type(exc).__name__)
        except Exception as exc:  # e.g. the directory vanished: reported, daemon keeps going
            log.error("watch_failed", directory=str(self.directory), error=str(exc))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
