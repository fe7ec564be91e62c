"""The Lua runtime of Karmada's declarative resource interpreter, on `lupa` (Lua 5.1, the
language level of gopher-lua, which karmada runs).

Mirrors pkg/resourceinterpreter/customized/declarative/luavm (lua.go, kube.go,
lua_convert.go) of karmada v1.18.2:
- libraries: package (for `require`), base, table, string, math, and an os reduced to
  `time` and `date`; `collectgarbage dofile getfenv getmetatable load loadfile loadstring
  rawequal rawget rawset setfenv setmetatable module newproxy` are replaced by functions that
  raise "call function X is not supported in karmada customized resourceinterpreter.";
- `require("kube")`: resourceAdd, accuratePodRequirements, getPodDependencies,
  getResourceQuantity;
- each run loads the script, then calls the operation's global function (missing: "not found
  function F"; not a function: "F is not a function: T"), under a one-second budget (upstream:
  a context with a one-second timeout); an error or the timeout fails the operation;
- results cross as JSON does in gopher-json: an empty table is `[]`, a table with keys
  1..n is a list, integral numbers are integers; `[]` fields are turned back into `{}` where a
  reference object (the input) has an empty object there, and dropped where it has neither.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from lupa import lua51

from tidal_sim.controllers.quantity import (
    QuantityError,
    format_list,
    parse_quantity,
    pod_template_requests,
)

TIMEOUT_SECONDS = 1.0
_UNSAFE = (
    "collectgarbage",
    "dofile",
    "getfenv",
    "getmetatable",
    "load",
    "loadfile",
    "loadstring",
    "rawequal",
    "rawget",
    "rawset",
    "setfenv",
    "setmetatable",
    "module",
    "newproxy",
)
# Runs with the debug library still in reach; returns the arm function and drops `debug`.
_PRELUDE = """
local sethook = debug.sethook
local function arm(seconds, clock)
  local deadline = clock() + seconds
  sethook(function()
    if clock() > deadline then error("lua script timed out after " .. seconds .. "s") end
  end, "", 1000)
