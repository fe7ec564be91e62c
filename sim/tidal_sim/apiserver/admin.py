"""The emulator's own endpoints under /sim/v1 (JSON in and out; not counted as API requests).

GET    /sim/v1/timeline         controllers' samples: [{t, workload "ns/Kind/name", cluster,
                                assigned, ready}, ...] (t: simulated seconds since the epoch);
                                `?since=T` and `?workload=ns/Kind/name` narrow it
GET    /sim/v1/requests         {"total": N, "by": {"<verb> <resource>": n}, "byVerb": {...},
                                "byResource": {...}, "byCode": {"200": n, ...}}
POST   /sim/v1/requests/reset   zero the counts and the log
GET    /sim/v1/requestlog       {"items": [{seq, time, verb, resource, group, namespace, name,
                                code, user_agent, identity}, ...]}; `?since=SEQ` for newer ones
GET    /sim/v1/faults           {"items": [fault, ...]}
POST   /sim/v1/faults           a fault (or a list): {"type": "latency|error|throttle|conflict|
                                drop-watch|stall-watch|truncate|wrong-kind", "verb": "patch",
                                "resource": "resourcebindings",
                                "namespace", "name", "probability": 1.0, "count": null,
                                "seconds": 0.0, "retryAfter": 1, "compact": false} -> 201 + id
DELETE /sim/v1/faults[/ID]      remove all faults, or one
GET    /sim/v1/teamcapacity     the team estimator: {"items": [{name, cluster, replicas,
                                overridden}, ...]}
POST   /sim/v1/teamcapacity     {"name": "team-2001-gpu@cluster-a", "replicas": 0} pins one;
                                "replicas": null follows its time-of-day schedule again
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tidal_sim.apiserver.accounting import RequestAccounting
from tidal_sim.apiserver.errors import ApiError
from tidal_sim.apiserver.request import Request, Response
from tidal_sim.faults import Fault, FaultError, Faults

PREFIX = "/sim/v1/"
# (name, replicas or None) -> state: the emulator's team estimator (None when there is none)
TeamCapacitySetter = Callable[[str, "int | None"], list[dict[str, Any]]]


class AdminApi:
    def __init__(
        self,
        accounting: RequestAccounting,
        faults: Faults,
        timeline: Callable[[], list[dict[str, Any]]],
        team_capacity: tuple[Callable[[], list[dict[str, Any]]], TeamCapacitySetter] | None = None,
    ) -> None:
        self.accounting = accounting
        self.faults = faults
        self.timeline = timeline
        self.team_capacity = team_capacity

    def handle(self, req: Request) -> Response:
        parts = [p for p in req.path[len(PREFIX) :].split("/") if p]
        method = req.method
        if parts[:1] in (["timeline"], ["requests"], ["requestlog"]):
            return self._accounting(method, parts, req)
        if parts[:1] == ["faults"]:
            return self._faults(method, parts[1:], req)
        if parts == ["teamcapacity"] and self.team_capacity is not None:
            return self._team_capacity(method, req)
        raise ApiError(404, f"no such emulator endpoint: {method} {req.path}")

    def _accounting(self, method: str, parts: list[str], req: Request) -> Response:
        """The timeline of ready replicas, and the request counts and log."""
        if parts == ["timeline"] and method == "GET":
            return Response(200, self._timeline(req))
        if parts == ["requests"] and method == "GET":
            return Response(200, self.accounting.snapshot())
        if parts == ["requests", "reset"] and method == "POST":
            self.accounting.reset()
            return Response(200, self.accounting.snapshot())
        if parts == ["requestlog"] and method == "GET":
            since = req.int_param("since") or 0
            return Response(200, {"items": [r.to_json() for r in self.accounting.log(since)]})
        raise ApiError(404, f"no such emulator endpoint: {method} {req.path}")

    def _team_capacity(self, method: str, req: Request) -> Response:
        assert self.team_capacity is not None
        show, pin = self.team_capacity
        if method == "GET":
            return Response(200, {"items": show()})
        if method != "POST":
            raise ApiError(405, f"{method} /sim/v1/teamcapacity: use GET or POST")
        try:
            data = json.loads(req.body or b"{}")
        except ValueError as exc:
            raise ApiError(400, f"body is not JSON: {exc}") from exc
        replicas = data.get("replicas") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("name"), str)
            or not (
                replicas is None or (isinstance(replicas, int) and not isinstance(replicas, bool))
            )
        ):
            raise ApiError(400, 'write {"name": "<team capacity name>", "replicas": N or null}')
        try:
            return Response(200, {"items": pin(data["name"], replicas)})
        except KeyError as exc:
            raise ApiError(404, str(exc.args[0])) from exc
        except ValueError as exc:
            raise ApiError(400, f"replicas: {exc}") from exc

    def _timeline(self, req: Request) -> list[dict[str, Any]]:
        samples = self.timeline()
        since, workload = req.query.get("since"), req.query.get("workload")
        if since:
            try:
                after = float(since)
            except ValueError as exc:
                raise ApiError(400, f"since={since!r}: expected seconds since the epoch") from exc
            samples = [s for s in samples if float(s.get("t", 0)) >= after]
        if workload:
            samples = [s for s in samples if s.get("workload") == workload]
        return samples

    def _faults(self, method: str, rest: list[str], req: Request) -> Response:
        if method == "GET" and not rest:
            return Response(200, {"items": [f.to_json() for f in self.faults.list()]})
        if method == "POST" and not rest:
            return self._inject(req)
        if method == "DELETE":
            removed = self.faults.clear(rest[0] if rest else None)
            if rest and not removed:
                raise ApiError(404, f"no fault with id {rest[0]!r}")
            return Response(200, {"removed": removed})
        raise ApiError(405, f"{method} is not allowed on /sim/v1/faults")

    def _inject(self, req: Request) -> Response:
        """POST /sim/v1/faults: one fault or a list of them."""
        try:
            data = json.loads(req.body or b"{}")
            specs = data if isinstance(data, list) else [data]
            added = [self.faults.inject(Fault.from_json(spec)) for spec in specs]
        except (ValueError, TypeError, AttributeError) as exc:
            message = str(exc) if isinstance(exc, FaultError) else f"bad fault body: {exc}"
            raise ApiError(400, message) from exc
        body: Any = [f.to_json() for f in added] if isinstance(data, list) else added[0].to_json()
        return Response(201, body)
