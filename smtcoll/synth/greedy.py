"""The greedy schedule of non-combining collectives: a cheap upper bound on the steps, on any topology.

Per step, a candidate send is a link u -> v and a chunk u holds and v lacks, where v needs the chunk or is
closer to a rank that still needs it; candidates are taken while the link's and its switch groups'
capacity allow, and a rank receives a chunk once. Two orders of the candidates, each best somewhere (the
engine runs both where it can afford to and keeps the better schedule):
- `farthest`: all the step's candidates at once, the longest remaining way first, then the rarest chunk,
  then the pairs rotated by the step (u sends to u + s + 1 first: a perfect matching on switches; measured
  best of 4 orders). Best on switches (DGX-2, hub-and-spoke, A100 Allgather). It caps the exact search's
  least-steps (an extra step never hurts, so the solver only decides the step counts below it), and when
  it meets the lower bound it is optimal with no solver call.
- `links`: link by link in an order rotated by the step (TACOS's link-chunk matching), each taking its
  candidates farthest first, then the rarest, then rotated by step and source. The distance to the ranks
  still missing a chunk is exact only for chunks fewer than RELAY_NEEDERS ranks miss (Alltoall, Gather);
  the others (Allgather-like) go only where they are needed. Cheaper, for the engine at any size.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np

from smtcoll.model import Collective, Schedule, Send, Step, Topology

Order = Literal["farthest", "links"]

# `links`: chunks missing at no more than this many ranks get exact relay distances (Alltoall, Gather);
# the others (Allgather-like: every rank that lacks them needs them) are sent only where needed
RELAY_NEEDERS = 8
FAR = 1 << 20  # the distance of a chunk no rank misses (more than any hop count, unreachable included)
UNREACHABLE = 1 << 19


def greedy_schedule(topo: Topology, coll: Collective, max_steps: int, rounds_per_step: int = 1,
                    deadline: float | None = None, order: Order = "farthest") -> Schedule | None:
    """The greedy schedule with `rounds_per_step` rounds in every step (links carry that many times their
    bandwidth), or None: a combining collective, a stall (a rank that cannot be reached), out of steps, or
    past `deadline` (of time.monotonic())."""
    if coll.is_combining:
        return None
    p, k = coll.ranks, coll.chunks
    dist = distances(topo)
    have = np.zeros((p, k), dtype=bool)
    need = np.zeros((p, k), dtype=bool)
    for r, c in coll.pre:
        have[r, c] = True
    for r, c in coll.post:
        need[r, c] = True
    links = sorted((l.src, l.dst, l.bandwidth) for l in topo.links)
    groups_of = [topo.switches_of(u, v) for u, v, _ in links]
    address = np.array(coll.address)
    relay = k if order == "farthest" else RELAY_NEEDERS  # farthest: exact distances for every chunk
    steps: list[Step] = []
    for s in range(max_steps):
        missing = need & ~have
        if not missing.any():
            break
        copies = have.sum(axis=0)
        # target[v, c]: hops from v to the nearest rank missing c (0 where v misses it)
        count = missing.sum(axis=0)
        few = np.nonzero((count <= relay) & (count > 0))[0]
        target = np.where(missing, 0, FAR)
        # a chunk one rank misses (every chunk of Alltoall): its column of distances, all at once
        # (ndv2 x 8 Alltoall: 829,000 one-column minima, 2.8 s of 12)
        one = few[count[few] == 1]
        target[:, one] = dist[:, missing[:, one].argmax(axis=0)]
        for ci in few[count[few] > 1]:
            target[:, ci] = dist[:, missing[:, ci]].min(axis=1)
        pick = _farthest if order == "farthest" else _by_links
        sends = pick(s, p, k, links, groups_of, [g.bandwidth * rounds_per_step for g in topo.switches],
                     rounds_per_step, have, target, copies, deadline)
        if not sends:
            return None
        for c, _, v in sends:
            have[v, c] = True
        # sorted as tuples, then made Sends: sorting the attrs instances costs more than the step itself
        steps.append(Step(rounds_per_step, [Send(*x) for x in sorted((int(address[c]), u, v) for c, u, v in sends)]))
    if (need & ~have).any():
        return None
    return Schedule(topo, coll, steps)


def _farthest(s: int, p: int, k: int, links: list[tuple[int, int, int]], groups_of: list[list[int]],
              group_left: list[int], rps: int, have: np.ndarray, target: np.ndarray, copies: np.ndarray,
              deadline: float | None) -> list[tuple[int, int, int]] | None:
    """One step, every candidate of every link in one order: (chunk, src, dst) of the sends taken."""
    lis: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    for li, (u, v, _) in enumerate(links):
        if deadline is not None and time.monotonic() >= deadline:
            return None
        cand = np.nonzero(have[u] & ~have[v] & (target[v] < target[u]))[0]
        if len(cand):
            lis.append(np.full(len(cand), li))
            cs.append(cand)
    if not cs:
        return []
    li_all, c_all = np.concatenate(lis), np.concatenate(cs)
    src = np.array([u for u, _, _ in links])[li_all]
    dst = np.array([v for _, v, _ in links])[li_all]
    # the longest remaining way first, then the rarest chunk, then the pairs rotated by the step, chunk, pair
    keys = (dst, src, c_all, (dst - src - s - 1) % p, copies[c_all], -target[src, c_all])
    link_left = [bw * rps for _, _, bw in links]
    arriving: set[tuple[int, int]] = set()
    sends: list[tuple[int, int, int]] = []
    for i in np.lexsort(keys):
        li, c = int(li_all[i]), int(c_all[i])
        u, v, _ = links[li]
        if (v, c) in arriving or link_left[li] == 0 or any(group_left[g] == 0 for g in groups_of[li]):
            continue
        link_left[li] -= 1
        for g in groups_of[li]:
            group_left[g] -= 1
        arriving.add((v, c))
        sends.append((c, u, v))
    return sends


def _by_links(s: int, p: int, k: int, links: list[tuple[int, int, int]], groups_of: list[list[int]],
              group_left: list[int], rps: int, have: np.ndarray, target: np.ndarray, copies: np.ndarray,
              deadline: float | None) -> list[tuple[int, int, int]] | None:
    """One step, link by link in a rotated order: (chunk, src, dst) of the sends taken."""
    incoming = np.zeros((p, k), dtype=bool)
    sends: list[tuple[int, int, int]] = []
    rot = s % len(links)
    for li in list(range(rot, len(links))) + list(range(rot)):
        if deadline is not None and time.monotonic() >= deadline:
            return None
        u, v, bw = links[li]
        gs = groups_of[li]
        cap = min([bw * rps] + [group_left[g] for g in gs])
        if cap <= 0:
            continue
        cand = np.nonzero(have[u] & ~have[v] & ~incoming[v] & (target[v] < target[u]))[0]
        if not len(cand):
            continue
        # farthest first, then the rarest, then a rotation by step and source
        take = cand[np.lexsort(((cand - u - s) % k, copies[cand], -target[u, cand]))[:cap]]
        incoming[v, take] = True
        for g in gs:
            group_left[g] -= len(take)
        sends += [(int(c), u, v) for c in take]
    return sends


def distances(topo: Topology) -> np.ndarray:
    """Hops between every pair of ranks (UNREACHABLE where no path leads)."""
    if topo.ranks <= 256:  # the model's breadth-first search: no scipy import for small topologies
        out = np.full((topo.ranks, topo.ranks), UNREACHABLE, dtype=np.int64)
        for r, row in topo.distances.items():
            out[r, list(row)] = list(row.values())
        return out
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import shortest_path

    p = topo.ranks
    src = np.array([l.src for l in topo.links], dtype=np.int64)
    dst = np.array([l.dst for l in topo.links], dtype=np.int64)
    d = shortest_path(csr_array((np.ones(len(src)), (src, dst)), shape=(p, p)), unweighted=True)
    return np.where(np.isinf(d), UNREACHABLE, d).astype(np.int64)
