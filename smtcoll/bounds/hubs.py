"""The hubs bound: where the reach bound says 3 rounds, can every rank gather every contribution at once?

One-address Allreduce on a machine of nodes where each rank takes at most one value a round from other nodes and
sends at most one to them (one NIC each, mi250). The reach bound is a property of one rank's tree: it is met by a
Reduce (mi250 x 4: a 3-round Reduce to every GCD exists, `benchmarks/gather_trees.py`), so excluding 3 rounds
needs all ranks at once. The model is the checker's (`bounds/reach.py`): the set v holds after round 3 is the
disjoint union of the values of its round-1 occurrences, of the NIC values that arrive in round 2 at the
occurrences of round 2, and of the NIC value of round 3.

1. One rank v. Its round-1 occurrences y lie within 2 hops of v inside its node (hops backwards over the links
   inside it); y's value after round 1 is y's contribution, those of the ranks of its node that sent to y in
   round 1 (s_y of them: the star of y) and at most R_y = 1 NIC value of one contribution: 1 + s_y + R_y.
   Two occurrences of one round hold disjoint sets, so the chosen stars are disjoint, and they hold only ranks
   within 3 hops of v. Its round-2 occurrences are in N[v] (v and the ranks with a link into it inside its node);
   the NIC value m_u arriving at u in round 2 is the round-1 value of one rank h of another node, its *hub*:
   |m_u| <= 1 + s_h + R_h. The round-3 NIC value holds at most M(2) (the reach ramp). So with x the round-1
   sends inside v's node:  stars_v(x) + sum over u in N[v] of |m_u| >= N - R_v M(2).
2. All ranks of a set T at once (per node, its ranks with the fewest within 3 hops: mi250 GCDs 4, 7, 12, 15).
   Summed: sum_v stars_v + sum_u mult(u) |m_u| >= sum_v (N - R_v M(2)), mult(u) the ranks of T whose N[v]
   holds u. A hub sends one value a round, to one target, and a target takes one: with multipliers l_mu >= 0,
   mult |m_u| <= l_mult + g_h(s_h), g_h(s) = max(0, max over mu of mu (1 + s + R_h) - l_mu), so
   sum_u mult(u) |m_u| <= sum over mu of l_mu (targets of mult mu) + sum over all ranks h of g_h(s_h). The hubs of a
   node are bounded with the same sends x that bound its own stars: per node, split each g_h among the c(h) ranks
   of T whose 2-hop ball holds h and maximize each share apart:
       sum over v in T of stars_v + sum over h of g_h(s_h)
           <= sum over v in T of Psi_v + sum over h in no ball of g_h(deg h),
   Psi_v = the most of stars_v + sum over h in v's 2-hop ball of g_h(s_h) / c(h) over the sends into that ball
   (exact: every disjoint set of star centres, every assignment of senders to them). No 3-round schedule when
       sum over v in T of Psi_v + (the free hubs) + sum over mu of l_mu (targets of mult mu)
           < sum over v in T of (N - R_v M(2)).

mi250 x 4 (N = 64, M(2) = 24): Psi = 21 for each of the 16 tight GCDs with l = (4, 10) for mult (1, 2), 32
targets of mult 1 and 16 of mult 2: 336 + 128 + 160 = 624 < 16 x 40 = 640: **4** rounds, where the reach
bound says 3 (the rank alone could gather 68). Exact integers and fractions, no solver: `proof check` recomputes
it with this same function. The argument is about three one-round steps; a schedule of 3 rounds in fewer steps
((3), (2, 1), (1, 2)) is a tree of fewer levels, each value of step j at most (1 + d + k_j R) times one of step
j - 1 (d local in-neighbours, one value per link and step; k_j R values from other nodes): the bound applies
only where those products are below N too (mi250: 7 x 6 = 42 < 64). Applies only where the reach bound is 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import cache
from itertools import combinations
from math import lcm
from typing import Any

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import _capacity
from smtcoll.bounds.reach import Tables, reach_tables
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

# the multipliers tried, l_mu = mu a - b (mi250 x 4: (6, 2), l = (4, 10) for mult (1, 2), and (6, 3) work; on a
# wider grid, mi250 x 2 and x 3 miss by 248 and 180: their need is small)
TRIES = ((6, 2), (6, 3))
# Psi_v tries every set of star centres in the 2-hop ball: bounded so that search_bounds stays cheap (mi250: 8
# ranks, 3 x 4 torus nodes: 10; a switch node's ball is the node)
MAX_BALL = 12


def hubs_bound(topo: Topology, coll: Collective, tables: Tables | str | None = None) -> Bound:
    """The hubs bound (module docstring), in rounds: 4 where it excludes 3 rounds, else None."""
    if tables is None:
        tables = reach_tables(topo, coll)
    if isinstance(tables, str):
        return Bound("hubs", None, "rounds", {}, tables)
    if tables.t != 3:
        return Bound("hubs", None, "rounds", {}, "applies where the reach bound is 3 rounds")
    if not _one_address_sum(coll):  # reach_tables checks it too; kept for a witness recomputed alone
        return Bound("hubs", None, "rounds", {}, "not a one-address sum")
    n = topo.ranks
    nodes = tables.nodes
    cap = tables.cap
    out_links: dict[int, list] = {}
    for link in topo.links:
        if link.bandwidth > 0 and link.src != link.dst and nodes[link.src] != nodes[link.dst]:
            out_links.setdefault(link.src, []).append(link)
    if max(cap) > 1 or any(_capacity(topo, ls, {v}, out=True) > 1 for v, ls in out_links.items()):
        return Bound("hubs", None, "rounds", {}, "a rank takes or sends more than one value a round between nodes")
    nb = [sorted(set(tables.inner.get(v, []))) for v in range(n)]  # local in-neighbours
    m2 = tables.ramp[2]
    members: dict[int, list[int]] = {}
    for v in range(n):
        members.setdefault(nodes[v], []).append(v)
    balls = {v: (_ball(nb, v, 1), _ball(nb, v, 2), _ball(nb, v, 3)) for v in range(n)}
    tight: list[int] = []
    for ranks in members.values():
        least = min(len(balls[v][2]) for v in ranks)
        tight += [v for v in ranks if len(balls[v][2]) == least]
    tight.sort()
    if any(len(balls[v][1]) > MAX_BALL or len(balls[v][2]) > 2 * MAX_BALL for v in tight):
        return Bound("hubs", None, "rounds", {}, f"a 2-hop ball over {MAX_BALL} ranks (not searched)")
    mult = [0] * n
    for v in tight:
        for u in balls[v][0]:
            mult[u] += 1
    targets: dict[int, int] = {}
    for u in range(n):
        if mult[u] and cap[u]:
            targets[mult[u]] = targets.get(mult[u], 0) + 1
    need = sum(n - cap[v] * m2 for v in tight)
    widest = max(len(x) for x in nb)
    for ks in ((3,), (2, 1), (1, 2)):  # 3 rounds in fewer steps: a tree of fewer levels
        if math.prod(1 + widest + k * max(cap) for k in ks) >= n:
            return Bound("hubs", None, "rounds", {}, "3 rounds in fewer, longer steps not excluded")
    # Psi_v is at least its ball's ranks as stars of one (no sends: 1 + R_y each); where that with the hubs' part
    # reaches the need, no multipliers of these can exclude 3 rounds (mi250 x 3: 192 + 216 >= 288): skip the search
    floor = sum(1 + cap[y] for v in tight for y in balls[v][1])
    for a, b in TRIES:
        lam = {mu: max(0, mu * a - b) for mu in targets}
        if floor + sum(lam[mu] * k for mu, k in targets.items()) >= need:
            continue
        psi, free = _node_shares(nb, cap, tight, balls, lam)
        total = sum(psi.values()) + free + sum(lam[mu] * k for mu, k in targets.items())
        if total < need:
            w: dict[str, Any] = {"tight": tight, "ramp2": m2, "multipliers": [[mu, lam[mu]] for mu in sorted(lam)],
                                 "targets": [[mu, targets[mu]] for mu in sorted(targets)],
                                 "psi": [str(psi[v]) for v in tight], "free": str(free), "total": str(total),
                                 "must": need, "chunks": coll.chunk_factor}
            return Bound("hubs", 4, "rounds", w,
                         "rounds: every rank at once cannot gather every contribution in 3 (its node's round-1 "
                         "sends feed its own ranks' trees or the other nodes' hubs, not both)")
    return Bound("hubs", None, "rounds", {}, "3 rounds not excluded")


def _ball(nb: list[list[int]], v: int, d: int) -> frozenset[int]:
    """The ranks within d hops of v, backwards over the links inside its node."""
    seen = {v}
    front = {v}
    for _ in range(d):
        front = {z for x in front for z in nb[x] if z not in seen}
        seen |= front
    return frozenset(seen)


def _node_shares(nb: list[list[int]], cap: list[int], tight: list[int],
                 balls: dict[int, tuple[frozenset[int], frozenset[int], frozenset[int]]],
                 lam: dict[int, int]) -> tuple[dict[int, Fraction], Fraction]:
    """Psi_v for each tight rank and the hubs in no tight rank's 2-hop ball (their most, g_h(deg h))."""
    count = [0] * len(nb)
    for v in tight:
        for h in balls[v][1]:
            count[h] += 1

    def g(h: int, s: int) -> int:
        return max([0] + [mu * (1 + s + cap[h]) - lm for mu, lm in lam.items()])

    free = Fraction(sum(g(h, len(nb[h])) for h in range(len(nb)) if count[h] == 0))
    psi: dict[int, Fraction] = {}
    memo: dict[tuple, Fraction] = {}
    for v in tight:
        base = min(balls[v][1])  # identical nodes give the same shares: key by the structure relative to the node
        key = (v - base, len(balls[v][2]),
               tuple((y - base, tuple(z - base for z in nb[y]), cap[y], count[y]) for y in sorted(balls[v][1])))
        if key not in memo:
            memo[key] = _psi(sorted(balls[v][1]), len(balls[v][2]), nb, cap, count, g)
        psi[v] = memo[key]
    return psi, free


