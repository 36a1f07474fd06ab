"""Allgather on machines of several nodes: a conveyor ring inside each node, the NICs feeding it.

The NICs are the scarce links between nodes and a rank's incoming bandwidth is what the receive bound
counts, so a schedule at that bound keeps every rank receiving a new chunk every round. Inside each node
the ranks form a ring (its ranks in order, when those links exist). Each round every rank forwards to its
successor the chunk it received from its predecessor in the round before (a conveyor: once full it stays
full); when the successor already holds that chunk (it went round the whole node), the rank puts a fresh
chunk on the ring instead: one that no rank of the node has carried yet, that is its own or one that
arrived through its NIC. Between nodes every NIC link carries chunks its destination's node neither holds
nor receives this round (each chunk enters a node once), the rarest first. With `fill`, the capacity
the ring leaves on the node's other links carries chunks its destination lacks, the rarest in the node
first (machines whose ranks receive over several links at once).

On the DGX-2 cluster (a switch per node, one chunk in and out of each GPU per round) the ring alone meets
the receive bound, 255 rounds for 256 ranks: every chunk circles a node in 15 hops, the two GPUs per NIC
re-fill their two conveyor slots every 16 rounds with a chunk the NIC brought in.
"""

from __future__ import annotations

import numpy as np

from smtcoll.bounds.entry import node_of
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.scale.translate import allgather_shape


