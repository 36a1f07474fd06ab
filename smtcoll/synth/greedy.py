"""A deterministic greedy schedule for non-combining collectives: a cheap upper bound on the steps.

Per step, candidate sends (u -> v of a chunk u holds and v lacks, where v needs the chunk or is closer to
a rank that still needs it) are taken in order of the longest remaining distance first while link and
switch-group capacities allow (ties: the rarest chunk first, then a rotation of the pairs). When the
greedy schedule meets the lower bound it is optimal with no solver call (Star, hub-and-spoke, DGX-2
Allgather); otherwise it caps the least-steps search (an extra step never hurts, so the solver only has
to decide the step counts below it).
"""

from __future__ import annotations

import time

from smtcoll.model import Collective, Schedule, Send, Step, Topology


def greedy_schedule(topo: Topology, coll: Collective, max_steps: int, rounds_per_step: int = 1,
                    deadline: float | None = None) -> Schedule | None:
    """The greedy schedule, or None (combining collective, stuck, or `deadline` of time.monotonic() passed)."""
    if coll.is_combining:
        return None
    P, K = coll.ranks, coll.chunks
    dist = topo.distances
    holds = [set(coll.pre_sets[r]) for r in range(P)]
    needers = [[r for r in range(P) if c in coll.post_sets[r]] for c in range(K)]
    links = sorted((l.src, l.dst, l.bandwidth) for l in topo.links)
    groups = [(set(g.srcs), set(g.dsts), g.bandwidth) for g in topo.switches]
    group_of: dict[tuple[int, int], list[int]] = {}
    for i, (srcs, dsts, _) in enumerate(groups):
        for u, v, _ in links:
            if u in srcs and v in dsts:
                group_of.setdefault((u, v), []).append(i)
    steps: list[Step] = []
    for s in range(max_steps):
        missing = [[r for r in needers[c] if c not in holds[r]] for c in range(K)]
        if not any(missing):
            break
        copies = [sum(c in h for h in holds) for c in range(K)]
        candidates = []
        for u, v, _ in links:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            for c in holds[u]:
                if c in holds[v] or not missing[c]:
                    continue
                du = min(dist[u].get(t, 1 << 20) for t in missing[c])
                dv = min(dist[v].get(t, 1 << 20) for t in missing[c])
                if dv >= du:
                    continue  # not closer to any rank that still needs c
                # longest remaining way first, then the rarest chunk, then pairs rotated by the step
                # (u sends to u + s + 1 first: a perfect matching on switches); measured best of 4 orders
                candidates.append((-du, copies[c], (v - u - s - 1) % P, c, u, v))
        candidates.sort()
        link_left = {(u, v): bw * rounds_per_step for u, v, bw in links}
        group_left = [bw * rounds_per_step for _, _, bw in groups]
        arriving: set[tuple[int, int]] = set()
        sends = []
        for _, _, _, c, u, v in candidates:
            if (v, c) in arriving or link_left[u, v] == 0:
                continue
            gs = group_of.get((u, v), [])
            if any(group_left[g] == 0 for g in gs):
                continue
            link_left[u, v] -= 1
            for g in gs:
                group_left[g] -= 1
            arriving.add((v, c))
            sends.append(Send(coll.address[c], u, v))
        if not sends:
            return None
        for v, c in arriving:
            holds[v].add(c)
        steps.append(Step(rounds_per_step, sorted(sends)))
    if any(c not in holds[r] for r, c in coll.post):
        return None
    return Schedule(topo, coll, steps)
