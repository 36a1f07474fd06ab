"""Minimal lower bounds that the search strategies start from and prune with (each with its reason).

- distance: a rank that needs a chunk is at least its distance from the nearest holder away (steps);
- receive capacity: a rank that must receive k chunks through in-links/switch in-ports carrying b chunks
  per round needs k/b rounds (and symmetrically for chunks that must leave a rank);
- cut: chunks that must cross from a set A of ranks to the rest, over links of total capacity b per
  round, need (count)/b rounds (Line(8) Alltoall: 16 chunks over the middle link);
- hops: the chunk-hops every schedule makes (a chunk needed at distance d makes >= d hops; a chunk needed
  at n ranks that lack it makes >= n hops) over the total link capacity per round (Ring(8) Alltoall:
  128 hops over 16 links).

The rounds bounds are rounds per chunk (a Fraction): with the collective split in C, every count scales
by C, so R >= ceil(bound * C); with one round per step they bound the steps too. For combining
collectives partial sums change the counting: only one value per address has to enter (or leave) a rank.
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs

from smtcoll.model import Collective, Topology
from smtcoll.text import count as plural_count


@attrs.frozen
class Bound:
    value: Fraction | int
    why: str


@attrs.frozen
class Bounds:
    steps: Bound  # fewest steps with any rounds
    rounds_per_chunk: Bound  # fewest rounds per chunk (R/C) with any steps

    def rounds(self, chunks: int) -> int:
        return math.ceil(self.rounds_per_chunk.value * chunks)

    def least_steps(self, one_round_per_step: bool = True, chunks: int = 1) -> Bound:
        """The best bound on the steps; with one round per step the rounds bound applies too."""
        r = self.rounds(chunks)
        if one_round_per_step and r > self.steps.value:
            return Bound(r, self.rounds_per_chunk.why)
        return self.steps


def _in_capacity(topo: Topology, v: int) -> int:
    """Chunks per round that can enter v: the in-links, tightened by any switch group into v."""
    links = {u: topo.bandwidth(u, v) for u in topo.in_neighbors(v)}
    best = sum(links.values())
    for g in topo.switches:
        if v in g.dsts:
            best = min(best, g.bandwidth + sum(b for u, b in links.items() if u not in g.srcs))
    return best


def _out_capacity(topo: Topology, u: int) -> int:
    links = {v: topo.bandwidth(u, v) for v in topo.out_neighbors(u)}
    best = sum(links.values())
    for g in topo.switches:
        if u in g.srcs:
            best = min(best, g.bandwidth + sum(b for v, b in links.items() if v not in g.dsts))
    return best


def _cut_capacity(topo: Topology, inside: frozenset[int]) -> int:
    cap = sum(l.bandwidth for l in topo.links if l.src in inside and l.dst not in inside)
    for g in topo.switches:
        if set(g.srcs) <= inside and not (set(g.dsts) & inside):
            cap = min(cap, g.bandwidth + sum(l.bandwidth for l in topo.links if l.src in inside
                                             and l.dst not in inside and not (l.src in g.srcs and l.dst in g.dsts)))
    return cap


def step_bound(topo: Topology, coll: Collective) -> Bound:
    dist = topo.distances
    worst, where = 0, ""
    for r, c in coll.post:
        holders = [h for h in range(coll.ranks) if c in coll.pre_sets[h]]
        d = min((dist[h].get(r, math.inf) for h in holders), default=math.inf)
        if d == math.inf:
            return Bound(10**9, f"rank {r} cannot be reached from any holder of chunk {c}")
        if d > worst:
            worst, where = int(d), f"distance: chunk {c} is {plural_count(int(d), 'hop')} from rank {r}"
    return Bound(worst, where or "nothing to move")


def rounds_bound(topo: Topology, coll: Collective) -> Bound:
    """Rounds per chunk (Fraction) for the collective as given (its chunk_factor already applied)."""
    best, why = Fraction(0), "none"
    f = coll.chunk_factor

    def consider(count: int, cap: int, what: str) -> None:
        nonlocal best, why
        if count and cap:
            q = Fraction(count, cap * f)
            if q > best:
                best, why = q, f"{what}: {plural_count(count, 'chunk')} through capacity {cap} per round"
        elif count and not cap:
            best, why = Fraction(10**9), f"{what}: {plural_count(count, 'chunk')} but no capacity"

    P = coll.ranks
    if coll.is_combining:
        # a rank needing a contribution it lacks receives at least one value of that address; a rank
        # holding a contribution needed elsewhere sends at least one value of that address
        for v in range(P):
            k = len({coll.address[c] for c in coll.post_sets[v] if c not in coll.pre_sets[v]})
            consider(k, _in_capacity(topo, v), f"receive capacity of rank {v} (one value per address)")
        for u in range(P):
            k = len({coll.address[c] for c in coll.pre_sets[u]
                     if any(c in coll.post_sets[w] for w in range(P) if w != u)})
            consider(k, _out_capacity(topo, u), f"send capacity of rank {u} (one value per address)")
        return Bound(best, why if best else "none")
    for v in range(P):
        k = sum(1 for c in coll.post_sets[v] if c not in coll.pre_sets[v])
        consider(k, _in_capacity(topo, v), f"receive capacity of rank {v}")
    # chunks only v holds that some other rank needs must leave v
    for u in range(P):
        k = 0
        for c in coll.pre_sets[u]:
            holders = {h for h in range(P) if c in coll.pre_sets[h]}
            if holders == {u} and any(c in coll.post_sets[w] for w in range(P) if w != u):
                k += 1
        consider(k, _out_capacity(topo, u), f"send capacity of rank {u}")
    # cuts: contiguous id ranges (lines, rings, the halves of most machines); O(P^2) sets
    if P <= 32:
        sets = {frozenset(range(i, j)) for i in range(P) for j in range(i + 1, P + 1) if j - i < P}
        sets |= {frozenset(range(P)) - s for s in sets}
        for inside in sorted(sets, key=lambda s: (len(s), sorted(s))):
            k = 0
            for c in range(coll.chunks):
                holders = {h for h in range(P) if c in coll.pre_sets[h]}
                if holders and holders <= inside and any(c in coll.post_sets[w] for w in range(P) if w not in inside):
                    k += 1
            cap = _cut_capacity(topo, inside)
            consider(k, cap, f"cut {_ranks(inside)} -> rest")
    # hops
    dist = topo.distances
    hops = 0
    for c in range(coll.chunks):
        holders = [h for h in range(P) if c in coll.pre_sets[h]]
        needers = [w for w in range(P) if c in coll.post_sets[w] and c not in coll.pre_sets[w]]
        if not needers:
            continue
        far = max(min(dist[h].get(w, 0) for h in holders) for w in needers)
        hops += max(far, len(needers))
    total = sum(l.bandwidth for l in topo.links)
    consider(hops, total, "chunk-hops over all links")
    return Bound(best, why)


def _ranks(s: frozenset[int]) -> str:
    xs = sorted(s)
    if xs == list(range(xs[0], xs[-1] + 1)) and len(xs) > 2:
        return f"{{{xs[0]}..{xs[-1]}}}"
    return "{" + ",".join(map(str, xs)) + "}"


def bounds(topo: Topology, coll: Collective) -> Bounds:
    """Bounds for the collective with one chunk per input (`coll` may already be split: the rounds
    bound is per chunk, so it does not depend on the split)."""
    return Bounds(step_bound(topo, coll), rounds_bound(topo, coll))
