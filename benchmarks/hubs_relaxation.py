"""No one-chunk Allreduce on mi250 x 4 in 3 rounds: the hubs relaxation, solved with a MILP (session 17).

NOT a certified bound (HiGHS decides it, not exact arithmetic): a proof route for the lead, docs/bounds.md
"What one rank's tree cannot prove (session 17)". The argument, for a 3-round schedule on a machine of identical
nodes where every rank has one NIC (one value in and one out a round) and M(2) bounds every value held after
round 2 (the reach recursion's ramp):

1. (one rank's tree) Rank v holds after round 3 the disjoint union of the values of its round-1 occurrences
   y (y within 2 hops of v inside its node; y's value is y, the ranks of its node that sent to y in round 1, and
   at most one value from its NIC: 2 + s(y) at most), of the NIC values m_u that arrive in round 2 at the ranks u
   of v's closed neighbourhood, and of the NIC value of round 3 (at most M(2)). The stars {y} + senders(y) of the
   round-1 occurrences are pairwise disjoint (a rank's value holds its own contribution) and hold at most the
   ranks within 3 hops of v. m_u is the round-1 value of some remote hub h: at most 2 + s(h), and h sends one.
   So for every v: stars_v(x) + sum over u in N[v] of |m_u| >= N - M(2), x the round-1 sends of v's node.
2. (all tight ranks at once) Sum it over the set T of ranks with the fewest within 3 hops (mi250: GCDs 4, 7, 12,
   15 of every node): sum_v stars_v + sum_u mult(u) |m_u| >= |T| (N - M(2)), mult(u) the ranks of T next to u.
   The hubs of node b that feed a target of mult 2 (k2_b of them) or 1 (k1_b) are bounded with the same sends x_b
   that bound node b's own stars; with multipliers l2, l1 >= 0, per node
       sum_(v in T, node b) stars_v + sum_(hubs of b) mult (2 + s(h)) <= L(l) + l2 k2_b + l1 k1_b,
   L(l) = max over the round-1 sends of one node of sum_v stars_v + sum_h max(0, 2 (2 + s_h) - l2, 2 + s_h - l1),
   and sum_b k2_b, sum_b k1_b are at most the targets of mult 2 and 1. No 3-round schedule if
       nodes L(l) + l2 (targets of mult 2) + l1 (targets of mult 1) < |T| (N - M(2)).
   mi250 x 4: L(10, 4) = 80 (HiGHS, optimal), 4 x 80 + 10 x 16 + 4 x 32 = 608 < 16 x (64 - 24) = 640.

    python benchmarks/hubs_relaxation.py [--l2 10 --l1 4]
    python benchmarks/hubs_relaxation.py --survey

--survey: where the certified `hubs` bound (smtcoll/bounds/hubs.py) applies and binds, on every built-in machine
at 1..16 nodes and every held-out file at 1, 2, 3, 5 nodes (one line per instance where the reach bound is 3).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smtcoll import library
from smtcoll.bounds.reach import reach_tables


def node_bound(nbr: dict[int, list[int]], tight: list[int], l2: float, l1: float, cap: int) -> float:
    """L(l): the most one node gives, over its round-1 sends x (a MILP; stars chosen per tight rank)."""
    ranks = sorted(nbr)

    def ball(v: int, d: int) -> set[int]:
        seen = {v}
        for _ in range(d):
            seen |= {z for x in seen for z in nbr[x]}
        return seen

    idx: dict[tuple, int] = {}

    def var(*key) -> int:
        return idx.setdefault(key, len(idx))

    obj: dict[int, float] = {}
    rows: list[tuple[list[tuple[int, float]], float, float]] = []
    inf = np.inf
    for y in ranks:
        for z in nbr[y]:
            var("x", z, y)  # z sends to y in round 1
    for h in ranks:
        w2, w1, s2, s1 = var("w2", h), var("w1", h), var("s2", h), var("s1", h)
        rows.append(([(w2, 1), (w1, 1)], -inf, 1))  # a hub sends one value in round 2
        for s, w in ((s2, w2), (s1, w1)):
            rows.append(([(s, 1), (w, -len(nbr[h]))], -inf, 0))
            rows.append(([(s, 1)] + [(idx[("x", z, h)], -1) for z in nbr[h]], -inf, 0))
        for i, c in ((w2, 4 - l2), (s2, 2), (w1, 2 - l1), (s1, 1)):
            obj[i] = obj.get(i, 0) + c
    for v in tight:
        near = sorted(ball(v, 2))
        for y in near:
            o = var("o", v, y)
            obj[o] = obj.get(o, 0) + 2
            for z in nbr[y]:
                p, x = var("p", v, z, y), idx[("x", z, y)]
                obj[p] = obj.get(p, 0) + 1
                rows += [([(p, 1), (o, -1)], -inf, 0), ([(p, 1), (x, -1)], -inf, 0),
                         ([(p, 1), (o, -1), (x, -1)], -1, inf)]
        for z in ranks:  # stars disjoint
            terms = ([(idx[("o", v, z)], 1)] if z in near else []) + \
                    [(idx[("p", v, z, y)], 1) for y in near if z in nbr[y]]
            if len(terms) > 1:
                rows.append((terms, -inf, 1))
        rows.append(([(idx[("o", v, y)], 1) for y in near] + [(idx[("p", v, z, y)], 1) for y in near for z in nbr[y]],
                     -inf, cap))  # the stars hold only ranks within 3 hops
    mat = lil_matrix((len(rows), len(idx)))
    for r, (terms, _, _) in enumerate(rows):
        for i, c in terms:
            mat[r, i] += c
    cost = np.zeros(len(idx))
    for i, c in obj.items():
        cost[i] = -c
    upper = np.ones(len(idx))
    for key, i in idx.items():
        if key[0] in ("s2", "s1"):
            upper[i] = len(nbr[key[1]])
    res = milp(cost, constraints=LinearConstraint(mat.tocsr(), [r[1] for r in rows], [r[2] for r in rows]),
               integrality=np.ones(len(idx)), bounds=Bounds(0, upper))
    assert res.status == 0, res.message
    return float(-res.fun)


def survey() -> None:
    from smtcoll import specs
    from smtcoll.bounds.hubs import hubs_bound

    start = time.process_time()
    cases = []
    for name in ("dgx1", "ndv2", "dgx2", "a100", "mi250", "amd8"):
        for k in range(1, 17):
            try:
                cases.append((f"{name} x {k}", library.topology(name, k)))
            except Exception:  # no NIC model, or too many ranks: not composed
                continue
    for path in sorted(Path(__file__).resolve().parent.glob("topologies/heldout/*.toml")):
        for k in (1, 2, 3, 5):
            try:
                cases.append((f"{path.name} x {k}", specs.load_topology(path, k)))
            except Exception:
                continue
    binds = 0
    for label, topo in cases:
        coll = library.collective("allreduce", topo.ranks)
        tables = reach_tables(topo, coll)
        if isinstance(tables, str) or tables.t != 3:
            continue
        b = hubs_bound(topo, coll, tables)
        binds += b.value is not None
        value, why = ("-", b.note) if b.value is None else (b.value, "binds")
        print(f"{label}: reach 3, hubs {value} ({why})")
    print(f"{len(cases)} instances, the hubs bound binds on {binds} ({time.process_time() - start:.1f} CPU s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--l2", type=float, default=10)
    ap.add_argument("--l1", type=float, default=4)
    ap.add_argument("--survey", action="store_true")
    args = ap.parse_args()
    if args.survey:
        survey()
        return
    start = time.process_time()
    nodes = 4
    topo = library.topology("mi250", nodes)
    n = topo.ranks
    tables = reach_tables(topo, library.collective("allreduce", n))
    assert not isinstance(tables, str) and tables.t == 3
    m2 = tables.ramp[2]
    per = n // nodes
    nbr = {y: sorted({lk.src for lk in topo.links if lk.dst == y and lk.src < per and lk.bandwidth > 0})
           for y in range(per)}

    def within(v: int, d: int) -> set[int]:
        seen = {v}
        for _ in range(d):
            seen |= {z for x in seen for z in nbr[x]}
        return seen

    least = min(len(within(v, 3)) for v in range(per))
    tight = [v for v in range(per) if len(within(v, 3)) == least]
    mult = [sum(1 for v in tight if u in within(v, 1)) for u in range(per)]
    twos, ones = nodes * mult.count(2), nodes * mult.count(1)
    assert max(mult) <= 2
    big = node_bound(nbr, tight, args.l2, args.l1, least)
    lhs = nodes * big + args.l2 * twos + args.l1 * ones
    need = nodes * len(tight) * (n - m2)
    print(f"mi250 x {nodes}: M(2) = {m2}, tight ranks {tight} (within 3 hops: {least}), targets of mult 2 / 1: "
          f"{twos} / {ones}; L({args.l2:g}, {args.l1:g}) = {big:g}; {nodes} L + l2 {twos} + l1 {ones} = {lhs:g} "
          f"{'<' if lhs < need else '>='} {need}: {'no 3-round schedule' if lhs < need else 'not excluded'} "
          f"({time.process_time() - start:.1f} CPU s)")


if __name__ == "__main__":
    main()
