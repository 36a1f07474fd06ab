"""What each rank, and each set of ranks, must receive: the data side of every bound."""

from __future__ import annotations

from collections.abc import Iterable

from smtcoll.model import Collective


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

