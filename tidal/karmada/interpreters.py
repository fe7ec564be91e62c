"""What Karmada's interpreter knows of a template kind's replicas, for switching custom kinds.

Karmada learns a custom kind's replicas from a ResourceInterpreterCustomization
(config.karmada.io/v1alpha1): its `replicaResource` script gives the binding's replicas, its
`replicaRevision` script writes each member's share into the object (upstream
pkg/resourceinterpreter/customized/declarative). Customizations of one kind merge in name
order, the first script of each operation winning; a kind with none, and no built-in
interpreter, has no replicas in Karmada's eyes.

A surge override must set the field the revision writes. `replica_paths` finds it by running
the revision script on the template itself (sandboxed Lua, one second at most, as Karmada
runs it) with two probe counts: the fields that carry each probe are the replica fields, as
JSON pointers. That is checked before any write: a script that fails, or that writes no such
field, refuses the switch naming the kind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tidal.karmada.client import KarmadaClient, Resource
from tidal.karmada.errors import NotFound
from tidal.karmada.objects import Obj
from tidal.karmada.paging import list_paged

RIC_API_VERSION = "config.karmada.io/v1alpha1"
RIC_KIND = "ResourceInterpreterCustomization"
RIC_GROUP, RIC_PLURAL = "config.karmada.io", "resourceinterpretercustomizations"
REPLICA_RESOURCE, REPLICA_REVISION = "replicaResource", "replicaRevision"
BUILTIN_REPLICA_KINDS = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
    }
)
DEFAULT_REPLICA_PATHS = ("/spec/replicas",)
_PROBES = (7919, 104729)  # unlikely to be in a template already
_TIMEOUT_SECONDS = 1.0


class ReplicaFieldError(ValueError):
    """The replica field of a kind cannot be found; the message names the kind and the fix."""


@dataclass(frozen=True)
class KindScripts:
    """The merged Lua scripts of one kind, by customization rule (replicaResource, ...)."""

    api_version: str
    kind: str
    scripts: Mapping[str, str] = field(default_factory=dict)

    def has(self, rule: str) -> bool:
        return bool(self.scripts.get(rule))


def is_custom_kind(api_version: str) -> bool:
    """A kind outside Kubernetes' own API groups (core, apps, batch, *.k8s.io)."""
    return is_custom_group(api_version.rpartition("/")[0])


def is_custom_group(group: str) -> bool:
    return "." in group and not group.endswith(".k8s.io")


def list_customizations(client: KarmadaClient) -> dict[tuple[str, str], KindScripts]:
    """Every kind's merged customization scripts; none when the server serves no
    ResourceInterpreterCustomization."""
    res = Resource(RIC_GROUP, "v1alpha1", RIC_PLURAL, RIC_KIND, False)
    try:
        items, _ = list_paged(client, res, None)
    except NotFound:
        return {}
    return merge_customizations(items)


def merge_customizations(items: list[Obj]) -> dict[tuple[str, str], KindScripts]:
    merged: dict[tuple[str, str], dict[str, str]] = {}
    for item in sorted(items, key=lambda o: str((o.get("metadata") or {}).get("name", ""))):
        spec = item.get("spec") or {}
        target = spec.get("target") or {}
        key = (str(target.get("apiVersion", "")), str(target.get("kind", "")))
        scripts = merged.setdefault(key, {})
        for rule, body in (spec.get("customizations") or {}).items():
            script = (body or {}).get("luaScript") if isinstance(body, Mapping) else None
            if script and rule not in scripts:
                scripts[str(rule)] = str(script)
    return {k: KindScripts(k[0], k[1], v) for k, v in merged.items()}


