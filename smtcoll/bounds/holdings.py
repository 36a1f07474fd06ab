"""The holdings bound: what a rank can hold after r rounds is bounded by what its in-neighbours held.

A rank v that holds g(v) chunks before a round holds at most g(v) + F_v(g) after it, where F_v(g) is the
most that can arrive in one round: an in-link u -> v of bandwidth b brings at most min(b, g(u)) chunks
(u sends only what it holds), a switch group into v at most its bandwidth for all its links, a NIC
likewise (it is a switch group). Starting from what each rank holds (g_0), the recursion
g_{r+1}(v) = min(N, g_r(v) + F_v(g_r)) bounds every rank's holdings after r rounds, in any schedule;
a rank that must end with n_v chunks needs r with g_r(v) >= n_v: rounds >= that r.

It holds for steps of several rounds too: in a step of k rounds a link carries at most k * b chunks,
all held at the start of the step, and F_v with every capacity times k is at most k * F_v(g), which k
one-round updates (g only grows) exceed. So it bounds the total rounds, and the steps when each step has
one round.

Combining collectives (Allreduce, ...), per address: a value u sends carries at most g(u) contributions,
and from one sender only one value per step is useful (a second copy of the same value double counts), so
a link brings at most g(u) per round and a switch group the sum of its b largest; each address is bounded
alone, as if it had every link to itself (weaker, still valid).

Where the receive bound counts capacity only, this counts the ramp: in round 1 every MI250 GCD holds one
chunk, so each in-link brings one whatever its width; mi250 x 4 Allgather: 1, 5, 13, ..., 61 < 64 after 8
rounds, so 9, where the receive bound says 8. A switch group's links into v that also lie in another group
into v are counted in the first only (dropping a constraint only raises F_v: the bound stays valid).
"""

from __future__ import annotations

from typing import Any

from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

# the recursion stops here at the latest (it needs one round per distance step at least, and a rank
# that cannot be reached stops it earlier: no growth)
MAX_ROUNDS = 1 << 16


class _Inflow:
    """Per rank, the links into it as arrays, each link either free or in one aggregating group."""

    def __init__(self, topo: Topology) -> None:
        import numpy as np

        p = topo.ranks
        cap = {(l.src, l.dst): l.bandwidth for l in topo.links}
        # groups bounding exactly one link into a rank tighten that link; groups bounding several aggregate
        agg_of: dict[tuple[int, int], int] = {}
        agg_bw: list[int] = []
        agg_dst: list[int] = []
        by_dst: dict[int, list[tuple[int, str, list[tuple[int, int]]]]] = {}
        for g in topo.switches:
            srcs = set(g.srcs)
            for v in g.dsts:
                into = [(u, v) for u in sorted(srcs) if (u, v) in cap]
                if len(into) == 1:
                    cap[into[0]] = min(cap[into[0]], g.bandwidth)
                elif into:
                    by_dst.setdefault(v, []).append((g.bandwidth, g.name, into))
        for v in sorted(by_dst):
            # narrowest group first: a link in several groups is counted in the tightest one
            for bw, _, into in sorted(by_dst[v], key=lambda x: (x[0], x[1], x[2])):
                free = [e for e in into if e not in agg_of]
                if len(free) < 2:
                    for e in free:
                        cap[e] = min(cap[e], bw)
                    continue
                for e in free:
                    agg_of[e] = len(agg_bw)
                agg_bw.append(bw)
                agg_dst.append(v)
        edges = sorted(cap)
        self.p = p
        self.src = np.array([u for u, _ in edges], dtype=np.int64)
        self.dst = np.array([v for _, v in edges], dtype=np.int64)
        self.cap = np.array([cap[e] for e in edges], dtype=np.int64)
        self.agg = np.array([agg_of.get(e, -1) for e in edges], dtype=np.int64)
        self.agg_bw = np.array(agg_bw, dtype=np.int64)
        self.agg_dst = np.array(agg_dst, dtype=np.int64)
        self.free = self.agg < 0

    def inflow_exact(self, g: list[int], values: bool) -> list[int]:
        """F_v(g) in plain Python integers, link by link: the re-check of a witness does not trust the
        vectorized form."""
        out = [0] * self.p
        groups: dict[int, list[int]] = {}
        for u, v, c, a in zip(self.src.tolist(), self.dst.tolist(), self.cap.tolist(), self.agg.tolist()):
            brings = (g[u] if c > 0 else 0) if values else min(c, g[u])
            if a < 0:
                out[v] += brings
            else:
                groups.setdefault(a, []).append(brings)
        for a, got in groups.items():
            bw = int(self.agg_bw[a])
            out[int(self.agg_dst[a])] += sum(sorted(got, reverse=True)[:bw]) if values else min(bw, sum(got))
        return out

    def inflow_copies(self, g: Any) -> Any:
        """F_v(g) for every v when a link brings min(b, g(u)) chunks."""
        import numpy as np

        per = np.minimum(self.cap, g[self.src])
        out = np.bincount(self.dst[self.free], weights=per[self.free], minlength=self.p).astype(np.float64)
        if len(self.agg_bw):
            into = np.bincount(self.agg[~self.free], weights=per[~self.free], minlength=len(self.agg_bw))
            out += np.bincount(self.agg_dst, weights=np.minimum(into, self.agg_bw), minlength=self.p)
        return out.astype(np.int64)

    def inflow_values(self, g: Any) -> Any:
        """F_v(g) for every v when a link brings one value of g(u) contributions (combining): a group
        brings its `bandwidth` largest."""
        import numpy as np

        per = np.where(self.cap > 0, g[self.src], 0)
        out = np.bincount(self.dst[self.free], weights=per[self.free], minlength=self.p).astype(np.float64)
        if len(self.agg_bw):
            idx = np.nonzero(~self.free)[0]
            # within each group, largest first; keep the first `bandwidth` of each
            order = idx[np.lexsort((-per[idx], self.agg[idx]))]
            groups = self.agg[order]
            start = np.searchsorted(groups, np.arange(len(self.agg_bw)))
            rank_in = np.arange(len(order)) - start[groups]
            keep = order[rank_in < self.agg_bw[groups]]
            into = np.bincount(self.agg[keep], weights=per[keep], minlength=len(self.agg_bw))
            out += np.bincount(self.agg_dst, weights=into, minlength=self.p)
        return out.astype(np.int64)


