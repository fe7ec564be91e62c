"""Karmada's shipped thirdparty ResourceInterpreterCustomizations and their test tables, read at
test time from the karmada module in the Go module cache (never copied into this repository),
and run through the emulator's interpreter: one Outcome per table case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidal_sim.controllers.customizations import Customizations, InterpreterError
from tidal_sim.controllers.quantity import QuantityError, parse_quantity
from tidal_sim.topology import load_yaml_documents

MODULE, VERSION = "github.com/karmada-io/karmada", "v1.18.2"
TREE = "pkg/resourceinterpreter/default/thirdparty/resourcecustomizations"
EXCLUDE = "{{EXCLUDE}}"
# upstream operation name -> (the emulator's call, the table's output keys)
RUN = {
    "InterpretReplica": ("replicas", ("replica", "requires")),
    "ReviseReplica": ("revise", ("revised",)),
    "InterpretStatus": ("reflect", ("status",)),
    "AggregateStatus": ("aggregate", ("aggregatedStatus",)),
    "InterpretHealth": ("health", ("healthy",)),
    "Retain": ("retain", ("retained",)),
}


@dataclass(frozen=True)
class Outcome:
    kind: str  # group/version/Kind
    operation: str
    case: str
    agrees: bool | None  # None: not run (operation the emulator does not implement)
    detail: str = ""


def module_dir() -> tuple[Path | None, str]:
    """The karmada module directory, downloaded with `go mod download` if missing; or None and
    why it cannot be reached."""
    go = shutil.which("go")
    cache = os.environ.get("GOMODCACHE")
    if not cache and go:
        cache = subprocess.run(
            [go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    cache = cache or str(Path.home() / "go" / "pkg" / "mod")
    found = Path(cache) / "github.com" / "karmada-io" / f"karmada@{VERSION}"
    if (found / TREE).is_dir():
        return found, ""
    if go is None:
        return (
            None,
            f"{MODULE}@{VERSION} is not in the Go module cache {cache} and no `go` "
            "is installed to download it",
        )
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "go.mod").write_text("module fetch\n\ngo 1.22\n")
        done = subprocess.run(
            [go, "mod", "download", f"{MODULE}@{VERSION}"],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0 or not (found / TREE).is_dir():
        return (
            None,
            f"`go mod download {MODULE}@{VERSION}` failed: "
            f"{(done.stderr or done.stdout).strip()[:300]}",
        )
    return found, ""


def kinds(root: Path) -> list[Path]:
    """Each kind's directory (group/version/Kind) holding customizations.yaml."""
    return sorted(p.parent for p in (root / TREE).rglob("customizations.yaml"))


def kind_name(root: Path, directory: Path) -> str:
    return str(directory.relative_to(root / TREE))


def cases(directory: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted((directory / "testdata").glob("*.yaml")):
        out += [d for d in load_yaml_documents(path.read_text()) if isinstance(d, dict)]
    return out


def run_kind(root: Path, directory: Path) -> list[Outcome]:
    """Every table case of one kind through the emulator's interpreter."""
    customization = load_yaml_documents((directory / "customizations.yaml").read_text())[0]
    custom = Customizations()
    custom.load([customization])
    name = kind_name(root, directory)
    return [_run_case(custom, name, case) for case in cases(directory)]


def _run_case(custom: Customizations, kind: str, case: dict[str, Any]) -> Outcome:
    operation = str(case.get("operation"))
    title = str(case.get("name"))
    if operation not in RUN:
        return Outcome(kind, operation, title, None, "not implemented by the emulator")
    desired, observed = case.get("desiredObj"), case.get("observedObj")
    obj = desired if desired is not None else observed
    try:
        results = _call(custom, RUN[operation][0], obj, case)
    except InterpreterError as exc:
        return Outcome(kind, operation, title, False, f"error: {exc}")
    expected = case.get("output") or {}
    for key, want in expected.items():
        if key not in results:
            return Outcome(kind, operation, title, False, f"no result {key}")
        if not _equal(key, want, results[key]):
            return Outcome(
                kind,
                operation,
                title,
                False,
                f"{key}: expected {json.dumps(want, sort_keys=True)[:300]}, got "
                f"{json.dumps(results[key], sort_keys=True)[:300]}",
            )
    return Outcome(kind, operation, title, True)


def _call(custom: Customizations, call: str, obj: Any, case: dict[str, Any]) -> dict[str, Any]:
    if call == "replicas":
        got = custom.get_replicas(obj)
        return {"replica": got.count, "requires": got.requirements}
    if call == "revise":
        return {"revised": custom.revise_replica(obj, int(case.get("inputReplicas") or 0))}
    if call == "reflect":
        return {"status": custom.reflect_status(obj)}
    if call == "aggregate":
        return {"aggregatedStatus": custom.aggregate_status(obj, case.get("statusItems"))}
    if call == "health":
        return {"healthy": custom.interpret_health(obj)}
    return {"retained": custom.retain(case["desiredObj"], case["observedObj"])}


def _equal(key: str, want: Any, got: Any) -> bool:
    if key == "requires":
        return _same_requirements(want, got)
    return _json(_drop_excluded(want, got)) == _json(_drop_paths(got, _excluded(want)))


def _json(value: Any) -> str:
    return json.dumps(_normal(value), sort_keys=True)


def _normal(value: Any) -> Any:
    """JSON numbers as Go's unstructured holds them: integral floats are integers."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _excluded(want: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Paths (list indexes included) whose expected value is {{EXCLUDE}}."""
    out: set[tuple[str, ...]] = set()
    items = (
        want.items()
        if isinstance(want, dict)
        else enumerate(want)
        if isinstance(want, list)
        else ()
    )
    for k, v in items:
        if v == EXCLUDE:
            out.add((*path, str(k)))
        else:
            out |= _excluded(v, (*path, str(k)))
    return out


def _drop_excluded(want: Any, got: Any) -> Any:
    return _drop_paths(want, _excluded(want))


def _drop_paths(value: Any, paths: set[tuple[str, ...]], path: tuple[str, ...] = ()) -> Any:
    if isinstance(value, dict):
        return {
            k: _drop_paths(v, paths, (*path, k))
            for k, v in value.items()
            if (*path, k) not in paths
        }
    if isinstance(value, list):
        return [
            _drop_paths(v, paths, (*path, str(i)))
            for i, v in enumerate(value)
            if (*path, str(i)) not in paths
        ]
    return value


def _same_requirements(want: Any, got: Any) -> bool:
    """ReplicaRequirements compared as upstream does: quantities by value."""
    want = dict(want or {})
    got = dict(got or {})
    got.pop("namespace", None) if "namespace" not in want else None
    w_req, g_req = want.pop("resourceRequest", {}) or {}, got.pop("resourceRequest", {}) or {}
    try:
        same = {k: parse_quantity(v) for k, v in w_req.items()} == {
            k: parse_quantity(v) for k, v in g_req.items()
        }
    except QuantityError:
        return False
    return same and _json(want) == _json(got)
