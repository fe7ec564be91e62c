"""The benchmark's remote mode, plane side: a Karmada API given only by a kubeconfig (a real
plane from tools.realkarmada, or the emulator served over HTTP), clients whose requests are
counted on the client side (a real plane keeps no request log), objects loaded and removed over
the API, and a sampler of the ResourceBindings (assignment and ready replicas per cluster)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tidal.karmada.bindings import list_bindings
from tidal.karmada.client import CLUSTERS, KarmadaClient, RetryPolicy
from tidal.karmada.errors import AlreadyExists, Conflict, NotFound
from tidal.karmada.views import BindingView

NAMESPACE = "ai-app"
Obj = dict[str, Any]


@dataclass
class RequestCounter:
    """Every HTTP attempt a client sends, by "verb resource" (KarmadaClient's on_request hook,
    or `wrap` around an official ApiClient)."""

    by: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, verb: str, resource: str, code: int) -> None:
        with self._lock:
            self.by[f"{verb} {resource}"] += 1

    @property
    def total(self) -> int:
        return sum(self.by.values())

    def watches(self) -> int:
        return sum(n for key, n in self.by.items() if key.startswith("watch "))

    def wrap(self, api: Any) -> Any:
        """Count each call of an official kubernetes ApiClient (its `call_api`)."""
        send = api.call_api

        def counted(method: str, url: str, *args: Any, **kw: Any) -> Any:
            self(_verb(method, url), _plural(url), 0)
            return send(method, url, *args, **kw)

        api.call_api = counted
        return api


def _verb(method: str, url: str) -> str:
    query = urlparse(url).query
    if method == "GET":
        return "watch" if "watch=true" in query else "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def _plural(url: str) -> str:
    """The resource plural of a request path (/api/v1/..., /apis/g/v/...)."""
    parts = [p for p in urlparse(url).path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    return rest[0] if rest else "-"


class RemotePlane:
    """One Karmada API reached through `kubeconfig`: counted and uncounted clients, setup and
    teardown of the benchmark's objects in namespace ai-app."""

    def __init__(self, kubeconfig: Path, *, patience: float = 180.0) -> None:
        if not kubeconfig.is_file():
            raise FileNotFoundError(
                f"--karmada-kubeconfig {kubeconfig}: no such file; pass the kubeconfig "
                "`python -m tools.realkarmada up --kubeconfig-out FILE` wrote"
            )
        self.kubeconfig = kubeconfig
        self.patience = patience
        self.admin = self.client()

    def client(self, counter: RequestCounter | None = None) -> KarmadaClient:
        return KarmadaClient.from_kubeconfig(
            self.kubeconfig,
            None,
            on_request=counter,
            retry=RetryPolicy(attempts=8, base_delay=0.05, max_delay=0.5, max_retry_after=1.0),
        )

    def kube_api(self) -> Any:
        """An official kubernetes ApiClient (the naive controller's)."""
        from kubernetes import config

        loader: Any = config.new_client_from_config
        return loader(str(self.kubeconfig))

    def close(self) -> None:
        self.admin.close()

    # objects ------------------------------------------------------------------------------
    def apply(self, objs: list[Obj]) -> None:
        """Create each object, or replace it when it exists."""
        for obj in objs:
            res = self.admin.resource_for(obj["apiVersion"], obj["kind"])
            ns = obj["metadata"].get("namespace")
            try:
                self.admin.request("create", res, "POST", res.path(ns), body=obj)
            except (AlreadyExists, Conflict):
                if obj["kind"] == "Namespace":
                    continue
                path = res.path(ns, obj["metadata"]["name"])
                current = self.admin.request("get", res, "GET", path)
                body = {**obj, "metadata": {**obj["metadata"], **_rv(current)}}
                self.admin.request("update", res, "PUT", path, body=body)

    def delete_all(self, kinds: list[tuple[str, str]], label_selector: str | None = None) -> None:
        """Delete every object of these (apiVersion, kind)s in ai-app (or cluster-wide)."""
        for api_version, kind in kinds:
            res = self.admin.resource_for(api_version, kind)
            ns = NAMESPACE if res.namespaced else None
            query = {"labelSelector": label_selector} if label_selector else None
            listed = self.admin.request("list", res, "GET", res.path(ns), query=query)
            for item in listed.get("items") or []:
                try:
                    path = res.path(ns, item["metadata"]["name"])
                    self.admin.request("delete", res, "DELETE", path)
                except NotFound:
                    pass

    def bindings(self) -> dict[str, Obj]:
        """The namespace's ResourceBindings by Deployment name."""
        out: dict[str, Obj] = {}
        for b in list_bindings(self.admin, NAMESPACE)[0]:
            name = ((b.get("spec") or {}).get("resource") or {}).get("name")
            if name:
                out[str(name)] = b
        return out

    def wait(self, ok: Callable[[dict[str, Obj]], bool], what: str, timeout: float = 0) -> None:
        deadline = time.monotonic() + (timeout or self.patience)
        while not ok(self.bindings()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the plane at {self.kubeconfig}: {what} not reached")
            time.sleep(0.25)

    def free_gpus(self, cluster: str) -> int:
        """allocatable - allocated - allocating nvidia.com/gpu, as the Cluster's status says."""
        c = self.admin.request("get", CLUSTERS, "GET", CLUSTERS.path(name=cluster))
        summary = (c.get("status") or {}).get("resourceSummary") or {}

        def gpus(part: str) -> int:
            return int(str((summary.get(part) or {}).get("nvidia.com/gpu", "0")))

        return gpus("allocatable") - gpus("allocated") - gpus("allocating")


def _rv(current: Obj) -> Obj:
    return {"resourceVersion": current["metadata"]["resourceVersion"]}


def split(binding: Obj) -> tuple[dict[str, int], dict[str, int]]:
    """(assigned, ready) per cluster, zeros left out."""
    view = BindingView(binding)
    assigned = {c: n for c, n in view.assignment().items() if n}
    ready = {c: n for c, n in view.ready().items() if n}
    return assigned, ready


@dataclass
class Sampler:
    """Lists the bindings a few times a second (uncounted); `samples` holds (time, splits)."""

    plane: RemotePlane
    interval: float = 0.2
    samples: list[tuple[float, dict[str, tuple[dict[str, int], dict[str, int]]]]] = field(
        default_factory=list
    )

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        stop = threading.Event()
        client = self.plane.client()

        def loop() -> None:
            while not stop.is_set():
                t = time.time()
                try:
                    listed = list_bindings(client, NAMESPACE)[0]
                except Exception:  # a missed read: the next one fills the gap
                    stop.wait(self.interval)
                    continue
                splits = {
                    str(((b.get("spec") or {}).get("resource") or {}).get("name")): split(b)
                    for b in listed
                }
                self.samples.append((t, splits))
                stop.wait(self.interval)

        thread = threading.Thread(target=loop, daemon=True, name="bench-sampler")
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(10)
            client.close()

    def first(self, after: float, ok: Callable[[dict[str, Any]], bool]) -> float | None:
        """The first sample time at or after `after` whose splits satisfy `ok`."""
        for t, splits in self.samples:
            if t >= after and ok(splits):
                return t
        return None
