"""The emulator's replica division: Webster seats and the dynamic-weight modes.

Deliberately its own code, independent of the planner's (tidal.domain.division), so that a
mistake in one is caught by the other's tests against upstream's worked answers rather than
confirming itself. Behaviour follows karmada-io/karmada:

- pkg/util/helper/webstermethod.go AllocateWebsterSeats: one seat at a time to the party with the
  largest float64 votes/(2*seats+1); on equal priority the party holding fewer seats, then the
  name order picked by pkg/util/helper/binding.go tieBreakerByUID (FNV-32a of the template UID:
  odd means larger names first; no UID means smaller names first).
- pkg/scheduler/core/division_algorithm.go: static weights (no positive weight anywhere means
  weight 1 for every candidate), dynamicScaleUp / dynamicScaleDown / dynamicFreshScale and the
  Aggregated cut-off, failing with "Clusters available replicas N are not enough to schedule.".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_FNV_OFFSET, _FNV_PRIME = 2166136261, 16777619


class NotEnoughReplicas(Exception):
    """The candidates can take fewer replicas than the binding wants (UnschedulableError)."""

    def __init__(self, available: int) -> None:
        super().__init__(f"Clusters available replicas {available} are not enough to schedule.")
        self.available = available


def _larger_names_first(uid: str) -> bool:
    if not uid:
        return False
    digest = _FNV_OFFSET
    for octet in uid.encode("utf-8"):
        digest = ((digest ^ octet) * _FNV_PRIME) % (1 << 32)
    return digest % 2 == 1


def webster_seats(
    seats: int, votes: Mapping[str, int], held: Mapping[str, int] | None = None, uid: str = ""
) -> dict[str, int]:
    """Seats per party after handing out `seats` more; parties only in `held` vote 0."""
    tally = {name: [0, int(count)] for name, count in (held or {}).items()}
    for name, vote in votes.items():
        tally.setdefault(name, [0, 0])[0] = int(vote)
    larger_first = _larger_names_first(uid)

    def beats(a: str, b: str) -> bool:
        pa = float(tally[a][0]) / float(2 * tally[a][1] + 1)
        pb = float(tally[b][0]) / float(2 * tally[b][1] + 1)
        if pa != pb:
            return pa > pb
        if tally[a][1] != tally[b][1]:
            return tally[a][1] < tally[b][1]
        return a > b if larger_first else a < b

    names = list(tally)
    for _ in range(max(0, seats)):
        if not names:
            break
        winner = names[0]
        for name in names[1:]:
            if beats(name, winner):
                winner = name
        tally[winner][1] += 1
    return {name: tally[name][1] for name in sorted(tally)}


def _positive(result: Mapping[str, int]) -> dict[str, int]:
    return {name: count for name, count in result.items() if count > 0}


def divide_static(
    total: int, candidates: Iterable[str], weights: Mapping[str, int], uid: str = ""
) -> dict[str, int]:
    """Divided/Weighted with a staticWeightList, weights already resolved per candidate."""
    names = list(candidates)
    voting = {n: weights[n] for n in names if weights.get(n, 0) > 0} or {n: 1 for n in names}
    return _positive(webster_seats(total, voting, None, uid))


def _desc(pairs: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    # upstream sorts with sort.Sort on <= 12 items: an insertion sort, so equal ones keep order
    return sorted(pairs, key=lambda pair: pair[1], reverse=True)


def divide_dynamic(
    total: int,
    available: list[tuple[str, int]],
    current: Mapping[str, int],
    *,
    fresh: bool,
    aggregated: bool,
    uid: str = "",
) -> dict[str, int]:
    """Dynamic weights (AvailableReplicas) or Aggregated; raises NotEnoughReplicas.

    `available`: candidates in the scheduler's order with the replicas each can still take,
    not counting this binding's own. `current`: the binding's spec.clusters.
    """
    names = {name for name, _ in available}
    kept = {name: count for name, count in current.items() if name in names}
    if fresh:
        pool = _desc((name, free + kept.get(name, 0)) for name, free in available)
        return _merge({}, _spread(total, pool, {}, aggregated, uid))
    placed = sum(kept.values())
    if placed > total:
        pool = _desc(list(kept.items()))
        return _merge({}, _spread(total, pool, {}, aggregated, uid))
    if placed == total:
        return _positive(kept)
    pool = _desc(available)
    return _merge(kept, _spread(total - placed, pool, kept, aggregated, uid))


def _spread(
    wanted: int, pool: list[tuple[str, int]], kept: Mapping[str, int], aggregated: bool, uid: str
) -> dict[str, int]:
    offered = sum(count for _, count in pool)
    if offered < wanted:
        raise NotEnoughReplicas(offered)
    if aggregated:
        # resortAvailableClusters: clusters already holding replicas go first
        pool = [p for p in pool if kept.get(p[0], 0) > 0] + [
            p for p in pool if kept.get(p[0], 0) <= 0
        ]
        running, cut = 0, len(pool)
        for index, (_, count) in enumerate(pool):
            running += count
            if running >= wanted:
                cut = index + 1
                break
        pool = pool[:cut]
    if wanted <= 0:
        return {}
    votes = {name: count for name, count in pool if count > 0}
    return _positive(webster_seats(wanted, votes, None, uid)) if votes else {}


def _merge(kept: Mapping[str, int], added: Mapping[str, int]) -> dict[str, int]:
    """util.MergeTargetClusters: newly placed clusters (by name), then the other kept ones."""
    merged = {name: count + kept.get(name, 0) for name, count in added.items()}
    for name in sorted(kept):
        merged.setdefault(name, kept[name])
    return _positive(merged)
