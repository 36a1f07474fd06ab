"""What each rank, and each set of ranks, must receive: the data side of every bound."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from smtcoll.errors import ModelError
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


def address_transfers(coll: Collective, topo: Topology, parts: Sequence[Sequence[int]] | None = None) -> int:
    """A lower bound on the address transfers (sends of one address over one link) of every schedule;
    with `parts` (a partition of the ranks), on the transfers between parts.

    Non-combining: a chunk lacked by n ranks arrives n times, and d times along the path to the farthest
    (d hops from its nearest holder); between parts, once into each part that lacks it. Combining, for
    an address whose contributions each start in one part (holders H) and whose needing parts D each
    need all of them: |H - {x}| + |D - {x}| for the best x (the one-way gossip bound: before the first
    part x holds the full sum, every other holding part has sent; after, every other needing part still
    receives; 2(N-1) for Allreduce on N ranks). Inside a part data moves for free here: a relaxation, so
    the count holds for every schedule. Other addresses: one receive per needing part."""
    part_of = list(range(coll.ranks)) if parts is None else [0] * coll.ranks
    if parts is not None:
        seen = sorted(r for p in parts for r in p)
        if seen != list(range(coll.ranks)) or any(not p for p in parts):
            raise ModelError("parts", "must partition the ranks into non-empty sets")
        for i, p in enumerate(parts):
            for r in p:
                part_of[r] = i
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(part_of[r])
    if not coll.is_combining:
        total = 0
        dist = topo.distances
        lacking: dict[int, set[int]] = {}
        lacking_ranks: dict[int, list[int]] = {}
        for r, c in coll.post:
            if part_of[r] not in holders.get(c, set()):
                lacking.setdefault(c, set()).add(part_of[r])
                lacking_ranks.setdefault(c, []).append(r)
        for c, ps in lacking.items():
            far = 0
            if parts is None:  # the hops to the farthest needer
                hs = holders.get(c, set())
                far = max(min((dist[h].get(r, 0) for h in hs), default=0) for r in lacking_ranks[c])
            total += max(len(ps), far)
        return total
    contrib: dict[int, set[int]] = {}
    for c, a in enumerate(coll.address):
        contrib.setdefault(a, set()).add(c)
    need: dict[int, dict[int, set[int]]] = {}  # address -> rank -> contributions it must end with
    for r, c in coll.post:
        need.setdefault(coll.address[c], {}).setdefault(r, set()).add(c)
    start: dict[int, dict[int, set[int]]] = {}  # address -> part -> contributions it starts with
    for r, c in coll.pre:
        start.setdefault(coll.address[c], {}).setdefault(part_of[r], set()).add(c)
    total = 0
    for a, cs in sorted(contrib.items()):
        at_start = start.get(a, {})
        short = [r for r, want in need.get(a, {}).items() if not want <= at_start.get(part_of[r], set())]
        needing = {part_of[r] for r in short}
        if not needing:
            continue
        full = all(need[a][r] == cs for r in short)
        single = all(len(holders.get(c, set())) == 1 for c in cs)
        if not full or not single or any(v == cs for v in at_start.values()):
            total += len(needing)  # each needing part receives the address at least once
            continue
        h = {next(iter(holders[c])) for c in cs}
        # the best first-complete part x is in both sets when they meet, else in either
        total += len(h) + len(needing) - (2 if h & needing else 1)
    return total
