"""The exact tree packing's cut conditions by minimum cuts (scipy's maximum_flow), for machines whose 2^N
rank sets are too many to list (`forest.MAX_RANKS`).

Both conditions of `forest` are "for every rank set X, a sum over the links entering X is at least a count
of roots or trees that X misses". Add a source s with an arc to every root (or, for the packing, to a node
per tree with arcs of unbounded capacity to every rank the tree holds): a cut of s from X then costs the
links' share entering X plus the roots (trees) X meets, so the condition for every X holding a rank w is
"the maximum flow from s to w is at least the roots (trees)" (Lovász's proof of Edmonds' branching theorem
is written this way in Schrijver, Combinatorial Optimization, section 53.3). N maximum flows instead of 2^N
sets, and the answers are exactly those of the set-by-set check.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from smtcoll.synth.constructions.common import NotApplicable

Caps = Mapping[tuple[int, int], int]


Arcs = tuple[Any, Any, Any]  # numpy int32 arrays: tails, heads, capacities


def _arcs_of(arcs: Sequence[tuple[int, int, int]]) -> Arcs:
    import numpy as np

    return tuple(np.array([a[i] for a in arcs], dtype=np.int32).reshape(-1) for i in range(3))  # type: ignore[return-value]


def _flow(n: int, arcs: Arcs, source: int, sink: int, cut: bool = False) -> tuple[int, list[bool]]:
    """The maximum flow source -> sink over `n` nodes and integer arcs, and with `cut` the nodes still
    reachable from the source in the residual graph (the source side of a minimum cut)."""
    import numpy as np
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    u, v, c = arcs
    graph = csr_array((c, (u, v)), shape=(n, n))
    graph.sum_duplicates()
    result = maximum_flow(graph, source, sink, method="dinic")
    if not cut:
        return int(result.flow_value), []
    # residual capacity: what is left forwards (capacity - flow, flow being antisymmetric covers backwards)
    left: Any = graph - result.flow
    residual = csr_array(left)
    residual.data = np.where(residual.data > 0, 1, 0).astype(np.int32)
    residual.eliminate_zeros()
    reach = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    side = [False] * n
    for x in reach:
        side[int(x)] = True
    return int(result.flow_value), side


def ratio(n: int, cap: Caps, roots: Sequence[int]) -> Fraction:
    """max over nonempty rank sets X of (roots outside X) / (capacity entering X), by Dinkelbach's method:
    for the ratio a/b so far, a set with b (roots outside) > a (capacity entering) is a cut of less than
    b x roots in the network s -> root (b each), links (a x capacity); its ratio is larger; repeat until
    no rank has such a cut."""
    count = len(roots)
    best = Fraction(0)
    for w in range(n):  # start from the single ranks
        into = sum(c for (x, y), c in cap.items() if y == w)
        outside = count - sum(1 for r in roots if r == w)
        if outside and not into:
            raise NotApplicable("some rank cannot be reached")
        if outside:
            best = max(best, Fraction(outside, into))
    if not best:
        return best
    while True:
        a, b = best.numerator, best.denominator
        arcs = _arcs_of([(x, y, a * c) for (x, y), c in cap.items()] + [(n, r, b) for r in roots])
        found = best
        for w in range(n):
            value, side = _flow(n + 1, arcs, n, w, cut=True)
            if value < b * count:
                inside = {x for x in range(n) if not side[x]}
                into = sum(c for (x, y), c in cap.items() if y in inside and x not in inside)
                outside = sum(1 for r in roots if r not in inside)
                if not into:
                    raise NotApplicable("some rank cannot be reached")
                found = max(found, Fraction(outside, into))
        if found == best:
            return best
        best = found


@functools.lru_cache(maxsize=1 << 16)
def _members(mask: int, n: int) -> Any:
    import numpy as np

    return np.array([r for r in range(n) if mask >> r & 1], dtype=np.int32)


class Slack:
    """The packing's condition for every rank set X: tree slots left on the links entering X at least the
    trees that hold no rank of X, checked by one maximum flow per candidate link."""

    def __init__(self, n: int, left: dict[tuple[int, int], int], held: list[int]) -> None:
        import numpy as np

        self.n = n
        self.left = left  # the caller's: slots left per link (updated by the caller as links are taken)
        self.held = held  # the caller's: each tree's ranks as a bitmask
        self.tails = np.array([x for x, _ in left], dtype=np.int32)
        self.heads = np.array([y for _, y in left], dtype=np.int32)

    def _arcs(self, extra: tuple[int, int, int] | None) -> tuple[int, Arcs]:
        import numpy as np

        n = self.n
        big = len(self.held) + 1  # more than any cut that matters: unbounded
        groups: dict[int, int] = {}
        for h in self.held:
            groups[h] = groups.get(h, 0) + 1
        hs = sorted(groups.items())  # trees that hold the same ranks share one node
        left = np.fromiter(self.left.values(), dtype=np.int32, count=len(self.left))
        nodes = np.arange(n + 1, n + 1 + len(hs), dtype=np.int32)
        members = [_members(h, n) for h, _ in hs]
        sizes = np.array([len(m) for m in members], dtype=np.int64)
        more = [np.array([x], dtype=np.int32) for x in extra] if extra is not None else [np.zeros(0, np.int32)] * 3
        u = np.concatenate([self.tails, np.full(len(hs), n, dtype=np.int32), np.repeat(nodes, sizes), more[0]])
        v = np.concatenate([self.heads, nodes, *members, more[1]])
        c = np.concatenate([left, np.array([k for _, k in hs], dtype=np.int32),
                            np.full(int(sizes.sum()), big, dtype=np.int32), more[2]])
        return n + 1 + len(hs), (u, v, c)
    def holds(self) -> bool:
        """The condition for every nonempty X (a maximum flow to each rank)."""
        size, arcs = self._arcs(None)
        trees = len(self.held)
        return all(_flow(size, arcs, self.n, w)[0] >= trees for w in range(self.n))

    def allows(self, t: int, u: int, v: int) -> bool:
        """Does tree t keep the condition when it takes the link u -> v? Only the sets X holding v and not u
        lose a slot; with the link taken (and v held by t), the least cut from {s, u} to v must still be at
        least the trees."""
        trees = len(self.held)
        self.left[(u, v)] -= 1
        before = self.held[t]
        self.held[t] = before | 1 << v
        try:
            size, arcs = self._arcs((self.n, u, trees + 1))
            return _flow(size, arcs, self.n, v)[0] >= trees
        finally:
            self.left[(u, v)] += 1
            self.held[t] = before
