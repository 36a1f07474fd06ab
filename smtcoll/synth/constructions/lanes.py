"""Allreduce across two nodes whose ranks are all linked inside a node (a switch: dgx2, a100) as a pairwise
exchange that feeds the NIC lanes, for NICs that are not one per GPU in both directions (a DGX-2: the odd
GPUs send, the even ones receive), where `pairwise` does not apply.

The buffer is cut into one block per lane (a NIC link from one node to the other, at most one lane per
sender and per receiver), each block into pieces. A block of lane s -> g is reduced, piece by piece, into
s in the sender's node and into g in the receiver's node (every rank sends its share straight to the
collector, in shifted slots: s to s + k in slot k, every port serving one piece at a time), s sends its
node's partial across, and g, which holds the full sum, broadcasts it: to every rank of its node and,
through the sender of a lane back (a rank of its node, which receives it anyway), to that lane's receiver,
which broadcasts it in the other node. So every rank collects one block (a sender one block, a receiver
one: the same share of the buffer), every address crosses each node's ports 2(p - 1) times and the NICs
twice: the multi-rail decomposition (`rail`) without the rings' p - 1 hops to fill and drain.

The broadcasts start only at the lanes' receivers. Where those are not every rank of a node (a DGX-2: the
even GPUs), each sends a piece to a partner first (a rank that starts no broadcast, the lane back's sender
when there is one) and the two serve half the node each, so every port's egress is the average.
Ordered in time (`pipeline.timed_schedule`: the NICs ten times slower than the ports, message latencies),
or in rounds when that replays faster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.constructions.common import NotApplicable
from smtcoll.synth.constructions.hier import across_nodes
from smtcoll.synth.constructions.pipeline import (
    Plan,
    busiest_link,
    hop_latencies,
    replay_time,
    schedule_transfers,
    timed_schedule,
)

MAX_SENDS_PER_RANK = 1024  # a rank's sends over the program at most: the runtimes' 4096 XML nodes per rank
OPS_PER_LINK = 96  # messages per connection at most: the lowering spreads more than 48 over two channels


def lanes(topo: Topology, base: Collective) -> Schedule:
    """The Allreduce of the module docstring, checked by the caller."""
    what, node, n, members = across_nodes(topo, base, "multi-rail exchange")
    if what != "allreduce":
        raise NotApplicable("the multi-rail exchange is an Allreduce (pairwise covers the others)")
    if n != 2:
        raise NotApplicable("the multi-rail exchange is for two nodes")
    p = len(members[0])
    if len(members[1]) != p:
        raise NotApplicable("nodes of unequal size")
    for m in members:
        for s in m:
            for d in m:
                if s != d and not topo.has_link(s, d):
                    raise NotApplicable(f"no link {s} -> {d}: the exchange inside a node needs every pair linked")
    local = {r: i for m in members for i, r in enumerate(m)}
    if all(topo.has_link(r, m[local[r]]) for x, m in enumerate(members) for r in members[1 - x]):
        raise NotApplicable("every rank has a rail (the same local rank in the other node): pairwise")
    links = [_lanes(topo, node, x, 1 - x, local) for x in range(2)]
    blocks = [lane for x in range(2) for lane in links[x]]
    # each piece: a rank sends about 2 (p - 1) / p of a share per block, plus its lanes
    per_piece = max(1, 2 * len(blocks))
    c = max(1, min(OPS_PER_LINK // 2, MAX_SENDS_PER_RANK // per_piece))
    while True:
        coll = base.with_chunks(len(blocks) * c)
        plan = _plan(topo, node, members, links, blocks, c)
        if busiest_link(plan) <= OPS_PER_LINK or c == 1:
            break
        c = max(1, c * OPS_PER_LINK // busiest_link(plan))
    lat = hop_latencies(topo, node, coll.chunk_factor)
    steps = min((schedule_transfers(topo, plan), timed_schedule(topo, plan, lat)),
                key=lambda s: replay_time(topo, s, lat))
    return Schedule(topo, coll, steps, name="lanes")


def _lanes(topo: Topology, node: Sequence[int], x: int, y: int, local: dict[int, int]) -> list[tuple[int, int]]:
    """Links from node x to node y with distinct senders and distinct receivers: each sender its rail (the
    receiver of the same local index) when linked, else the first receiver not yet taken."""
    links: dict[int, list[int]] = {}
    for l_ in topo.links:
        if node[l_.src] == x and node[l_.dst] == y:
            links.setdefault(l_.src, []).append(l_.dst)
    if not links:
        raise NotApplicable(f"no link from node {x} to node {y}")
    out, taken = [], set()
    for s in sorted(links):
        free = [d for d in sorted(links[s]) if d not in taken]
        same = [d for d in free if local[d] == local[s]]
        if free:
            g = (same or free)[0]
            taken.add(g)
            out.append((s, g))
    return out


def _plan(topo: Topology, node: Sequence[int], members: list[list[int]], lanes: list[list[tuple[int, int]]],
          blocks: list[tuple[int, int]], c: int) -> Plan:
    p = len(members[0])
    pos = {r: i for m in members for i, r in enumerate(m)}

    def peer(r: int, k: int) -> int:
        m = members[node[r]]
        return m[(pos[r] + k) % p]

    collect: dict[int, list[int]] = {}  # rank -> the blocks it collects
    for b, (s, g) in enumerate(blocks):
        collect.setdefault(s, []).append(b)
        collect.setdefault(g, []).append(b)
    # the lane back for each block (from the receiver's node): the one whose sender is g, else rotating
    back: list[tuple[int, int]] = []
    turn = [0, 0]
    for _s, g in blocks:
        y = node[g]
        own = [lane for lane in lanes[y] if lane[0] == g]
        if own:
            back.append(own[0])
        else:
            back.append(lanes[y][turn[y] % len(lanes[y])])
            turn[y] += 1
    origins = [{g for _, g in blocks if node[g] == x} for x in range(2)]  # ranks that start broadcasts
    spare = [[r for r in members[x] if r not in origins[x]] for x in range(2)]
    senders = [[lane[0] for lane in lanes[x] if lane[0] in spare[x]] for x in range(2)]
    partner_turn = [0, 0]

    def partner(origin: int, prefer: int | None) -> int | None:
        x = node[origin]
        if not spare[x]:
            return None
        if prefer is not None and prefer in spare[x]:
            return prefer
        pool = [r for r in spare[x] if r not in senders[x]] or spare[x]
        partner_turn[x] += 1
        return pool[partner_turn[x] % len(pool)]

    plan = Plan()
    for t in range(c):
        into: dict[int, list[int]] = {}  # address -> transfers into its full sum's rank
        partial: dict[int, list[int]] = {}  # address -> shares into its lane's sender
        for k in range(1, p):
            for r in range(topo.ranks):
                d = peer(r, k)
                for b in collect.get(d, []):
                    a = b * c + t
                    x = plan.add(a, r, d)
                    (partial if blocks[b][0] == d else into).setdefault(a, []).append(x)
        for b, (s, g) in enumerate(blocks):
            a = b * c + t
            into.setdefault(a, []).append(plan.add(a, s, g, partial.get(a, [])))
        for b, (_s, g) in enumerate(blocks):
            a = b * c + t
            bs, bg = back[b]
            arrival = _broadcast(plan, a, g, partner(g, bs), into[a], peer, p)
            crossed = plan.add(a, bs, bg, [arrival[bs]] if bs in arrival else into[a])
            _broadcast(plan, a, bg, partner(bg, None), [crossed], peer, p)
    return plan


def _broadcast(plan: Plan, a: int, origin: int, mate: int | None, after: list[int], peer: Callable[[int, int], int],
               p: int) -> dict[int, int]:
    """Address a from `origin` to every rank of its node once `after` arrived there: straight, in shifted
    slots, or with `mate` relaying to every other peer (the origin sends to the mate first)."""
    arrival: dict[int, int] = {}
    others = [peer(origin, k) for k in range(1, p) if peer(origin, k) != mate]
    if mate is None:
        for v in others:
            arrival[v] = plan.add(a, origin, v, after)
        return arrival
    arrival[mate] = plan.add(a, origin, mate, after)
    for i, v in enumerate(others):  # every other one: the origin sends p / 2 in all, the mate p / 2 - 1
        if i % 2 == 0:
            arrival[v] = plan.add(a, origin, v, after)
        else:
            arrival[v] = plan.add(a, mate, v, [arrival[mate]])
    return arrival