def _ramp(flow: _Inflow, start: Any, need: Any, total: int, values: bool,
          exact: bool = False) -> tuple[int | None, list[int], int]:
    """The least r with g_r >= need everywhere (None: some rank stops growing short of its need), the
    holdings of the rank that reaches its need last, round by round, and that rank. `exact`: each
    round in plain Python (the re-check)."""
    import numpy as np

    g = np.minimum(start.astype(np.int64), total)
    history = [g]
    r = 0
    while (g < need).any():
        if r >= MAX_ROUNDS:
            return None, [], -1
        if exact:
            step = np.array(flow.inflow_exact([int(x) for x in g], values), dtype=np.int64)
        else:
            step = flow.inflow_values(g) if values else flow.inflow_copies(g)
        nxt = np.minimum(g + step, total)
        if (nxt == g).all():
            return None, [], int(np.nonzero(g < need)[0][0])
        g = nxt
        history.append(g)
        r += 1
    if r == 0:
        return 0, [], -1
    # the witness rank: short of its need one round before the end (the least such)
    last = int(np.nonzero(history[-2] < need)[0][0])
    return r, [int(h[last]) for h in history], last


def holdings_bound(topo: Topology, coll: Collective, exact: bool = False) -> Bound:
    """The holdings bound (module docstring), in rounds for the collective as given; `exact` recomputes
    every round in plain Python integers (what `proof check` runs)."""
    import numpy as np

    if topo.ranks != coll.ranks:
        return Bound("holdings", None, "rounds", {}, "the topology and collective differ in ranks")
    flow = _Inflow(topo)
    p = coll.ranks
    best: tuple[int, dict[str, Any]] | None = None
    if not coll.is_combining:
        start = np.array([len(s) for s in coll.pre_sets], dtype=np.int64)
        need = np.array([len(a | b) for a, b in zip(coll.pre_sets, coll.post_sets)], dtype=np.int64)
        r, row, rank = _ramp(flow, start, need, coll.chunks, values=False, exact=exact)
        if r is None:
            return Bound("holdings", None, "rounds", {"rank": rank},
                         f"rank {rank} cannot gather what it needs: no schedule exists" if rank >= 0 else
                         "the recursion did not converge")
        best = (r, {"rank": rank, "must_hold": int(need[rank]) if rank >= 0 else 0, "holdings": row})
    else:
        addrs = sorted(set(coll.address))
        where = {a: i for i, a in enumerate(addrs)}
        of = np.array([where[a] for a in coll.address], dtype=np.int64)  # chunk -> address row
        starts = np.zeros((len(addrs), p), dtype=np.int64)
        needs = np.zeros((len(addrs), p), dtype=np.int64)
        pre = np.array(coll.pre, dtype=np.int64).reshape(-1, 2)
        post = np.array(coll.post, dtype=np.int64).reshape(-1, 2)
        np.add.at(starts, (of[pre[:, 1]], pre[:, 0]), 1)
        np.add.at(needs, (of[post[:, 1]], post[:, 0]), 1)
        totals = np.bincount(of, minlength=len(addrs))
        for i, a in enumerate(addrs):
            start, need, total = starts[i], needs[i], int(totals[i])
            r, row, rank = _ramp(flow, start, need, total, values=True, exact=exact)
            if r is None:
                return Bound("holdings", None, "rounds", {"rank": rank, "address": a},
                             f"rank {rank} cannot gather address {a}: no schedule exists" if rank >= 0 else
                             "the recursion did not converge")
            if best is None or r > best[0]:
                best = (r, {"rank": rank, "address": a, "must_hold": int(need[rank]) if rank >= 0 else 0,
                            "holdings": row})
    assert best is not None
    r, w = best
    if r == 0:
        return Bound("holdings", 0, "rounds", {}, "every rank starts with what it needs")
    return Bound("holdings", r, "rounds", w,
                 "rounds: what a rank can hold after each round, bounded by what its in-neighbours held")
