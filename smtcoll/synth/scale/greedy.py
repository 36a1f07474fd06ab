"""A link-chunk matching per step on any topology (TACOS's idea, deterministic, with numpy).

Each step, every link in turn (a rotation of the links, so no link is always last) takes the chunks
its source holds and its destination lacks and either needs or is closer to a rank that needs it,
up to its bandwidth and its switch groups' remaining bandwidth: the farthest from the ranks still
missing it first, then the rarest, then a rotation by step. A rank receives a chunk once. Every
schedule it returns is checked by the engine; it is an upper bound, and its gap to the lower bound is
reported.
"""

from __future__ import annotations

import numpy as np

from smtcoll.model import Collective, Schedule, Send, Step, Topology

# Chunks still missing at no more than this many ranks get exact relay distances (Alltoall, Gather);
# the others (Allgather-like: every rank that lacks them needs them) are sent only where needed.
RELAY_NEEDERS = 8


def greedy_schedule(topo: Topology, coll: Collective, max_steps: int, rounds_per_step: int = 1) -> Schedule | None:
    """The greedy schedule with `rounds_per_step` rounds in every step (links carry that many times
    their bandwidth), or None when it stalls (a rank that cannot be reached) or runs out of steps."""
    if coll.is_combining:
        return None
    p, k = coll.ranks, coll.chunks
    dist = _distances(topo)
    have = np.zeros((p, k), dtype=bool)
    need = np.zeros((p, k), dtype=bool)
    for r, c in coll.pre:
        have[r, c] = True
    for r, c in coll.post:
        need[r, c] = True
    links = sorted((l.src, l.dst, l.bandwidth) for l in topo.links)
    groups_of = [[i for i, g in enumerate(topo.switches) if u in g.srcs and v in g.dsts] for u, v, _ in links]
    address = np.array(coll.address)
    steps: list[Step] = []
    far = 1 << 20
    for s in range(max_steps):
        missing = need & ~have
        if not missing.any():
            break
        copies = have.sum(axis=0)
        # target[v, c]: hops from v to the nearest rank missing c (0 where v misses it)
        few = np.nonzero((missing.sum(axis=0) <= RELAY_NEEDERS) & missing.any(axis=0))[0]
        target = np.where(missing, 0, far)
        for ci in few:
            target[:, ci] = dist[:, missing[:, ci]].min(axis=1)
        group_left = [g.bandwidth * rounds_per_step for g in topo.switches]
        incoming = np.zeros((p, k), dtype=bool)
        sends: list[tuple[int, int, int]] = []
        rot = s % len(links)
        for li in list(range(rot, len(links))) + list(range(rot)):
            u, v, bw = links[li]
            gs = groups_of[li]
            cap = min([bw * rounds_per_step] + [group_left[g] for g in gs])
            if cap <= 0:
                continue
            cand = np.nonzero(have[u] & ~have[v] & ~incoming[v] & (target[v] < target[u]))[0]
            if not len(cand):
                continue
            # farthest first, then the rarest, then a rotation by step and source
            order = np.lexsort(((cand - u - s) % k, copies[cand], -target[u, cand]))
            take = cand[order[:cap]]
            incoming[v, take] = True
            for g in gs:
                group_left[g] -= len(take)
            sends += [(int(address[c]), u, v) for c in take]
        if not sends:
            return None
        have |= incoming
        steps.append(Step(rounds_per_step, [Send(*x) for x in sorted(sends)]))
    if (need & ~have).any():
        return None
    return Schedule(topo, coll, steps)


def _distances(topo: Topology) -> np.ndarray:
    if topo.ranks <= 256:  # the model's breadth-first search: no scipy import for small topologies
        out = np.full((topo.ranks, topo.ranks), 1 << 19, dtype=np.int64)
        for r, row in topo.distances.items():
            out[r, list(row)] = list(row.values())
        return out
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    p = topo.ranks
    src = [l.src for l in topo.links]
    dst = [l.dst for l in topo.links]
    d = shortest_path(csr_matrix((np.ones(len(src)), (src, dst)), shape=(p, p)), unweighted=True)
    return np.where(np.isinf(d), 1 << 19, d).astype(np.int64)
