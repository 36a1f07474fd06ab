"""What each rank, and each set of ranks, must receive: the data side of every bound."""

from __future__ import annotations

from collections.abc import Iterable

from smtcoll.model import Collective, Topology


def _need(coll: Collective) -> dict[tuple[int, int], frozenset[int]]:
    """(rank, address) -> the contributions the rank must end with there."""
    need: dict[tuple[int, int], set[int]] = {}
    for r, c in coll.post:
        need.setdefault((r, coll.address[c]), set()).add(c)
    return {k: frozenset(v) for k, v in need.items()}


def _start(coll: Collective) -> dict[tuple[int, int], frozenset[int]]:
    start: dict[tuple[int, int], set[int]] = {}
    for r, c in coll.pre:
        start.setdefault((r, coll.address[c]), set()).add(c)
    return {k: frozenset(v) for k, v in start.items()}


def must_receive_all(coll: Collective) -> list[list[int]]:
    """Per rank, the addresses it must receive at least once: it needs a value there that it does
    not start with."""
    start = _start(coll)
    out: list[list[int]] = [[] for _ in range(coll.ranks)]
    for (r, a), need in sorted(_need(coll).items()):
        if start.get((r, a), frozenset()) != need:
            out[r].append(a)
    return out


def must_receive(coll: Collective, rank: int) -> list[int]:
    """The addresses one rank must receive at least once (see `must_receive_all`)."""
    start: dict[int, set[int]] = {}
    need: dict[int, set[int]] = {}
    for c in coll.pre_sets[rank]:
        start.setdefault(coll.address[c], set()).add(c)
    for c in coll.post_sets[rank]:
        need.setdefault(coll.address[c], set()).add(c)
    return sorted(a for a, cs in need.items() if start.get(a, set()) != cs)


def must_enter(coll: Collective, inside: Iterable[int]) -> list[int]:
    """Addresses that must cross into the rank set at least once: some rank inside needs a
    contribution that only ranks outside hold at the start."""
    inside = set(inside)
    held_inside = {c for r, c in coll.pre if r in inside}
    return sorted({coll.address[c] for r, c in coll.post if r in inside and c not in held_inside})


def address_transfers(coll: Collective, topo: Topology) -> int:
    """A lower bound on the address transfers (sends of one address over one link) of every schedule.

    Non-combining: a chunk lacked by n ranks arrives n times, and d times along the path to the farthest
    (d hops from its nearest holder). Combining, for an address whose contributions each start at one
    rank (holders H) and whose needers D each need all of them: |H - {x}| + |D - {x}| for the best x (the
    one-way gossip bound: before the first rank x holds the full sum, every other holder has sent; after,
    every other needer still receives; 2(N-1) for Allreduce). Other addresses: one receive per needer."""
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    if not coll.is_combining:
        total = 0
        dist = topo.distances
        lacking: dict[int, list[int]] = {}
        for r, c in coll.post:
            if r not in holders.get(c, set()):
                lacking.setdefault(c, []).append(r)
        for c, rs in lacking.items():
            far = max(min((dist[h].get(r, 0) for h in holders.get(c, set())), default=0) for r in rs)
            total += max(len(rs), far)
        return total
    contrib: dict[int, set[int]] = {}
    for c, a in enumerate(coll.address):
        contrib.setdefault(a, set()).add(c)
    need: dict[int, dict[int, set[int]]] = {}  # address -> rank -> contributions it must end with
    for r, c in coll.post:
        need.setdefault(coll.address[c], {}).setdefault(r, set()).add(c)
    start: dict[int, dict[int, set[int]]] = {}
    for r, c in coll.pre:
        start.setdefault(coll.address[c], {}).setdefault(r, set()).add(c)
    total = 0
    for a, cs in sorted(contrib.items()):
        at_start = start.get(a, {})
        needers = {r for r, want in need.get(a, {}).items() if at_start.get(r, set()) != want}
        if not needers:
            continue
        full = all(need[a][r] == cs for r in needers)
        single = all(len(holders.get(c, set())) == 1 for c in cs)
        if not full or not single or any(v == cs for v in at_start.values()):
            total += len(needers)  # each lacking needer receives the address at least once
            continue
        h = {next(iter(holders[c])) for c in cs}
        # the best first-complete rank x is in both sets when they meet, else in either
        total += len(h) + len(needers) - (2 if h & needers else 1)
    return total
