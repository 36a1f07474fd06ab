"""An upper bound on the multicast flow LP's optimum without an LP: trees per chunk, grown greedily.

The multicast LP (`lp._multicast_lp_bound`) asks, per chunk c, for y[c, e] >= the flow to each rank that
needs c, with sum over chunks of y[c, e] <= bandwidth(e) x T (and per switch group). Trees that span a
chunk's holders and needers are a feasible point: split the chunk into k pieces, one tree per piece,
y[c, e] = (pieces whose tree uses e) / k, each needer's flow 1/k along each piece's tree path. So the most
loaded link or group, over its capacity, is at least the LP's optimum; where a bound the LP is known to
dominate (receive, cut, rank-set cut) reaches it, the optimum is that value and the LP need not be solved
(as `routing` does for unicast collectives).

The trees are grown like Prim's: from the chunk's holders, each time the link out of the tree whose link and
groups would be least loaded after it (then into a needer, then the least total load, then the lowest index),
until every needer is in; leaves that need nothing are pruned. Then each tree in turn is torn up and grown
again against the others' loads, a few passes, until the target is met. On a switch domain this chains the
ranks (each port carries one copy), which is the optimum: Broadcast on a 36-GPU switch, 1 round, where the
LP of 45,361 variables took 108-139 CPU s to say the same. With quarters, a100 x 2 Allgather meets its cut of
15/2 rounds. Where the optimum needs a packing tight at every port (Broadcast on mi250 x 2 or a100 x 4: the
cut, 1/8 and 1/2 round), the greedy misses it and the LP is solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from smtcoll.model import Collective, Topology

PASSES = 4  # rounds of tearing up and regrowing every tree (each costs what the first growth did)


def tree_route_time(topo: Topology, coll: Collective, link_cap: Sequence[Fraction], group_cap: Sequence[Fraction],
                    pieces: int = 1, target: Fraction | None = None) -> Fraction | None:
    """The time (rounds) of greedy trees, `pieces` per chunk: max over links and groups of the pieces carried
    / pieces / capacity (exact); None when a needer cannot be reached or a used link or group has no
    capacity. Stops improving once the time is at most `target`."""
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    needers: dict[int, set[int]] = {}
    for r, c in coll.post:
        if r not in holders.get(c, set()):
            needers.setdefault(c, set()).add(r)
    out_of: dict[int, list[int]] = {v: [] for v in range(topo.ranks)}
    for e, l in enumerate(topo.links):
        out_of[l.src].append(e)
    groups = [tuple(topo.switches_of(l.src, l.dst)) for l in topo.links]
    # loads as floats for the choice only; the time is recomputed exactly from the integer counts
    lcap = [float(x) for x in link_cap]
    gcap = [float(x) for x in group_cap]
    load = [0] * len(topo.links)
    gload = [0] * len(topo.switches)
    inf = float("inf")

    def key(e: int) -> tuple[float, float]:
        if lcap[e] <= 0 or any(gcap[g] <= 0 for g in groups[e]):
            return inf, inf
        ratios = [(load[e] + 1) / lcap[e], *((gload[g] + 1) / gcap[g] for g in groups[e])]
        return max(ratios), sum(ratios)

    def add(e: int, k: int) -> None:
        load[e] += k
        for g in groups[e]:
            gload[g] += k

    def grow(c: int) -> list[int] | None:
        need = needers[c]
        tree = set(holders.get(c, set()))
        parent: dict[int, int] = {}  # rank -> the tree link into it
        missing = set(need)
        while missing:
            best: tuple[float, bool, float, int] | None = None
            for u in sorted(tree):
                for e in out_of[u]:
                    v = topo.links[e].dst
                    if v in tree:
                        continue
                    most, total = key(e)
                    cand = (most, v not in need, total, e)
                    if best is None or cand < best:
                        best = cand
            if best is None or best[0] == inf:
                return None
            e = best[3]
            v = topo.links[e].dst
            tree.add(v)
            parent[v] = e
            missing.discard(v)
            add(e, 1)
        # prune leaves that need nothing (relays that turned out not to relay)
        children: dict[int, int] = {}
        for e in parent.values():
            children[topo.links[e].src] = children.get(topo.links[e].src, 0) + 1
        leaves = [v for v in parent if v not in need and not children.get(v)]
        while leaves:
            v = leaves.pop()
            e = parent.pop(v)
            add(e, -1)
            u = topo.links[e].src
            children[u] -= 1
            if u in parent and u not in need and not children[u]:
                leaves.append(u)
        return sorted(parent.values())

    def time() -> Fraction:
        worst = Fraction(0)
        for e, n in enumerate(load):
            if n:
                worst = max(worst, Fraction(n, pieces) / link_cap[e])
        for g, n in enumerate(gload):
            if n:
                worst = max(worst, Fraction(n, pieces) / group_cap[g])
        return worst

    units = [c for c in sorted(needers) for _ in range(pieces)]
    trees: list[list[int]] = []
    for c in units:
        t = grow(c)
        if t is None:
            return None
        trees.append(t)
    best = time()
    for _ in range(PASSES if pieces > 1 or len(units) > 1 else 0):
        if target is not None and best <= target:
            break
        for i, c in enumerate(units):
            for e in trees[i]:
                add(e, -1)
            t = grow(c)
            if t is None:  # cannot happen: the same links are there
                return None
            trees[i] = t
        best = min(best, time())
    return best
