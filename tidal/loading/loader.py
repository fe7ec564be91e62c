"""Schedule files -> `TidalSchedule` models, or every error located as FILE:LINE:COL.

A broken file never takes the others down: each file is loaded on its own, then cross-file
rules (unique names, one owner per policy) drop the later of two conflicting schedules.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tidal.domain.schedule import KIND, PolicyRef, TidalSchedule
from tidal.loading.errors import LocatedError, YamlProblem
from tidal.loading.locate import dotted, locate, validation_problems
from tidal.loading.policies import (
    POLICY_KINDS,
    PolicySchemas,
    manifest_problems,
    patch_problems,
)
from tidal.loading.yamlfile import YamlDocument, read_yaml_file

SCHEDULE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadedSchedule:
    path: Path
    schedule: TidalSchedule
    digest: str = ""  # sha256 over the file and its swap manifests: changes when either does
    # positions of every policy reference, for cross-file errors
    policy_locations: dict[PolicyRef, tuple[int, int]] = field(
        default_factory=dict, repr=False, compare=False
    )


@dataclass
class LoadResult:
    schedules: list[LoadedSchedule] = field(default_factory=list)
    errors: list[LocatedError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def by_name(self, name: str) -> LoadedSchedule | None:
        return next((s for s in self.schedules if s.schedule.name == name), None)


def collect_files(
    paths: Iterable[Path | str],
) -> tuple[list[tuple[Path, bool]], list[LocatedError]]:
    """Schedule candidates as (path, named explicitly); directories are searched recursively.

    Hidden entries are skipped (a ConfigMap volume keeps its real files under `..data`).
    """
    found: list[tuple[Path, bool]] = []
    errors: list[LocatedError] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                relative = candidate.relative_to(path).parts
                if any(part.startswith(".") for part in relative):
                    continue
                if candidate.suffix in SCHEDULE_SUFFIXES and candidate.is_file():
                    found.append((candidate, False))
        elif path.exists():
            found.append((path, True))
        else:
            errors.append(
                LocatedError(str(path), 1, 1, "no such file or directory; check the path")
            )
    unique: dict[Path, tuple[Path, bool]] = {}
    for path, explicit in found:
        key = path.absolute()
        unique[key] = (path, explicit or unique.get(key, (path, False))[1])
    return list(unique.values()), errors


def load_schedules(
    paths: Iterable[Path | str],
    *,
    crd_dir: Path | None = None,
    schemas: PolicySchemas | None = None,
) -> LoadResult:
    """Load every schedule under `paths`; invalid files appear only in `errors`. Policy patches
    and manifests are checked against `schemas`, else the CRD schemas in `crd_dir`, when
    given."""
    files, errors = collect_files(paths)
    result = LoadResult(errors=list(errors))
    schemas = schemas or PolicySchemas.from_crd_dir(crd_dir)
    for path, explicit in files:
        loaded, file_errors = load_schedule_file(path, schemas=schemas, only_schedules=not explicit)
        result.errors += file_errors
        if loaded is not None and not file_errors:
            result.schedules.append(loaded)
    _cross_file_checks(result)
    result.errors = sorted(set(result.errors), key=lambda e: (e.file, e.line, e.col, e.message))
    return result


def load_schedule_file(
    path: Path,
    *,
    schemas: PolicySchemas | None = None,
    only_schedules: bool = False,
) -> tuple[LoadedSchedule | None, list[LocatedError]]:
    """One file. With only_schedules, documents of other API groups are skipped silently."""
    name = str(path)
    try:
        return _load(path, schemas, only_schedules)
    except YamlProblem as problem:
        return None, [LocatedError(name, problem.line, problem.col, problem.message)]
    except Exception as exc:  # last line of defence: never a traceback for a user's file
        return None, [
            LocatedError(
                name,
                1,
                1,
                f"internal error while loading ({type(exc).__name__}: {exc}); please report",
            )
        ]


def _load(
    path: Path,
    schemas: PolicySchemas | None,
    only_schedules: bool,
) -> tuple[LoadedSchedule | None, list[LocatedError]]:
    name = str(path)
    document = read_yaml_file(path)
    data = document.data
    if _is_other_document(data):
        if only_schedules:
            return None, []
        (line, col), _ = locate(document.tree, ("kind",))
        return None, [
            LocatedError(
                name,
                line,
                col,
                f"kind: a {data['apiVersion']} {data.get('kind')} is not a "
                f"{KIND}; pass schedule files (apiVersion tidal.io/v1alpha1)",
            )
        ]
    if not isinstance(data, dict):
        return None, [
            LocatedError(
                name,
                1,
                1,
                f"the file holds a {type(data).__name__}, "
                f"not a {KIND} mapping; write one TidalSchedule",
            )
        ]
    errors = _patch_errors(name, document, schemas)
    try:
        schedule = TidalSchedule.model_validate(data)
    except ValidationError as exc:
        return None, errors + [
            LocatedError(name, line, col, message)
            for line, col, message in validation_problems(exc, document.tree)
        ]
    digest = hashlib.sha256(path.read_bytes())
    windows = []
    locations: dict[PolicyRef, tuple[int, int]] = {}
    for w_index, window in enumerate(schedule.spec.windows):
        changes = []
        for p_index, change in enumerate(window.policies):
            at: tuple[str | int, ...] = ("spec", "windows", w_index, "policies", p_index)
            if change.patch is not None:
                changes.append(change)
                ref = change.policy_refs()[0]
                locations.setdefault(ref, locate(document.tree, (*at, "name"))[0])
                continue
            assert change.swap is not None
            manifest, manifest_bytes, manifest_errors = _swap_manifest(
                path, document, (*at, "swap", "to"), change.swap.to, change.kind, schemas
            )
            errors += manifest_errors
            if manifest is None:
                changes.append(change)
                continue
            digest.update(manifest_bytes)
            namespace_error = _namespace_conflict(change.namespace, manifest, change.kind)
            if namespace_error:
                errors.append(_error(name, document, (*at, "swap", "to"), namespace_error))
                changes.append(change)
                continue
            if manifest["metadata"]["name"] == change.swap.from_:
                errors.append(
                    _error(
                        name,
                        document,
                        (*at, "swap", "to"),
                        f"the manifest is {change.swap.from_!r} itself: a swap "
                        "deletes `from` and creates `to`; to change one policy, "
                        "use a patch",
                    )
                )
                changes.append(change)
                continue
            swap = change.swap.model_copy(update={"manifest": manifest})
            loaded_change = change.model_copy(update={"swap": swap})
            changes.append(loaded_change)
            refs = loaded_change.policy_refs()
            locations.setdefault(refs[0], locate(document.tree, (*at, "swap", "from"))[0])
            locations.setdefault(refs[-1], locate(document.tree, (*at, "swap", "to"))[0])
        windows.append(window.model_copy(update={"policies": changes}))
    if errors:
        return None, errors
    spec = schedule.spec.model_copy(update={"windows": windows})
    final = schedule.model_copy(update={"spec": spec})
    return LoadedSchedule(path, final, digest.hexdigest(), locations), []


def _patch_errors(
    name: str,
    document: YamlDocument,
    schemas: PolicySchemas | None,
) -> list[LocatedError]:
    """Merge patches checked against the policy CRD, even when the rest of the file is invalid."""
    errors: list[LocatedError] = []
    spec = document.data.get("spec")
    windows = spec.get("windows") if isinstance(spec, dict) else None
    for w_index, window in enumerate(windows if isinstance(windows, list) else []):
        policies = window.get("policies") if isinstance(window, dict) else None
        for p_index, change in enumerate(policies if isinstance(policies, list) else []):
            if not isinstance(change, dict) or change.get("kind") not in POLICY_KINDS:
                continue
            patch = change.get("patch")
            if isinstance(patch, dict) and patch:
                at = ("spec", "windows", w_index, "policies", p_index, "patch")
                for sub, message in patch_problems(patch, change["kind"], schemas):
                    errors.append(_error(name, document, (*at, *sub), message))
    return errors


def _is_other_document(data: Any) -> bool:
    """A manifest of another API group (e.g. a swap target beside the schedules)."""
    if not isinstance(data, dict):
        return False
    api_version = data.get("apiVersion")
    return (
        isinstance(api_version, str)
        and not api_version.startswith("tidal.io/")
        and data.get("kind") != KIND
    )


def _namespace_conflict(namespace: str | None, manifest: dict[str, Any], kind: str) -> str | None:
    if kind != "PropagationPolicy":
        return None
    in_manifest = manifest.get("metadata", {}).get("namespace")
    if namespace is None and in_manifest is None:
        return (
            "a PropagationPolicy needs a namespace; set metadata.namespace in the manifest "
            "or namespace in the schedule"
        )
    if namespace is not None and in_manifest is not None and namespace != in_manifest:
        return (
            f"the manifest's namespace {in_manifest!r} differs from the schedule's "
            f"{namespace!r}; make them the same"
        )
    return None


def _error(
    file: str,
    document: YamlDocument,
    loc: Sequence[str | int],
    message: str,
) -> LocatedError:
    (line, col), found = locate(document.tree, loc)
    return LocatedError(file, line, col, f"{dotted(found)}: {message}")


# How a file of a sub-directory is written as a ConfigMap key (the Helm chart's convention).
CONFIGMAP_DIR_SEPARATOR = "__"


def _swap_manifest(
    schedule_path: Path,
    document: YamlDocument,
    to_loc: tuple[str | int, ...],
    to: str,
    kind: str,
    schemas: PolicySchemas | None,
) -> tuple[dict[str, Any] | None, bytes, list[LocatedError]]:
    name = str(schedule_path)
    base = schedule_path.parent
    target = base / to
    flat = base / to.replace("/", CONFIGMAP_DIR_SEPARATOR)
    if not target.exists() and "/" in to and flat.is_file():
        target = flat  # a ConfigMap key cannot hold '/': policies/day.yaml is policies__day.yaml
    try:
        inside = target.resolve().is_relative_to(base.resolve())
    except (OSError, RuntimeError):  # symlink loops
        inside = False
    where = None
    if not inside:
        where = (
            "resolves outside the schedule's directory (a symlink?); keep the real file inside it"
        )
    elif not target.is_file():
        where = f"not found at {target}; create it or fix the path"
    if where is not None:
        return None, b"", [_error(name, document, to_loc, f"swap manifest {to!r} {where}")]
    try:
        manifest_doc = read_yaml_file(target)
    except YamlProblem as problem:
        return None, b"", [LocatedError(str(target), problem.line, problem.col, problem.message)]
    problems = manifest_problems(manifest_doc.data, kind, schemas)
    if problems:
        return (
            None,
            b"",
            [
                _error(
                    str(target),
                    manifest_doc,
                    loc,
                    f"{message} (swapped in by {schedule_path.name})",
                )
                for loc, message in problems
            ],
        )
    return manifest_doc.data, target.read_bytes(), []


def _cross_file_checks(result: LoadResult) -> None:
    """Names unique across files; each policy managed by one schedule (the first file wins)."""
    names: dict[str, LoadedSchedule] = {}
    owners: dict[PolicyRef, LoadedSchedule] = {}
    kept: list[LoadedSchedule] = []
    for loaded in sorted(result.schedules, key=lambda s: str(s.path)):
        schedule = loaded.schedule
        first = names.get(schedule.name)
        if first is not None:
            line, col = _name_position(loaded)
            result.errors.append(
                LocatedError(
                    str(loaded.path),
                    line,
                    col,
                    f"metadata.name: schedule name {schedule.name!r} is already used by "
                    f"{first.path}; give each schedule its own name",
                )
            )
            continue
        conflicts = []
        for ref in sorted(schedule.policy_refs(), key=str):
            owner = owners.get(ref)
            if owner is not None:
                line, col = loaded.policy_locations.get(ref, (1, 1))
                conflicts.append(
                    LocatedError(
                        str(loaded.path),
                        line,
                        col,
                        f"{ref} is already managed by schedule {owner.schedule.name!r} "
                        f"({owner.path}); a policy belongs to one schedule",
                    )
                )
        if conflicts:
            result.errors += conflicts
            continue
        names[schedule.name] = loaded
        for ref in schedule.policy_refs():
            owners[ref] = loaded
        kept.append(loaded)
    result.schedules = kept


def _name_position(loaded: LoadedSchedule) -> tuple[int, int]:
    try:
        document = read_yaml_file(loaded.path)
    except YamlProblem:
        return 1, 1
    return locate(document.tree, ("metadata", "name"))[0]
