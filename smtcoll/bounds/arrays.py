"""The collective and topology as numpy arrays, shared by the bounds (they must scale to 1024 ranks)."""

from __future__ import annotations

import itertools
from typing import Any

from smtcoll.model import Collective, Topology

SMALL_RANKS = 64  # up to here the bounds use dense numpy arrays and the model's distances


def pairs(rel: tuple[tuple[int, int], ...]) -> Any:
    import numpy as np

    return np.fromiter(itertools.chain.from_iterable(rel), dtype=np.int64, count=2 * len(rel)).reshape(-1, 2)


def distinct(keys: Any, space: int) -> Any:
    """The distinct values of an array of integers in range(space), sorted (a bitmap when the space is
    small: numpy's hashing unique is slow on a million keys)."""
    import numpy as np

    if space <= 1 << 26:
        seen = np.zeros(space, dtype=bool)
        seen[keys] = True
        return np.nonzero(seen)[0]
    return np.unique(keys)


class Arrays:
    """The collective and topology as arrays: all-pairs hop distances (scipy's breadth-first search in
    C), per chunk its holders and needers (sparse chunk x rank matrices), per link its ends."""

    def __init__(self, topo: Topology, coll: Collective) -> None:
        import numpy as np

        p, k = coll.ranks, coll.chunks
        self.p, self.k = p, k
        src = np.array([l.src for l in topo.links], dtype=np.int64)
        dst = np.array([l.dst for l in topo.links], dtype=np.int64)
        self.src, self.dst = src, dst
        self.bw = np.array([l.bandwidth for l in topo.links], dtype=np.int64)
        self.unreachable = 1 << 30
        self.small = p <= SMALL_RANKS and k * p <= 1 << 22
        if self.small:  # the model's breadth-first search: no scipy import (0.4 s) for small instances
            self.dist = np.full((p, p), self.unreachable, dtype=np.int64)
            for r, row in topo.distances.items():
                self.dist[r, list(row)] = list(row.values())
        else:
            from scipy.sparse import csr_matrix
            from scipy.sparse.csgraph import shortest_path

            adj = csr_matrix((np.ones(len(src)), (src, dst)), shape=(p, p))
            d = shortest_path(adj, method="D", unweighted=True)
            self.dist = np.where(np.isinf(d), self.unreachable, d).astype(np.int64)
        pre, post = pairs(coll.pre), pairs(coll.post)
        self.pre, self.post = pre, post
        pre_keys, post_keys = pre[:, 0] * k + pre[:, 1], post[:, 0] * k + post[:, 1]
        self.post_lacking = ~np.isin(post_keys, pre_keys)  # post pairs not held at the start
        self.pre_unneeded = ~np.isin(pre_keys, post_keys)
        self.hold = self._matrix(pre[:, 1], pre[:, 0])
        self.need = self._matrix(post[:, 1], post[:, 0])
        order = np.argsort(pre[:, 1], kind="stable")
        bounds_ = np.searchsorted(pre[order, 1], np.arange(k + 1))
        self.holders_of = [pre[order[bounds_[c]:bounds_[c + 1]], 0] for c in range(k)]
        self.address = np.array(coll.address, dtype=np.int64)
        self.combining = coll.is_combining

    def _matrix(self, rows: Any, cols: Any, shape: tuple[int, int] | None = None) -> Any:
        """A 0/1 float32 matrix: dense for small instances, scipy's sparse beyond."""
        import numpy as np

        shape = shape or (self.k, self.p)
        if self.small:
            m = np.zeros(shape, dtype=np.float32)
            m[rows, cols] = 1.0
            return m
        from scipy.sparse import csr_matrix

        return csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=shape)

    def nearest_holder_distance(self) -> Any:
        """For each post pair (r, c): hops from c's nearest holder to r."""
        import numpy as np

        holders_of = self.holders_of
        single = np.array([len(h) == 1 for h in holders_of])
        out = np.empty(len(self.post), dtype=np.int64)
        r, c = self.post[:, 0], self.post[:, 1]
        first = np.array([h[0] if len(h) else 0 for h in holders_of], dtype=np.int64)
        mask = single[c]
        out[mask] = self.dist[first[c[mask]], r[mask]]
        for i in np.nonzero(~mask)[0]:
            hs = holders_of[c[i]]
            out[i] = self.dist[hs, r[i]].min() if len(hs) else self.unreachable
        return out

    def enter_counts(self, cuts: Any) -> Any:
        """For each cut (a column of the ranks x cuts 0/1 matrix), the addresses that must enter it:
        needed inside by a chunk whose holders are all outside (`must_enter`, vectorized)."""
        import numpy as np

        x = np.asarray(cuts, dtype=np.float32)
        enter = (self.need @ x > 0) & (self.hold @ x == 0)  # chunks x cuts
        if not self.combining:
            return enter.sum(axis=0).astype(np.int64)
        _, idx = np.unique(self.address, return_inverse=True)
        group = self._matrix(idx, np.arange(self.k), (int(idx.max()) + 1, self.k))
        return (group @ enter.astype(np.float32) > 0).sum(axis=0).astype(np.int64)

    def plain_capacity(self, cuts: Any) -> Any:
        """Link capacity into each cut, ignoring switch groups (an upper bound on the true capacity)."""
        import numpy as np

        x = np.asarray(cuts, dtype=bool)
        crossing = x[self.dst] & ~x[self.src]  # links x cuts
        return (self.bw[:, None] * crossing).sum(axis=0)

