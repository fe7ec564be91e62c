"""KarmadaClient: the one path every API request takes.

Built on the official client's ApiClient (kubeconfig, auth, TLS), it sends JSON requests to
resource paths, translates every failure into tidal.karmada.errors (chained with `from`),
retries the retryable ones with tenacity (honouring Retry-After), and reports each HTTP
attempt to an optional hook `on_request(verb, resource, code)` (code 0: no answer).

With a RateLimiter (`from_settings` makes one from TIDAL_API__QPS and __BURST) every attempt
waits for its token first; a 429's Retry-After is honoured on top of it.

Acting writes (every write but Leases, Events and Namespaces) pass an optional WriteGate: each
attempt, the first and every retry, is sent only while the gate's Lease is held, with a timeout
that ends before the Lease could pass to another replica; a retry delay (Retry-After) longer
than what is left gives the write up and steps the holder down (LeaseLost).
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson
import tenacity

from tidal.domain.karmada_release import LATEST_RELEASE, KarmadaRelease
from tidal.karmada.errors import (
    BadResponse,
    Conflict,
    KarmadaError,
    LeaseLost,
    NotFound,
    Throttled,
    error_for_status,
    translate,
)
from tidal.karmada.objects import Obj as Obj
from tidal.karmada.ratelimit import RateLimiter
from tidal.settings import KubeconfigSources

if TYPE_CHECKING:
    from tidal.settings import Settings

T = TypeVar("T")
MERGE_PATCH = "application/merge-patch+json"  # the content type of every merge patch
STRICT = {"fieldValidation": "Strict"}  # acting writes: an unknown field is an error, not pruned
_NO_SOURCES = KubeconfigSources()  # no variables read: ~/.kube/config only
RequestHook = Callable[[str, str, int], None]


@dataclass(frozen=True)
class Resource:
    """A REST resource: where objects of one kind live."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool) -> Resource:
    return Resource(group, version, plural, kind, namespaced)


PROPAGATION_POLICIES = _r(
    "policy.karmada.io", "v1alpha1", "propagationpolicies", "PropagationPolicy", True
)
CLUSTER_PROPAGATION_POLICIES = _r(
    "policy.karmada.io", "v1alpha1", "clusterpropagationpolicies", "ClusterPropagationPolicy", False
)
OVERRIDE_POLICIES = _r("policy.karmada.io", "v1alpha1", "overridepolicies", "OverridePolicy", True)
CLUSTER_OVERRIDE_POLICIES = _r(
    "policy.karmada.io", "v1alpha1", "clusteroverridepolicies", "ClusterOverridePolicy", False
)
RESOURCE_BINDINGS = _r("work.karmada.io", "v1alpha2", "resourcebindings", "ResourceBinding", True)
CLUSTER_RESOURCE_BINDINGS = _r(
    "work.karmada.io", "v1alpha2", "clusterresourcebindings", "ClusterResourceBinding", False
)
WORKLOAD_REBALANCERS = _r(
    "apps.karmada.io", "v1alpha1", "workloadrebalancers", "WorkloadRebalancer", False
)
CLUSTERS = _r("cluster.karmada.io", "v1alpha1", "clusters", "Cluster", False)

KNOWN: tuple[Resource, ...] = (
    PROPAGATION_POLICIES,
    CLUSTER_PROPAGATION_POLICIES,
    OVERRIDE_POLICIES,
    CLUSTER_OVERRIDE_POLICIES,
    RESOURCE_BINDINGS,
    CLUSTER_RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
    CLUSTERS,
    _r("apps", "v1", "deployments", "Deployment", True),
    _r("apps", "v1", "statefulsets", "StatefulSet", True),
    _r("apps", "v1", "daemonsets", "DaemonSet", True),
    _r("batch", "v1", "jobs", "Job", True),
    _r("", "v1", "configmaps", "ConfigMap", True),
    _r("", "v1", "secrets", "Secret", True),
    _r("", "v1", "services", "Service", True),
    _r("", "v1", "namespaces", "Namespace", False),
    _r("", "v1", "events", "Event", True),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
)


