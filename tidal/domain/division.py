"""Karmada's replica division, as pure functions: Webster seats and the dynamic-weight modes.

Follows upstream karmada (pkg/util/helper/webstermethod.go, pkg/util/helper/binding.go,
pkg/scheduler/core/division_algorithm.go, assignment.go):

- The Webster (Sainte-Lague) method hands out seats one at a time to the party with the highest
  votes / (2 * seats + 1). Equal priorities go to the party with fewer seats, then by name:
  ascending, or descending when the FNV-32a hash of the template UID is odd (an empty UID means
  ascending). Priorities are compared as float64 quotients, as upstream does.
- Static weights: only clusters with a positive weight take part; if no candidate has one, every
  candidate gets weight 1.
- Dynamic weights (AvailableReplicas) and Aggregated: weights are each candidate's available
  replicas. Fresh mode recomputes everything (a cluster's available replicas include the
  binding's own replicas already there); Steady mode keeps the previous assignment and places
  only the difference (scale down is proportional to the previous assignment).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Literal

AssignmentMode = Literal["Steady", "Fresh"]

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_MAX_INT32 = 2**31 - 1


class Unschedulable(Exception):
    """Total available replicas of the candidate clusters are fewer than the replicas wanted."""

    def __init__(self, available: int) -> None:
        super().__init__(f"Clusters available replicas {available} are not enough to schedule.")
        self.available = available


def estimate_available_replicas(
    allocatable: Mapping[str, int],
    allocated: Mapping[str, int],
    allocating: Mapping[str, int],
    request: Mapping[str, int],
) -> int:
    """Karmada's general estimator: how many more replicas fit in a cluster.

    Amounts are integers (cpu in millicores, the rest in whole units). The pods budget
    (allocatable - allocated - allocating pods) caps the answer; a requested resource the
    cluster does not list, or has none left of, means 0.
    """

    def free(name: str) -> int:
        return allocatable.get(name, 0) - allocated.get(name, 0) - allocating.get(name, 0)

    best = free("pods")
    if best <= 0:
        return 0
    for name, amount in request.items():
        if amount <= 0 or name == "pods":
            continue
        if name not in allocatable or free(name) <= 0:
            return 0
        best = min(best, free(name) // amount)
    return min(best, _MAX_INT32)


def order_candidates(
    names: Sequence[str], available: Mapping[str, int], current: Mapping[str, int]
) -> list[str]:
    """The scheduler's candidate order: clusters the binding already uses first (locality
    score), then by available replicas counting its own (desc), then by name."""
    locality = bool(current)
    return sorted(
        names,
        key=lambda n: (
            -(100 if locality and n in current else 0),
            -(available.get(n, 0) + current.get(n, 0)),
            n,
        ),
    )


def fnv32a(text: str) -> int:
    """The 32-bit FNV-1a hash of the UTF-8 bytes of `text` (Go's hash/fnv New32a)."""
    value = _FNV32_OFFSET
    for byte in text.encode():
        value ^= byte
        value = (value * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def names_descending(tie_uid: str) -> bool:
    """True when ties between equal parties go to the lexicographically LARGER name."""
    return bool(tie_uid) and fnv32a(tie_uid) & 1 == 1


class _Rank(str):
    """A name that sorts in reverse, so a min-heap can prefer larger names."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return str.__gt__(self, other)  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        return str.__lt__(self, other)  # type: ignore[operator]


def webster_allocate(
    seats: int,
    votes: Mapping[str, int],
    initial: Mapping[str, int] | None = None,
    tie_uid: str = "",
) -> dict[str, int]:
    """Add `seats` seats to the parties by the Webster method; every party, sorted by name.

    Parties only in `initial` take part with 0 votes (so they never win a seat while any
    party has votes).
    """
    parties: dict[str, list[int]] = {}  # name -> [votes, seats]
    for name, held in (initial or {}).items():
        parties[name] = [0, int(held)]
    for name, vote in votes.items():
        parties.setdefault(name, [0, 0])[0] = int(vote)
    if not parties:
        return {}
    descending = names_descending(tie_uid)

    def key(name: str) -> tuple[float, int, str]:
        vote, held = parties[name]
        priority = float(vote) / float(2 * held + 1)
        # heapq pops the smallest: negate priority; fewer seats first; then the name order.
        return (-priority, held, _Rank(name) if descending else name)

    heap = [key(name) for name in parties]
    heapq.heapify(heap)
    for _ in range(max(0, seats)):
        _, _, name = heapq.heappop(heap)
        parties[str(name)][1] += 1
        heapq.heappush(heap, key(str(name)))
    return {name: parties[name][1] for name in sorted(parties)}


def webster_divide(total: int, weights: Mapping[str, int], tie_uid: str = "") -> dict[str, int]:
    """Divide `total` replicas by the weights; clusters that get 0 are left out; by name."""
    if sum(max(0, w) for w in weights.values()) == 0:
        return {}
    seats = webster_allocate(total, {n: w for n, w in weights.items() if w > 0}, None, tie_uid)
    return {name: n for name, n in seats.items() if n > 0}


def static_weight_divide(
    total: int,
    candidates: Sequence[str],
    weights: Mapping[str, int],
    tie_uid: str = "",
) -> dict[str, int]:
    """Divided+Weighted with a staticWeightList (weights already resolved per cluster).

    Candidates without a positive weight get nothing; if none has one, all weigh 1.
    """
    chosen = {name: weights.get(name, 0) for name in candidates if weights.get(name, 0) > 0}
    if not chosen:
        chosen = {name: 1 for name in candidates}
    return webster_divide(total, chosen, tie_uid)


def dynamic_divide(
    total: int,
    available: Sequence[tuple[str, int]],
    previous: Mapping[str, int],
    *,
    mode: AssignmentMode,
    aggregated: bool = False,
    tie_uid: str = "",
) -> dict[str, int]:
    """Divided with dynamicWeight AvailableReplicas (or Aggregated); raises Unschedulable.

    `available` lists the candidate clusters in the scheduler's candidate order with the replicas
    each can still take (free capacity / per-replica request, NOT counting this binding's own
    replicas). `previous` is the binding's current assignment (spec.clusters).
    Returns the new assignment without zero entries: newly placed clusters by name first, then
    the remaining previous ones by name.
    """
    candidate_names = {name for name, _ in available}
    scheduled = {n: r for n, r in previous.items() if n in candidate_names}
    assigned = sum(scheduled.values())
    by_replicas_desc = _sorted_desc

    if mode == "Fresh":
        own = dict(scheduled)
        pool = by_replicas_desc([(n, a + own.get(n, 0)) for n, a in available])
        return _divide(total, pool, {}, aggregated, tie_uid)
    if assigned > total:
        pool = by_replicas_desc([(n, r) for n, r in previous.items() if n in scheduled])
        return _divide(total, pool, {}, aggregated, tie_uid)
    if assigned < total:
        pool = by_replicas_desc(list(available))
        return _divide(total - assigned, pool, scheduled, aggregated, tie_uid)
    return {n: r for n, r in scheduled.items() if r > 0}


def _sorted_desc(pool: list[tuple[str, int]]) -> list[tuple[str, int]]:
    # Go's sort.Sort is an insertion sort (stable) for up to 12 elements; Python's is stable.
    return sorted(pool, key=lambda item: -item[1])


def _fewest_clusters(
    target: int, pool: list[tuple[str, int]], scheduled: Mapping[str, int]
) -> list[tuple[str, int]]:
    """Aggregated: the clusters already scheduled first, then the rest, cut where their
    available replicas first reach the target."""
    prior = [item for item in pool if scheduled.get(item[0], 0) > 0]
    rest = [item for item in pool if scheduled.get(item[0], 0) <= 0]
    pool = prior + rest
    running = 0
    for index, (_, replicas) in enumerate(pool):
        running += replicas
        if running >= target:
            return pool[: index + 1]
    return pool


def _divide(
    target: int,
    pool: list[tuple[str, int]],
    scheduled: Mapping[str, int],
    aggregated: bool,
    tie_uid: str,
) -> dict[str, int]:
    total_available = sum(r for _, r in pool)
    if total_available < target:
        raise Unschedulable(total_available)
    if aggregated:
        pool = _fewest_clusters(target, pool, scheduled)
    fresh = webster_divide(target, dict(pool), tie_uid) if target > 0 else {}
    merged: dict[str, int] = {}
    for name, replicas in fresh.items():
        merged[name] = replicas + scheduled.get(name, 0)
    for name in sorted(scheduled):
        if name not in merged:
            merged[name] = scheduled[name]
    return {n: r for n, r in merged.items() if r > 0}