end
local function disarm() sethook() end
debug = nil
io = nil
local time, date = os.time, os.date
os = {time = time, date = date}
string.dump = nil
return arm, disarm
"""


class LuaError(RuntimeError):
    """A script that does not load, raises, times out, or returns the wrong type."""


class LuaVM:
    """One sandboxed Lua state; runs are serialised (the emulator's controllers share it)."""

    def __init__(self, timeout: float = TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        options: dict[str, Any] = {
            "unpack_returned_tuples": False,
            "register_eval": False,
            "register_builtins": False,
        }
        self._lua: Any = lua51.LuaRuntime(**options)
        prelude: Any = self._lua.execute(_PRELUDE)
        self._arm, self._disarm = prelude
        globals_: Any = self._lua.globals()
        for name in _UNSAFE:
            self._lua.execute(
                f"function {name}() error('call function {name} is not supported in "
                "karmada customized resourceinterpreter.') end"
            )
        preload = globals_.package.preload
        preload["kube"] = self._kube_loader()

    # -- running ------------------------------------------------------------------------
    def run(self, script: str, function: str, nrets: int, *args: Any) -> list[Any]:
        """Load `script`, call its global `function` with `args`; its first `nrets` results
        (Lua values: tables stay Lua tables, read them with `to_python`)."""
        with self._lock:
            try:
                self._arm(self.timeout, time.monotonic)
                try:
                    self._lua.execute(script)
                    fn = self._lua.globals()[function]
                    if fn is None:
                        raise LuaError(f"not found function {function}")
                    if lua51.lua_type(fn) != "function":
                        raise LuaError(f"{function} is not a function: {lua51.lua_type(fn)}")
                    result = fn(*(self.to_lua(a) for a in args))
                finally:
                    self._disarm()
            except lua51.LuaError as exc:
                raise LuaError(str(exc).strip()) from None
            except lua51.LuaSyntaxError as exc:
                raise LuaError(f"script does not load: {str(exc).strip()}") from None
        values = list(result) if isinstance(result, tuple) else [result]
        values += [None] * (nrets - len(values))
        return values[:nrets]

    def to_lua(self, value: Any) -> Any:
        if isinstance(value, dict):
            table = self._lua.table()
            for key, item in value.items():
                table[key] = self.to_lua(item)
            return table
        if isinstance(value, list | tuple):
            table = self._lua.table()
            for index, item in enumerate(value, 1):
                table[index] = self.to_lua(item)
            return table
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float):
            return float(value) if isinstance(value, float) else value
        return str(value)

    # -- the kube library ------------------------------------------------------------
    def _kube_loader(self) -> Any:
        funcs: dict[str, Callable[..., Any]] = {
            "resourceAdd": self._resource_add,
            "accuratePodRequirements": self._accurate_pod_requirements,
            "getPodDependencies": self._pod_dependencies,
            "getResourceQuantity": self._resource_quantity,
        }
        module = self._lua.table_from(funcs)
        make = self._lua.eval("function(m) return function() return m end end")
        return make(module)

    def _resource_add(self, *quantities: Any) -> str:
        total = Decimal(0)
        binary: bool | None = None  # the format of the first non-zero operand (Quantity.Add)
        for q in quantities:
            if q is None:
                continue
            amount = _quantity(q)
            if binary is None and amount:
                binary = str(q).endswith("i")
            total += amount
        return quantity_text(total, binary=bool(binary))

    def _accurate_pod_requirements(self, *args: Any) -> Any:
        if len(args) != 1:
            raise lua51.LuaError("getPodRequirements only accepts one argument")
        template = to_python(args[0])
        if not isinstance(template, dict):
            template = {}
        return self.to_lua(replica_requirements(template))

    def _pod_dependencies(self, *args: Any) -> Any:
        if len(args) != 2:
            raise lua51.LuaError("getPodDependencies only accepts two argument")
        template = to_python(args[0])
        namespace = args[1] if args[1] is not None else "default"
        return self.to_lua(
            pod_dependencies(template if isinstance(template, dict) else {}, str(namespace))
        )

    def _resource_quantity(self, *args: Any) -> float:
        if len(args) != 1:
            raise lua51.LuaError("getResourceQuantity only accepts one argument")
        value = float(_quantity(args[0])) if args[0] is not None else 0.0
        if value < 0:
            raise lua51.LuaError(
                f"int approximation unexpectedly returned a negative value: {args[0]}"
            )
        return value


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise lua51.LuaError(f"quantities must match the regular expression: {exc}") from None


def quantity_text(amount: Decimal, *, binary: bool = False) -> str:
    """resource.Quantity.String() for the two formats scripts add: BinarySI (`Ki`..`Ei` when a
    whole multiple) and DecimalSI (the largest of `k`..`E` that leaves a whole number, else
    `m`, `u`, `n`)."""
    if amount == amount.to_integral_value():
        whole = int(amount)
        suffixes = (
            (
                ("Ei", 2**60),
                ("Pi", 2**50),
                ("Ti", 2**40),
                ("Gi", 2**30),
                ("Mi", 2**20),
                ("Ki", 2**10),
            )
            if binary
            else (
                ("E", 10**18),
                ("P", 10**15),
                ("T", 10**12),
                ("G", 10**9),
                ("M", 10**6),
                ("k", 10**3),
            )
        )
        for suffix, factor in suffixes:
            if whole and whole % factor == 0:
                return f"{whole // factor}{suffix}"
        return str(whole)
    for suffix, factor in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = amount * factor
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return f"{int((amount * 10**9).to_integral_value(rounding='ROUND_CEILING'))}n"


def replica_requirements(template: dict[str, Any]) -> dict[str, Any] | None:
    """helper.GenerateReplicaRequirements: the pod template's node claim and summed requests."""
    spec = template.get("spec") or {}
    claim: dict[str, Any] = {}
    hard = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if hard:
        claim["hardNodeAffinity"] = hard
    if spec.get("nodeSelector"):
        claim["nodeSelector"] = spec["nodeSelector"]
    if spec.get("tolerations"):
        claim["tolerations"] = spec["tolerations"]
    requests = format_list(pod_template_requests(template))
    out: dict[str, Any] = {}
    if claim:
        out["nodeClaim"] = claim
    if requests:
        out["resourceRequest"] = requests
    return out or None


# (field of the source, kind it names, field holding the name) per place a pod names an object
_Refs = tuple[tuple[str, str, str], ...]
_ENV_REFS: _Refs = (("configMapKeyRef", "ConfigMap", "name"), ("secretKeyRef", "Secret", "name"))
_ENV_FROM: _Refs = (("configMapRef", "ConfigMap", "name"), ("secretRef", "Secret", "name"))
_VOLUMES: _Refs = (
    ("configMap", "ConfigMap", "name"),
    ("secret", "Secret", "secretName"),
    ("persistentVolumeClaim", "PersistentVolumeClaim", "claimName"),
)
_PROJECTED: _Refs = (("configMap", "ConfigMap", "name"), ("secret", "Secret", "name"))


def _named(source: dict[str, Any], table: _Refs) -> set[tuple[str, str]]:
    """(kind, name) of each object `source` names by the places in `table`."""
    return {
        (kind, str(name))
        for key, kind, field in table
        if (name := (source.get(key) or {}).get(field))
    }


def _container_refs(spec: dict[str, Any]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for env in container.get("env") or []:
            found |= _named(env.get("valueFrom") or {}, _ENV_REFS)
        for env_from in container.get("envFrom") or []:
            found |= _named(env_from, _ENV_FROM)
    return found


def _volume_refs(spec: dict[str, Any]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for volume in spec.get("volumes") or []:
        found |= _named(volume, _VOLUMES)
        for source in (volume.get("projected") or {}).get("sources") or []:
            found |= _named(source, _PROJECTED)
    return found


def pod_dependencies(template: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    """The ConfigMaps, Secrets, PersistentVolumeClaims and ServiceAccount a pod template names
    (helper.GetDependenciesFromPodTemplate)."""
    spec = template.get("spec") or {}
    found = _container_refs(spec) | _volume_refs(spec)
    found |= {
        ("Secret", str(ref["name"]))
        for ref in spec.get("imagePullSecrets") or []
        if ref.get("name")
    }
    account = spec.get("serviceAccountName")
    if account and account != "default":
        found.add(("ServiceAccount", account))
    return [
        {"apiVersion": "v1", "kind": kind, "namespace": namespace, "name": name}
        for kind, name in sorted(found)
    ]


# -- Lua values back to JSON-like Python ---------------------------------------------------
def to_python(value: Any) -> Any:
    """A Lua value as gopher-json encodes it: tables with keys 1..n (or none) are lists."""
    if lua51.lua_type(value) == "table":
        keys = list(value.keys())
        if all(isinstance(k, int | float) and not isinstance(k, bool) for k in keys) and sorted(
            keys
        ) == list(range(1, len(keys) + 1)):
            return [to_python(value[i]) for i in range(1, len(keys) + 1)]
        if any(not isinstance(k, str) for k in keys):
            raise LuaError("cannot encode mixed or invalid key types")
        return {k: to_python(value[k]) for k in keys}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if lua51.lua_type(value) is not None:
        raise LuaError(f"cannot encode a Lua {lua51.lua_type(value)}")
    return value


def restore_empty(value: Any, references: Sequence[Any]) -> Any:
    """convertEmptySliceToEmptyStructPartly: an empty list where a reference has an empty
    object becomes `{}`, where a reference has an empty list stays, and is dropped otherwise
    (field paths ignore list indexes, as upstream's do)."""
    slices: set[str] = set()
    structs: set[str] = set()
    for ref in references:
        _empty_fields(ref, [], slices, structs)
    return _fix(value, [], slices, structs)


def _empty_fields(value: Any, path: list[str], slices: set[str], structs: set[str]) -> None:
    items = (
        value.items()
        if isinstance(value, dict)
        else ((None, v) for v in value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        here = [*path, key] if key is not None else path
        if isinstance(item, list) and not item:
            slices.add(".".join(here))
        elif isinstance(item, dict) and not item:
            structs.add(".".join(here))
        elif isinstance(item, dict | list):
            _empty_fields(item, here, slices, structs)


def _fix(value: Any, path: list[str], slices: set[str], structs: set[str]) -> Any:
    if isinstance(value, list):
        return [_fix(v, path, slices, structs) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        here = [*path, key]
        dotted = ".".join(here)
        if isinstance(item, list) and not item:
            if dotted in structs:
                out[key] = {}
            elif dotted in slices:
                out[key] = []
            continue
        out[key] = _fix(item, here, slices, structs)
    return out
