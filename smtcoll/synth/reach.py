"""Reachability before any search: a chunk a rank needs must be able to get there over the directed links.

Links are directed, so forgetting one reverse link leaves a rank that nothing can reach; no encoding or
greedy pass should start then (it would grow without ever finding a schedule). One breadth-first search
per distinct set of holders (at most one per chunk), linear in the links: cheap on every size we accept.
"""

from __future__ import annotations

import time
from collections import deque

from smtcoll.model import Collective, Topology
from smtcoll.synth.result import LowerBound, Optimality, SynthResult, Unreachable


def unreachable(topo: Topology, coll: Collective) -> Unreachable | None:
    """The first (rank, chunk) of the postcondition that no holder of the chunk can reach, or None."""
    out_of: list[list[int]] = [[] for _ in range(topo.ranks)]
    for link in topo.links:
        out_of[link.src].append(link.dst)
    holders: dict[int, list[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, []).append(r)
    if _strongly_connected(out_of):
        # every rank reaches every rank (two searches, not one per chunk): only a chunk nobody holds fails
        for r, c in coll.post:
            if c not in holders:
                return Unreachable(r, c, ())
        return None
    reach: dict[tuple[int, ...], set[int]] = {}
    for r, c in coll.post:
        hs = tuple(holders.get(c, ()))
        seen = reach.get(hs)
        if seen is None:
            seen, queue = set(hs), deque(hs)
            while queue:
                u = queue.popleft()
                for v in out_of[u]:
                    if v not in seen:
                        seen.add(v)
                        queue.append(v)
            reach[hs] = seen
        if r not in seen:
            return Unreachable(r, c, hs)
    return None


def _strongly_connected(out_of: list[list[int]]) -> bool:
    """Rank 0 reaches every rank and every rank reaches rank 0."""
    into: list[list[int]] = [[] for _ in out_of]
    for u, vs in enumerate(out_of):
        for v in vs:
            into[v].append(u)
    for adj in (out_of, into):
        seen, queue = {0}, deque([0])
        while queue:
            for v in adj[queue.popleft()]:
                if v not in seen:
                    seen.add(v)
                    queue.append(v)
        if len(seen) < len(out_of):
            return False
    return True


def unreachable_result(topo: Topology, base: Collective, strategy: str, started: float) -> SynthResult | None:
    """`infeasible` at once, with the witness, when some rank needs a chunk no holder can reach."""
    w = unreachable(topo, base)
    if w is None:
        return None
    why = w.text()
    return SynthResult("infeasible", None, strategy, LowerBound.none(why), [],
                       message=f"proved: no schedule exists: {why}", optimal=Optimality.unreachable(w),
                       seconds=time.monotonic() - started)