def ring_allgather(topo: Topology, coll: Collective, max_steps: int, fill: bool = False,
                   matched: bool = False) -> Schedule | None:
    """The conveyor schedule (module docstring), or None when the collective is not Allgather-shaped,
    the machine has one node, a node's ranks in order do not form a ring of links, or it runs out of
    steps."""
    own = allgather_shape(coll)
    listed = node_of(topo)
    if own is None or listed is None:
        return None
    nodes = np.array(listed)
    p, k = coll.ranks, coll.chunks
    n = int(nodes.max()) + 1
    members = [[r for r in range(p) if nodes[r] == i] for i in range(n)]
    bw = {(l.src, l.dst): l.bandwidth for l in topo.links}
    succ = {}
    for ms in members:
        ring = _ring(ms, bw)
        if ring is None:
            return None
        for i, x in enumerate(ring):
            succ[x] = ring[(i + 1) % len(ring)]
    groups_of = {key: topo.switches_of(*key) for key in bw}
    remote = sorted(key for key in bw if nodes[key[0]] != nodes[key[1]])
    local = sorted(key for key in bw if nodes[key[0]] == nodes[key[1]])
    have = np.zeros((p, k), dtype=bool)
    for r, cs in enumerate(own):
        have[r, cs] = True
    carried = np.zeros((n, k), dtype=bool)  # chunks that have been on node i's ring
    last = [-1] * p  # the chunk each rank received from its ring predecessor in the previous round
    onehot = (nodes[None, :] == np.arange(n)[:, None]).astype(np.int32)
    imported = [0] * p
    partner: dict[int, int] = {}  # with `matched`: each NIC sender's destination in the round before
    # each receiver imports at most its share of what its node lacks: one NIC taking more than its
    # share leaves another's ring slots without fresh chunks late in the schedule
    receivers = {v for _, v in remote}
    share = [0] * p
    for ms in members:
        mine = [v for v in ms if v in receivers]
        lacking = k - int(have[ms].any(axis=0).sum())
        for v in mine:
            share[v] = -(-lacking // len(mine))
    # one round's state, reset every round
    caps = [g.bandwidth for g in topo.switches]
    left = list(caps)
    incoming = np.zeros((p, k), dtype=bool)
    arriving = np.zeros((n, k), dtype=bool)
    sends: list[tuple[int, int, int]] = []
    used: dict[tuple[int, int], int] = {}

    def room(u: int, v: int) -> int:
        return min([bw[(u, v)] - used.get((u, v), 0)] + [left[g] for g in groups_of[(u, v)]])

    def send(u: int, v: int, take: np.ndarray) -> None:
        incoming[v, take] = True
        arriving[nodes[v], take] = True
        for g in groups_of[(u, v)]:
            left[g] -= len(take)
        used[(u, v)] = used.get((u, v), 0) + len(take)
        sends.extend((int(coll.address[c]), u, v) for c in take)

    steps: list[Step] = []
    for s in range(max_steps):
        if have.all():
            break
        in_node = onehot @ have.astype(np.int32)
        node_has = in_node > 0
        copies = have.sum(axis=0)
        left[:] = caps
        incoming[:] = False
        arriving[:] = False
        sends.clear()
        used.clear()
        now = [-1] * p
        for x in range(p):
            y = succ[x]
            if room(x, y) <= 0:
                continue
            c = last[x]
            if c < 0 or have[y, c] or incoming[y, c]:
                # only a fresh chunk (the ring has not carried it): one already on the ring reaches
                # y anyway, and a second copy would break the conveyor where the two meet
                cand = np.nonzero(have[x] & ~have[y] & ~incoming[y] & ~carried[nodes[x]])[0]
                if not len(cand):
                    continue
                c = int(cand[np.lexsort((cand, in_node[nodes[x], cand]))[0]])
            carried[nodes[x], c] = True
            now[y] = c
            incoming[y, c] = True
            arriving[nodes[y], c] = True
            for gi in groups_of[(x, y)]:
                left[gi] -= 1
            used[(x, y)] = 1
            sends.append((int(coll.address[c]), x, y))
        # the receivers that imported the fewest chunks first: a node's imports spread evenly over
        # its NICs, so each receiver has fresh chunks for its ring slots when they come round
        if matched and remote:
            for u, v in _nic_matching(remote, partner, have, node_has, nodes, imported, share):
                nv = nodes[v]
                cand = np.nonzero(have[u] & ~node_has[nv] & ~arriving[nv])[0]
                if len(cand) and room(u, v) > 0:
                    take = cand[np.lexsort((cand, copies[cand]))[:1]]
                    imported[v] += 1
                    partner[u] = v
                    send(u, v, take)
        rot = s % len(remote) if remote else 0
        open_ = [key for key in remote[rot:] + remote[:rot] if imported[key[1]] < share[key[1]]]
        for u, v in sorted(open_, key=lambda key: imported[key[1]]):
            cap = min(room(u, v), share[v] - imported[v])
            if cap <= 0:
                continue
            nv = nodes[v]
            cand = np.nonzero(have[u] & ~node_has[nv] & ~arriving[nv])[0]
            if len(cand):
                take = cand[np.lexsort((cand, copies[cand]))[:cap]]
                imported[v] += len(take)
                send(u, v, take)
        if fill:
            for u, v in local:
                cap = room(u, v)
                if cap <= 0:
                    continue
                cand = np.nonzero(have[u] & ~have[v] & ~incoming[v])[0]
                if len(cand):
                    send(u, v, cand[np.lexsort((cand, in_node[nodes[u], cand]))[:cap]])
        if not sends:
            return None
        have |= incoming
        last = now
        steps.append(Step(1, [Send(*x) for x in sorted(sends)]))
    if not have.all():
        return None
    return Schedule(topo, coll, steps)


def _nic_matching(remote: list[tuple[int, int]], partner: dict[int, int], have: np.ndarray,
                  node_has: np.ndarray, nodes: np.ndarray, imported: list[int], share: list[int]
                  ) -> list[tuple[int, int]]:
    """The most NIC links (one per sender and receiver) that can carry a chunk the receiver's node lacks,
    the sender's destination of the round before preferred (a fixed node ring keeps every NIC busy)."""
    from scipy.optimize import linear_sum_assignment

    senders = sorted({u for u, _ in remote})
    receivers = sorted({v for _, v in remote})
    si = {u: i for i, u in enumerate(senders)}
    ri = {v: i for i, v in enumerate(receivers)}
    big = 4.0 * (len(senders) + len(receivers)) + 4
    cost = np.full((len(senders), len(receivers)), big)
    for u, v in remote:
        if imported[v] < share[v] and (have[u] & ~node_has[nodes[v]]).any():
            cost[si[u], ri[v]] = 0.0 if partner.get(u) == v else 1.0
    rows, cols = linear_sum_assignment(cost)
    return [(senders[a], receivers[b]) for a, b in zip(rows, cols) if cost[a, b] < big]


RING_SEARCH_LIMIT = 100_000  # DFS extensions per node before giving up on a ring


def _ring(members: list[int], bw: dict[tuple[int, int], int]) -> list[int] | None:
    """A directed Hamiltonian cycle through the node's ranks over its links: the ranks in order when
    those links exist, else the first a depth-first search finds (lowest rank first; nodes are small,
    and the search gives up after RING_SEARCH_LIMIT extensions). Hand-written: networkx has no
    Hamiltonian cycle search for directed graphs."""
    if len(members) < 2:
        return None
    if all((x, members[(i + 1) % len(members)]) in bw for i, x in enumerate(members)):
        return members
    inside = set(members)
    out = {x: sorted(y for y in inside if (x, y) in bw) for x in members}
    start = members[0]
    path, seen = [start], {start}
    stack = [iter(out[start])]
    budget = RING_SEARCH_LIMIT
    while stack and budget > 0:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            seen.discard(path.pop())
            continue
        budget -= 1
        if nxt in seen:
            continue
        path.append(nxt)
        seen.add(nxt)
        if len(path) == len(members):
            if (nxt, start) in bw:
                return path
            seen.discard(path.pop())
            continue
        stack.append(iter(out[nxt]))
    return None