class WriteGate(Protocol):
    """The Lease an acting write depends on."""

    def seconds_left(self) -> float:
        """How long this process may still act (<= 0: not at all)."""
        ...

    def give_up(self, reason: str) -> None:
        """Stop acting now (step down), for `reason`."""
        ...


# Writes that are not acting on the control plane: the Lease itself, Events, the namespace
UNGATED_RESOURCES = frozenset({"leases", "events", "namespaces"})
# Never queued behind the switches' requests by the rate limit: a renewal that waits for its
# turn past the renew deadline would lose the Lease (client-go's leader election has its own
# client for the same reason)
UNLIMITED_RESOURCES = frozenset({"leases"})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one request is retried when the error is retryable."""

    attempts: int = 6
    base_delay: float = 0.05
    max_delay: float = 2.0
    max_retry_after: float = 30.0


def _client_from_file(path: str | Path, context: str | None, configuration: Any) -> Any:
    """The kubernetes ApiClient of a kubeconfig file; a one-line KarmadaError for a file
    that cannot be read, parsed or used."""
    import yaml
    from kubernetes import config

    try:
        return config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(path) if path else None,
            context=context,
            persist_config=False,
            client_configuration=configuration,
        )
    except config.ConfigException as exc:
        raise KarmadaError(f"cannot load kubeconfig {path or '(default)'}: {exc}") from exc
    except yaml.YAMLError as exc:  # the client parses the file with PyYAML
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise KarmadaError(
            f"kubeconfig {path or '(default)'} is not valid YAML{at}: "
            f"{getattr(exc, 'problem', None) or exc}"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise KarmadaError(
            f"cannot read kubeconfig {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from exc
    except (TypeError, AttributeError, KeyError, ValueError) as exc:  # odd shapes
        raise KarmadaError(
            f"kubeconfig {path or '(default)'} is not a kubeconfig "
            f"(apiVersion v1, kind Config): {exc!r}"
        ) from exc


class KarmadaClient:
    """A thin, error-translating, retrying JSON client for the Karmada apiserver."""

    def __init__(
        self,
        api_client: Any,
        *,
        on_request: RequestHook | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        request_timeout: float = 30.0,
        write_gate: WriteGate | None = None,
        karmada_release: KarmadaRelease = LATEST_RELEASE,
        limiter: RateLimiter | None = None,
        background_watch: bool = True,
    ) -> None:
        self.api = api_client
        # a watch may be read by a thread of its own (False: an in-process API whose watches
        # move a manual clock, read only by the caller's thread)
        self.background_watch = background_watch
        # the release the control plane runs: the API does not tell it, so a setting says it
        self.karmada_release = karmada_release
        self.limiter = limiter
        self.write_gate = write_gate
        self._server_offset: float | None = None  # the server's Date minus our wall clock
        self.on_request = on_request
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.request_timeout = request_timeout
        self._resources: dict[tuple[str, str], Resource] = {
            (r.api_version, r.kind): r for r in KNOWN
        }
        self._lock = threading.Lock()
        self._local = threading.local()  # per thread: whether a caller retries (single_attempt)

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_kubeconfig(
        cls,
        path: str | Path | None,
        context: str | None = None,
        *,
        sources: KubeconfigSources | None = None,
        **kw: Any,
    ) -> KarmadaClient:
        """A client from the kubeconfig at `path`; with no path, from the first of `sources`
        (the settings' KUBECONFIG, in-cluster, ~/.kube/config) that is there."""
        from kubernetes import client as k8s
        from kubernetes import config

        configuration = k8s.Configuration()
        configuration.retries = False  # one retry policy only: ours (tenacity)
        if path is None:
            found = cls._standard_kubeconfig(sources or _NO_SOURCES)
            if found is None:  # in a pod: its service account
                config.load_incluster_config(  # type: ignore[no-untyped-call]
                    client_configuration=configuration
                )
                return cls(k8s.ApiClient(configuration), **kw)
            path = found
        if path and not Path(path).is_file():
            raise KarmadaError(f"kubeconfig {path} does not exist or is not a file")
        return cls(_client_from_file(path, context, configuration), **kw)

    @staticmethod
    def _standard_kubeconfig(sources: KubeconfigSources) -> Path | None:
        """kubectl's order: $KUBECONFIG (its first file; when set, nothing else is looked at),
        in-cluster config (None), then ~/.kube/config; a KarmadaError naming everything tried
        when none is there."""
        tried = []
        for candidate in sources.listed:
            if Path(candidate).expanduser().is_file():
                return Path(candidate).expanduser()
        if sources.listed:  # as kubectl: a set KUBECONFIG is the only place looked at
            raise KarmadaError(
                f"no kubeconfig found: KUBECONFIG={os.pathsep.join(sources.listed)}"
                " names no existing file; fix or unset KUBECONFIG"
            )
        tried.append("KUBECONFIG (not set)")
        if sources.in_cluster:
            return None
        tried.append("in-cluster config (not in a pod: KUBERNETES_SERVICE_HOST not set)")
        home = sources.home_config.expanduser()
        if home.is_file():
            return home
        tried.append(f"{home} (no such file)")
        raise KarmadaError("no kubeconfig found; tried " + ", ".join(tried))

    @classmethod
    def from_settings(cls, settings: Settings, **kw: Any) -> KarmadaClient:
        """A client for the settings' kubeconfig, rate-limited as they say."""
        kw.setdefault("limiter", RateLimiter(settings.api.qps, settings.api.burst))
        kw.setdefault("karmada_release", settings.karmada.version)
        return cls.from_kubeconfig(
            settings.kubeconfig, settings.context, sources=settings.kubeconfig_sources(), **kw
        )

    def close(self) -> None:
        close = getattr(self.api, "close", None)
        if close is not None:
            close()

    # the one call path --------------------------------------------------------------------
    def _report(self, verb: str, resource: str, code: int) -> None:
        if self.on_request is not None:
            with contextlib.suppress(Exception):  # a metrics hook must never break a request
                self.on_request(verb, resource, code)

    def clock_offset(self) -> float | None:
        """How far our wall clock is ahead of the API server's (its `Date` header, last
        answer; second resolution), in seconds; None before any answer carried a Date."""
        offset = self._server_offset
        return None if offset is None else -offset

    def _observe_date(self, headers: Any) -> None:
        value = headers.get("Date") if hasattr(headers, "get") else None
        if not value:
            return
        try:
            server = email.utils.parsedate_to_datetime(str(value)).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return  # an unreadable Date tells nothing
        # the server stamps the second it answered in (truncated): on average half a second
        # before now; counted so that an exact clock reads as an offset near zero
        self._server_offset = server + 0.5 - time.time()

    def gate_writes(self, gate: WriteGate | None) -> None:
        """From now on, acting writes depend on `gate` (None: on nothing)."""
        self.write_gate = gate

    @contextlib.contextmanager
    def single_attempt(self) -> Iterator[None]:
        """Within the block (this thread), each request is sent once: its caller retries,
        with a budget of its own (tidal.engine.patience), so a long Retry-After is waited out
        there, the lock renewed meanwhile, instead of giving a gated write up."""
        before = getattr(self._local, "single", False)
        self._local.single = True
        try:
            yield
        finally:
            self._local.single = before

    def _delay(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Throttled) and exc.retry_after is not None:
            return min(exc.retry_after, self.retry.max_retry_after)
        backoff = self.retry.base_delay * (2 ** (state.attempt_number - 1))
        return float(min(backoff, self.retry.max_delay))

    def _seconds_left(self, gate: WriteGate, verb: str, resource: str) -> float:
        """Time left to send an acting write; LeaseLost when there is none."""
        left = gate.seconds_left()
        if left <= 0:
            raise LeaseLost("this process does not hold its Lease", verb=verb, resource=resource)
        return left

    def _gated_wait(
        self, gate: WriteGate, verb: str, resource: str
    ) -> Callable[[tenacity.RetryCallState], float]:
        """The retry delay, unless the retry would land after the Lease may have passed on:
        then the write is given up and the holder steps down."""

        def wait(state: tenacity.RetryCallState) -> float:
            delay = self._delay(state)
            left = gate.seconds_left()
            if delay >= left:
                why = f"a retry in {delay:g}s would outlive the Lease ({max(left, 0.0):.1f}s left)"
                gate.give_up(f"{verb} {resource}: {why}")
                cause = state.outcome.exception() if state.outcome else None
                raise LeaseLost(
                    why + "; gave the write up and stepped down", verb=verb, resource=resource
                ) from cause
            return delay

        return wait

    def call(
        self, verb: str, resource: str, fn: Callable[[], T], *, retry_conflict: bool = False
    ) -> T:
        """Run `fn` (one API request) with translation, retries and the request hook.

        `retry_conflict`: a 409 may be retried blindly (a write with no resourceVersion)."""
        return self._call(verb, resource, fn, retry_conflict, report_success=True)

    def _call(
        self,
        verb: str,
        resource: str,
        fn: Callable[[], T],
        retry_conflict: bool,
        report_success: bool,
        gate: WriteGate | None = None,
    ) -> T:
        def once() -> T:
            if self.limiter is not None and resource not in UNLIMITED_RESOURCES:
                self.limiter.wait()  # every attempt, as client-go
            try:
                result = fn()
            except KarmadaError as exc:
                self._report(verb, resource, exc.code)
                exc.verb, exc.resource = exc.verb or verb, exc.resource or resource
                raise
            except LeaseLost:
                raise
            except Exception as exc:
                err = translate(exc, verb=verb, resource=resource)
                self._report(verb, resource, err.code)
                raise err from exc
            if report_success:
                self._report(verb, resource, 200)
            return result

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, Conflict) and retry_conflict and type(exc) is Conflict:
                return True
            return isinstance(exc, KarmadaError) and exc.retryable

        if getattr(self._local, "single", False):  # its caller retries (single_attempt)
            return once()
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(retryable),
            stop=tenacity.stop_after_attempt(self.retry.attempts),
            wait=self._gated_wait(gate, verb, resource) if gate is not None else self._delay,
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(once)

    def request(
        self,
        verb: str,
        resource: Resource,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry_conflict: bool = False,
    ) -> Obj:
        """One JSON request; the decoded object, or a KarmadaError (or LeaseLost: an acting
        write this process may no longer send)."""
        gate = (
            self.write_gate
            if method != "GET" and resource.plural not in UNGATED_RESOURCES
            else None
        )

        def send() -> Obj:
            timeout = self.request_timeout
            if gate is not None:  # an answer later than this is no answer: the Lease may pass
                timeout = min(timeout, self._seconds_left(gate, verb, resource.plural))
            response = self._send(method, path, query, body, content_type, timeout)
            data = response.read()
            code = int(response.status)
            self._observe_date(getattr(response, "headers", None))
            if code >= 400:
                raise error_for_status(
                    code, data, response.headers, verb=verb, resource=resource.plural
                )
            self._report(verb, resource.plural, code)
            return _expect_kind(_decode(data, verb, resource.plural, code), resource, verb, code)

        return self._call(
            verb, resource.plural, send, retry_conflict, report_success=False, gate=gate
        )

    def find(self, resource: Resource, namespace: str | None, name: str) -> Obj | None:
        """GET one object; None when it does not exist."""
        try:
            return self.request("get", resource, "GET", resource.path(namespace, name))
        except NotFound:
            return None

    def replace(self, resource: Resource, obj: Obj) -> Obj:
        """PUT the object back whole (update); its metadata.resourceVersion makes a stale write
        a Conflict, never retried."""
        meta = obj["metadata"]
        return self.request(
            "update",
            resource,
            "PUT",
            resource.path(meta.get("namespace"), meta["name"]),
            body=obj,
            query=STRICT,
        )

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float] | None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        m, url, hdrs, payload, _ = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        return self.api.call_api(m, url, header_params=hdrs, body=payload, _request_timeout=timeout)

    def stream(
        self,
        resource: Resource,
        path: str,
        query: Mapping[str, Any],
        read_timeout: float,
        on_open: Callable[[Callable[[], None]], None] | None = None,
    ) -> Iterator[Obj]:
        """A watch: yields decoded event objects line by line until the server ends it.

        Raises KarmadaError (Gone for 410) for an error answer; a dropped connection ends
        the iteration quietly (the caller resumes from its last resourceVersion). `on_open`
        is handed a function that ends the watch from another thread (a blocked read
        returns at once), once the stream is open."""
        q = dict(query)
        q["watch"] = "true"

        def open_() -> Any:
            response = self._send("GET", path, q, None, "application/json", (5.0, read_timeout))
            code = int(response.status)
            if code >= 400:
                raise error_for_status(
                    code, response.read(), response.headers, verb="watch", resource=resource.plural
                )
            self._report("watch", resource.plural, code)
            return response

        response = self._call("watch", resource.plural, open_, False, report_success=False)
        raw = response.response
        ended = threading.Event()

        def end() -> None:
            ended.set()
            with contextlib.suppress(Exception):  # already closed: nothing to end
                raw.shutdown()

        if on_open is not None:
            on_open(end)
        buffer = b""
        try:
            for chunk in raw.stream(amt=None, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield _watch_event(line, resource.plural)
            # every event ends with a newline: bytes after the last one are an event cut off
            # by a closed connection (seen from a real apiserver), a drop like any other
        except KarmadaError:
            raise
        except Exception:  # dropped or timed out: the caller resumes from its resourceVersion
            return
        finally:
            if ended.is_set() and hasattr(raw, "close"):
                raw.close()  # its socket is shut: never back into the pool
            else:
                raw.release_conn()

    # resources ----------------------------------------------------------------------------
    def resource_for(self, api_version: str, kind: str) -> Resource:
        """The REST resource of a kind: built in, or from the server's discovery (cached)."""
        key = (api_version, kind)
        with self._lock:
            known = self._resources.get(key)
        if known is not None:
            return known
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        meta = Resource(group, version, "", "APIResourceList", False)
        try:
            listing = self.request("get", meta, "GET", path)
        except NotFound as exc:
            raise NotFound(
                f"the server does not serve {api_version}", verb="get", resource=api_version
            ) from exc
        found: Resource | None = None
        with self._lock:
            for entry in listing.get("resources", []):
                name = str(entry.get("name", ""))
                if "/" in name:
                    continue
                res = Resource(
                    group, version, name, str(entry.get("kind")), bool(entry.get("namespaced"))
                )
                self._resources[(api_version, res.kind)] = res
                if res.kind == kind:
                    found = res
        if found is None:
            raise NotFound(
                f"the server does not serve kind {kind} in {api_version}",
                verb="get",
                resource=api_version,
            )
        return found


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _watch_event(line: bytes, resource: str) -> Obj:
    event = _decode(line, "watch", resource, 200)
    if event.get("type") == "ERROR":
        status = event.get("object") or {}
        code = int(status.get("code") or 500) if isinstance(status, dict) else 500
        raise error_for_status(code, json.dumps(status), verb="watch", resource=resource)
    return event


_ALWAYS_ACCEPTED_KINDS = frozenset({"Status", "Scale", "Table"})


def _expect_kind(obj: Obj, resource: Resource, verb: str, code: int) -> Obj:
    """An answer holding another kind than asked for (a misrouting proxy or aggregated API) is
    a bad response, not an empty or odd object to act upon."""
    kind = obj.get("kind")
    if (
        not kind
        or not resource.kind
        or kind in _ALWAYS_ACCEPTED_KINDS
        or kind in (resource.kind, resource.kind + "List")
    ):
        return obj
    raise BadResponse(
        f"expected {resource.kind} from {resource.plural}, got {kind}",
        code=code,
        verb=verb,
        resource=resource.plural,
        retryable=True,
    )


def _decode(data: bytes | str | None, verb: str, resource: str, code: int) -> Obj:
    if not data:
        return {}
    try:
        obj = orjson.loads(data)  # several times faster than json on large list pages
    except ValueError as exc:
        raise BadResponse(
            f"malformed JSON ({len(data)} bytes)",
            code=code,
            verb=verb,
            resource=resource,
            retryable=True,
        ) from exc
    if not isinstance(obj, dict):
        raise BadResponse(
            f"expected a JSON object, got {type(obj).__name__}",
            code=code,
            verb=verb,
            resource=resource,
        )
    return obj
