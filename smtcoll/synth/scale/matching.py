"""Allgather on machines of several nodes with wide links inside a node: every link full, rarest first.

Where a rank receives over several links at once (an MI250 GCD: its pair at width 4, others at width 2
and 1, its NIC), the holdings bound (bounds.holdings) needs every in-link to bring a chunk its
destination lacks in every round. Per round:
- the links a switch group bounds (the NICs between nodes) take, greedily and within every group's
  capacity, a chunk the destination's node neither holds nor receives this round (the fewest copies in
  the machine first), else one the destination lacks;
- the other links into each rank are an assignment problem: the rank's in-link slots (a link of width b
  is b slots) against the chunks its in-neighbours hold and it lacks, each chunk once, at least cost,
  where a chunk costs how many ranks of the node hold or receive it (the rarest first keeps neighbours
  holding different chunks, so the links stay full in later rounds), less LOOKAHEAD for each of the
  rank's out-neighbours that lacks it (it can pass it on next round). scipy's `linear_sum_assignment`
  solves it exactly, and an impossible pair costs more than all possible ones together, so the most
  slots are filled first.
"""

from __future__ import annotations

import numpy as np

from smtcoll.bounds.entry import node_of
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.scale.translate import allgather_shape

WORK_LIMIT = 50_000_000  # slots x candidate chunks summed over the rounds: a few CPU seconds at most
# a chunk costs less by this much per out-neighbour (over the node's links) that lacks it: the rank can pass
# it on next round (mi250 x 8: 18 steps, 19 without; x 2, 3, 4 unchanged: 6, 8, 10)
LOOKAHEAD = 4.0


def matched_allgather(topo: Topology, coll: Collective, max_steps: int,
                      lookahead: float = LOOKAHEAD) -> Schedule | None:
    """The schedule (module docstring), or None when the collective is not Allgather-shaped, the machine
    has one node, no link is outside every switch group, or it runs out of steps or work."""
    from scipy.optimize import linear_sum_assignment

    own = allgather_shape(coll)
    listed = node_of(topo)
    if own is None or listed is None:
        return None
    nodes = np.array(listed)
    p, k = coll.ranks, coll.chunks
    n = int(nodes.max()) + 1
    bw = {(l.src, l.dst): l.bandwidth for l in topo.links}
    groups_of = {key: topo.switches_of(*key) for key in bw}
    grouped_in: dict[int, list[int]] = {}
    free_in: dict[int, list[tuple[int, int]]] = {}
    for (u, v) in sorted(bw):
        if groups_of[(u, v)]:
            grouped_in.setdefault(v, []).append(u)
        else:
            free_in.setdefault(v, []).append((u, bw[(u, v)]))
    if not free_in:
        return None
    free_out: dict[int, list[int]] = {}
    for v, links in free_in.items():
        for u, _ in links:
            free_out.setdefault(u, []).append(v)
    have = np.zeros((p, k), dtype=bool)
    for r, cs in enumerate(own):
        have[r, cs] = True
    onehot = (nodes[None, :] == np.arange(n)[:, None]).astype(np.int32)
    caps = [g.bandwidth for g in topo.switches]
    work = 0
    steps: list[Step] = []
    for s in range(max_steps):
        if have.all():
            return Schedule(topo, coll, steps)
        incoming = np.zeros((p, k), dtype=bool)
        in_node = onehot @ have.astype(np.int32)  # per node and chunk: holders, then + arrivals
        copies = have.sum(axis=0)
        left = list(caps)
        sends: list[tuple[int, int, int]] = []
        order = list(range(p))
        order = order[s % p:] + order[:s % p]
        # the NICs (links in switch groups): one chunk the node lacks per link and group capacity
        for v in order:
            us = grouped_in.get(v, [])
            if not us:
                continue
            nv = nodes[v]
            rot = (s + v) % len(us)
            for u in us[rot:] + us[:rot]:
                room = min([bw[(u, v)]] + [left[g] for g in groups_of[(u, v)]])
                if room <= 0:
                    continue
                fresh = np.nonzero(have[u] & (in_node[nv] == 0))[0]
                if not len(fresh):
                    fresh = np.nonzero(have[u] & ~have[v] & ~incoming[v])[0]
                    if not len(fresh):
                        continue
                    take = fresh[np.lexsort((fresh, in_node[nv, fresh]))[:room]]
                else:
                    take = fresh[np.lexsort((fresh, copies[fresh]))[:room]]
                for g in groups_of[(u, v)]:
                    left[g] -= len(take)
                incoming[v, take] = True
                in_node[nv, take] += 1
                sends.extend((int(coll.address[c]), u, v) for c in take)
        # the other links: per receiver, its slots against the chunks its in-neighbours can give it
        for v in order:
            links = free_in.get(v, [])
            if not links:
                continue
            nv = nodes[v]
            lacks = ~have[v] & ~incoming[v]
            slot_src = [u for u, b in links for _ in range(b)]
            offer = have[slot_src] & lacks[None, :]
            cand = np.nonzero(offer.any(axis=0))[0]
            if not len(cand):
                continue
            work += len(slot_src) * len(cand)
            if work > WORK_LIMIT:
                return None
            cost = in_node[nv, cand].astype(np.float64)
            if lookahead and free_out.get(v):
                outs = free_out[v]
                cost = cost - lookahead * (~have[outs][:, cand] & ~incoming[outs][:, cand]).sum(axis=0)
                cost = cost - cost.min()
            big = float(cost.sum() + 1) * len(slot_src) + 1
            m = np.where(offer[:, cand], cost[None, :], big)
            rows, cols = linear_sum_assignment(m)
            ok = m[rows, cols] < big
            for r_, c_ in zip(rows[ok], cols[ok]):
                c = int(cand[c_])
                incoming[v, c] = True
                in_node[nv, c] += 1
                sends.append((int(coll.address[c]), slot_src[r_], v))
        if not sends:
            return None
        have |= incoming
        steps.append(Step(1, [Send(*x) for x in sorted(sends)]))
    return Schedule(topo, coll, steps) if have.all() else None
