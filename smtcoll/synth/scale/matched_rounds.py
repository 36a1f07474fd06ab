"""Chunks on fixed paths timed round by round by a maximum-weight selection (HiGHS), not a greedy order.

Where the rounded paths load their busiest resource (a link, or a switch group: an NVSwitch port, a NIC)
with T chunks, T rounds are possible only if every such resource moves a chunk in every round. The list
order of `routing._store_and_forward` fills the links one after another and leaves a NIC idle when the
chunk it needed took another port (a100 x 8 Alltoall: 60 rounds for the 56 of the LP). Here every round
is one integer program over the waiting hops (per link, its most urgent chunks up to its bandwidth):
at most the capacity of every link and group, maximizing the sum of the hops' weights. A hop's weight is
the sum, over the resources it uses, of their pressure (work left over capacity) to the power PRESSURE_POWER,
plus half that power of the largest pressure still ahead of its chunk: the most pressed resources are served
first, nearly lexicographically, and a relay hop that feeds a pressed NIC next round is worth moving now.
Deterministic (HiGHS with the same input gives the same answer); the caller checks the schedule.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import defaultdict

from smtcoll.model import Collective, Schedule, Send, Step, Topology

PRESSURE_POWER = 4  # high enough that one hop on a resource twice as pressed outweighs 16 elsewhere
# a round weighs each link's chunks by the way they still go, one weight per (link, way): their number at the
# start times the busiest resource's load bounds the work (a count, not a clock): a100 x 8 Alltoall 0.23 M,
# dgx2 x 6 1.8 M, ndv2 x 10 3.6 M (each a few CPU s); ring:100 12.4 M is beyond (minutes)
MATCHED_WORK = 4_000_000
MATCHED_SPENT = 1_500_000  # (link, way) pairs weighed over all rounds (ndv2 x 10: 0.54 M): a safety stop


def matched_rounds(topo: Topology, coll: Collective, paths: list[tuple[int, tuple[int, ...]]],
                   max_steps: int, busiest: int) -> Schedule | None:
    """`paths`: (chunk, path) per chunk of `coll`; the schedule moving each chunk along its path, one hop a
    round, or None (no paths, more than `max_steps` rounds, or beyond its work limits: `busiest`, the most a
    resource carries over its capacity in rounds, times the (link, way) pairs at the start above MATCHED_WORK,
    or more than MATCHED_SPENT weighed)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp
    from scipy.sparse import coo_matrix

    if not paths or len({(path[:2], path[2:]) for _, path in paths}) * busiest > MATCHED_WORK:
        return None
    links = sorted((l.src, l.dst) for l in topo.links)
    index = {link: i for i, link in enumerate(links)}
    cap = [topo.bandwidth(*link) for link in links] + [g.bandwidth for g in topo.switches]
    uses = {link: (index[link], *(len(links) + g for g in topo.switches_of(*link))) for link in links}
    work = [0] * len(cap)
    for _, path in paths:
        for hop in itertools.pairwise(path):
            for r in uses[hop]:
                work[r] += 1
    at = [0] * len(paths)
    # link -> the way its chunks still go after it -> those chunks, sorted (chunks with the same way left
    # weigh the same: one weight per way, not per chunk)
    waiting: dict[tuple[int, int], dict[tuple[int, ...], list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, (_, path) in enumerate(paths):
        if len(path) > 1:
            waiting[(path[0], path[1])][path[2:]].append(i)
    left = sum(1 for _, path in paths if len(path) > 1)
    steps: list[Step] = []
    spent = 0  # (link, way) groups weighed, over all rounds
    press: list[float] = []  # this round, per link and group
    weighed: dict[tuple[int, ...], float] = {}  # this round, per way

    def weight(way: tuple[int, ...]) -> float:
        w = weighed.get(way)
        if w is None:
            ahead = max((press[r] for hop in itertools.pairwise(way) for r in uses[hop]), default=0.0)
            w = weighed[way] = ahead / 2 + 1e-3 * len(way)  # then the longest way to go
        return w

    while left:
        if len(steps) >= max_steps:
            return None
        press[:] = [(w / c) ** PRESSURE_POWER for w, c in zip(work, cap, strict=True)]
        weighed.clear()

        cands: list[tuple[tuple[int, int], int, float]] = []
        for link in sorted(waiting):
            spent += len(waiting[link])
            here = sum(press[r] for r in uses[link])
            k = cap[index[link]]
            best = heapq.nlargest(k, ((w, -i) for way, queue in waiting[link].items()
                                      for w in (weight((link[1], *way)),) for i in queue[:k]))
            cands += [(link, -j, here + w) for w, j in best]
        rows: list[int] = []
        cols: list[int] = []
        row_of: dict[int, int] = {}
        for j, (link, _, _) in enumerate(cands):
            for r in uses[link]:
                rows.append(row_of.setdefault(r, len(row_of)))
                cols.append(j)
        upper = np.zeros(len(row_of))
        for r, k in row_of.items():
            upper[k] = cap[r]
        a = coo_matrix((np.ones(len(rows)), (np.array(rows), np.array(cols))),
                       shape=(len(row_of), len(cands))).tocsr()
        weights = -np.array([w for _, _, w in cands])
        # the LP first: where every hop uses one link, one out-port and one in-port group (switch machines,
        # NICs) its vertex optimum is integral; the integer program where it is not
        res = linprog(weights, A_ub=a, b_ub=upper, bounds=(0, 1), method="highs-ds")  # type: ignore[call-overload]
        if res.x is None or np.abs(res.x - np.rint(res.x)).max() > 1e-6:
            res = milp(weights, constraints=LinearConstraint(a, -np.inf, upper),
                       integrality=np.ones(len(cands), dtype=np.int64), bounds=Bounds(0, 1))
        if res.x is None or spent > MATCHED_SPENT:
            return None
        sends = []
        for (link, i, _), x in zip(cands, np.rint(res.x), strict=True):
            if not x:
                continue
            chunk, path = paths[i]
            sends.append((coll.address[chunk], *link))
            at[i] += 1
            way = waiting[link]
            way[path[at[i] + 1:]].remove(i)
            for r in uses[link]:
                work[r] -= 1
            if at[i] + 1 < len(path):
                bisect.insort(waiting[(path[at[i]], path[at[i] + 1])][path[at[i] + 2:]], i)
            else:
                left -= 1
        if not sends:
            return None
        for link in list(waiting):
            ways = {w: q for w, q in waiting[link].items() if q}
            if ways:
                waiting[link] = defaultdict(list, ways)
            else:
                del waiting[link]
        steps.append(Step(1, [Send(*x) for x in sorted(sends)]))
    return Schedule(topo, coll, steps)