def _psi(ball2: list[int], within3: int, nb: list[list[int]], cap: list[int], count: list[int],
         g: Callable[[int, int], int]) -> Fraction:
    """The most of stars_v + the hubs' shares over v's 2-hop ball, exactly: every set O of star centres (a rank of
    the ball outside O keeps its most share, every neighbour sending to it), every assignment of the other ranks
    to an adjacent centre (at most one each: the stars are disjoint), the stars' ranks at most `within3`."""
    scale = lcm(*(count[h] for h in ball2))

    def share(h: int, s: int) -> int:  # g_h(s) / c(h), scaled
        return g(h, s) * (scale // count[h])

    most = {h: share(h, len(nb[h])) for h in ball2}
    best = -1
    for k in range(len(ball2), -1, -1):
        for centres in combinations(ball2, k):
            if k > within3:
                continue
            inside = set(centres)
            rest = sum(most[h] for h in ball2 if h not in inside)
            cands = sorted({z for y in centres for z in nb[y] if z not in inside})
            adj = tuple(tuple(i for i, y in enumerate(centres) if z in nb[y]) for z in cands)
            value = [[scale * (1 + s + cap[y]) + share(y, s) for s in range(len(nb[y]) + 1)] for y in centres]
            room = within3 - k
            # optimistic: the largest min(room, senders) steps up over all centres, each centre at most as many
            # as its candidate senders (a multiset of its steps, not a prefix: only larger)
            steps = sorted((v[s + 1] - v[s] for i, v in enumerate(value)
                            for s in range(min(len(v) - 1, sum(1 for a in adj if i in a)))), reverse=True)
            if rest + sum(v[0] for v in value) + sum(steps[:min(room, len(cands))]) <= best:
                continue
            top = _assign(adj, tuple(tuple(v) for v in value), room)
            best = max(best, rest + top)
    return Fraction(best, scale)


def _assign(adj: tuple[tuple[int, ...], ...], value: tuple[tuple[int, ...], ...], room: int) -> int:
    """The most of sum over centres of value[i][s_i] when each candidate sender joins at most one adjacent
    centre (s_i: how many joined centre i) and at most `room` join in all."""

    @cache
    def go(i: int, counts: tuple[int, ...], left: int) -> int:
        if i == len(adj):
            return sum(value[c][s] for c, s in enumerate(counts))
        best = go(i + 1, counts, left)
        if left:
            for c in adj[i]:
                if counts[c] + 1 < len(value[c]):
                    more = (*counts[:c], counts[c] + 1, *counts[c + 1:])
                    best = max(best, go(i + 1, more, left - 1))
        return best

    return go(0, (0,) * len(value), room)
