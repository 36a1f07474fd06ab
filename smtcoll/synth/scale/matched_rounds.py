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

import itertools
from collections import defaultdict

from smtcoll.model import Collective, Schedule, Send, Step, Topology

PRESSURE_POWER = 4  # high enough that one hop on a resource twice as pressed outweighs 16 elsewhere
MATCHED_WORK = 1_500_000  # waiting hops considered, summed over the rounds: a count, not a clock


def matched_rounds(topo: Topology, coll: Collective, paths: list[tuple[int, tuple[int, ...]]],
                   max_steps: int) -> Schedule | None:
    """`paths`: (chunk, path) per chunk of `coll`; the schedule moving each chunk along its path, one hop a
    round, or None (no paths, more than `max_steps` rounds, or beyond MATCHED_WORK)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    if not paths:
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
    waiting: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (_, path) in enumerate(paths):
        if len(path) > 1:
            waiting[(path[0], path[1])].append(i)
    left = sum(1 for _, path in paths if len(path) > 1)
    steps: list[Step] = []
    spent = 0
    while left:
        if len(steps) >= max_steps:
            return None
        press = [(w / c) ** PRESSURE_POWER for w, c in zip(work, cap, strict=True)]

        def weight(i: int) -> float:
            hops = list(itertools.pairwise(paths[i][1][at[i]:]))
            here = sum(press[r] for r in uses[hops[0]])
            ahead = max((press[r] for hop in hops[1:] for r in uses[hop]), default=0.0)
            return here + ahead / 2 + 1e-3 * len(hops)  # then the longest way to go

        cands: list[tuple[tuple[int, int], int, float]] = []
        for link in sorted(waiting):
            queue = waiting[link]
            spent += len(queue)
            best = sorted(((weight(i), -i) for i in queue), reverse=True)[:cap[index[link]]]
            cands += [(link, -j, w) for w, j in best]
        if spent > MATCHED_WORK:
            return None
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
        a = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(row_of), len(cands))).tocsr()
        res = milp(-np.array([w for _, _, w in cands]), constraints=LinearConstraint(a, -np.inf, upper),
                   integrality=np.ones(len(cands)), bounds=Bounds(0, 1))
        if res.x is None:
            return None
        sends = []
        for (link, i, _), x in zip(cands, np.rint(res.x), strict=True):
            if not x:
                continue
            chunk, path = paths[i]
            sends.append(Send(coll.address[chunk], *link))
            waiting[link].remove(i)
            for r in uses[link]:
                work[r] -= 1
            at[i] += 1
            if at[i] + 1 < len(path):
                waiting[(path[at[i]], path[at[i] + 1])].append(i)
            else:
                left -= 1
        if not sends:
            return None
        waiting = defaultdict(list, {k: v for k, v in waiting.items() if v})
        steps.append(Step(1, sorted(sends)))
    return Schedule(topo, coll, steps)