def replica_paths(
    template: Obj, scripts: KindScripts | None, *, timeout: float = _TIMEOUT_SECONDS
) -> tuple[str, ...]:
    """JSON pointers of the fields Karmada's replica revision writes for this template."""
    api_version, kind = str(template.get("apiVersion", "")), str(template.get("kind", ""))
    if scripts is None or not scripts.has(REPLICA_REVISION):
        if (api_version, kind) in BUILTIN_REPLICA_KINDS:
            return DEFAULT_REPLICA_PATHS
        raise ReplicaFieldError(
            f"{kind} ({api_version}): no ResourceInterpreterCustomization gives it a "
            f"{REPLICA_REVISION} script, so Karmada cannot set its member replicas; add one, "
            "or switch it without surge"
        )
    body = {k: v for k, v in template.items() if k != "status"}
    found: set[str] | None = None
    for probe in _PROBES:
        try:
            revised = _revise(scripts.scripts[REPLICA_REVISION], body, probe, timeout)
        except _ScriptError as exc:
            raise ReplicaFieldError(
                f"{kind} ({api_version}): its {REPLICA_REVISION} script "
                f"fails on {_name(template)}: {exc}"
            ) from None
        paths = {path for path, value in _leaves(revised) if value == probe}
        found = paths if found is None else found & paths
    if not found:
        raise ReplicaFieldError(
            f"{kind} ({api_version}): its {REPLICA_REVISION} script writes the replica count "
            f"to no field of {_name(template)}; fix the script, or switch it without surge"
        )
    return tuple(sorted(found))


def _name(template: Obj) -> str:
    meta = template.get("metadata") or {}
    return (
        f"{meta.get('namespace')}/{meta.get('name')}"
        if meta.get("namespace")
        else str(meta.get("name"))
    )


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            yield from _leaves(item, f"{path}/{escaped}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}/{index}")
    else:
        yield path, value


# -- a sandboxed Lua run (the daemon runs customer scripts: no io, os, debug, load) -----------
class _ScriptError(RuntimeError):
    pass


_SANDBOX = """
local sethook = debug.sethook
local function arm(seconds, clock)
  local deadline = clock() + seconds
  sethook(function()
    if clock() > deadline then error("timed out after " .. seconds .. "s") end
  end, "", 1000)
end
local function disarm() sethook() end
debug, io, os, dofile, loadfile, load, loadstring = nil, nil, nil, nil, nil, nil, nil
package.loaded.kube = {}
return arm, disarm
"""
_lock = threading.Lock()


def _revise(script: str, obj: Obj, replicas: int, timeout: float) -> Any:
    from lupa import lua51  # imported on use: only switches of customized kinds need Lua

    with _lock:
        options: dict[str, Any] = {
            "unpack_returned_tuples": False,
            "register_eval": False,
            "register_builtins": False,
        }
        lua: Any = lua51.LuaRuntime(**options)
        sandbox: Any = lua.execute(_SANDBOX)
        arm, disarm = sandbox
        try:
            arm(timeout, time.monotonic)
            try:
                lua.execute(script)
                fn = lua.globals()["ReviseReplica"]
                if lua51.lua_type(fn) != "function":
                    raise _ScriptError("it defines no function ReviseReplica")
                result = fn(_to_lua(lua, obj), replicas)
            finally:
                disarm()
        except (lua51.LuaError, lua51.LuaSyntaxError) as exc:
            raise _ScriptError(str(exc).strip()) from None
        if lua51.lua_type(result) != "table":
            raise _ScriptError("ReviseReplica returned no table")
        return _from_lua(result)


def _to_lua(lua: Any, value: Any) -> Any:
    if isinstance(value, Mapping):
        table = lua.table()
        for key, item in value.items():
            table[key] = _to_lua(lua, item)
        return table
    if isinstance(value, list):
        table = lua.table()
        for index, item in enumerate(value, 1):
            table[index] = _to_lua(lua, item)
        return table
    return value


def _from_lua(value: Any) -> Any:
    from lupa import lua51

    if lua51.lua_type(value) == "table":
        items = dict(value.items())
        if items and sorted(items) == list(range(1, len(items) + 1)):
            return [_from_lua(items[i]) for i in range(1, len(items) + 1)]
        return {str(k): _from_lua(v) for k, v in items.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
