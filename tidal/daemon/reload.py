"""The schedules directory, loaded and reloaded: a broken file keeps its last good version.

A Kubernetes ConfigMap volume updates by swapping a `..data` symlink, so the directory (not
the files) is watched, recursively; hidden entries are ignored by the loader.
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
        log.warning("policy_schemas_unavailable",
                    reason="the apiserver publishes no OpenAPI v3 policy schemas and no "
                           "TIDAL_KARMADA_CRDS is set: policy fields are checked by the "
                           "apiserver's dry run only")
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
            new: dict[str, Any] = {}
            for loaded in result.schedules:
                new[loaded.schedule.name] = loaded
            # A broken file keeps its last good version (if it had one).
            for name, old in self.catalog.schedules.items():
                if str(old.path) in broken and name not in new:
                    new[name] = old
            old_names = set(self.catalog.schedules)
            added = set(new) - old_names
            removed = old_names - set(new)
            changed = {n for n in set(new) & old_names
                       if getattr(new[n], "digest", None) != getattr(
                           self.catalog.schedules[n], "digest", None)
                       or new[n].schedule != self.catalog.schedules[n].schedule}
            valid = {str(s.path): True for s in result.schedules}
            valid.update({f: False for f in broken})
            newly_broken = {f: e for f, e in broken.items() if self.catalog.broken.get(f) != e}
            self.catalog = Catalog(new, broken, valid)
            self.loaded_once = True
        for file, lines in newly_broken.items():
            for line in lines:
                log.error("schedule_invalid", file=file, error=line,
                          kept_last_good=any(str(s.path) == file for s in new.values()))
        for name in sorted(added):
            log.info("schedule_loaded", schedule=name)
        for name in sorted(changed):
            log.info("schedule_changed", schedule=name)
        for name in sorted(removed):
            log.info("schedule_removed", schedule=name)
        return ReloadOutcome(added, changed, removed, broken)

    def get(self, name: str) -> Any:
        return self.catalog.schedules.get(name)


class DirectoryWatcher:
    """Calls `on_change()` after files under the directory change (watchfiles, debounced)."""

    def __init__(self, directory: Path, on_change: Callable[[], object],
                 debounce_ms: int = 300) -> None:
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
            for _changes in watch(self.directory, stop_event=self._stop,
                                  debounce=self.debounce_ms, recursive=True,
                                  rust_timeout=500, yield_on_timeout=False):
                try:
                    self.on_change()
                except Exception as exc:
                    log.exception("reload_failed", error=str(exc),
                                  error_class=type(exc).__name__)
        except Exception as exc:  # e.g. the directory vanished: reported, daemon keeps going
            log.error("watch_failed", directory=str(self.directory), error=str(exc))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
