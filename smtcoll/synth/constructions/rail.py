"""Multi-rail hierarchical collectives across nodes: every NIC at once, overlapped with rings inside the nodes.

A rank's share is cut into `c` pieces (items). Inside every node, the node's rings (`rings.find_rings`, the
same in every node) move the items; between two nodes an item crosses on one NIC pair (a lane: a sender
and a receiver on the same rail), the least loaded lane, the owner's own NIC when it has one, so that every
NIC carries the same share. The order of the rounds makes the NIC and the rings overlap:

- Allgather: the rings first carry the node's own items (no wait), while each item crosses to the other
  nodes as soon as its lane's sender holds it; then the rings carry the items that arrived, in the order
  they arrive (each round item r of every ring position, p - 1 hops).
- ReduceScatter, the mirror: the rings first sum the items owned in other nodes, each ending at its lane's
  sender, which sends the node's partial at once; then they sum the node's own items, the lane's receiver
  adding the partials that arrived.
- Allreduce: that ReduceScatter, then that Allgather (C = N x c addresses): 2(n - 1)/n of the buffer
  through each node's NICs (the NIC cut bound) and 2(p - 1)/p through each rank's links.

The steps are ordered so that every thread block's operations come in the order their data arrives (the
runtime, and the sweep's model, run a connection's transfers in step order). Blue Connect (Cho et al.,
2019) and NCCL's rail-aligned PXN follow the same decomposition; docs/synth.md says when it reaches the
bound.
"""

from __future__ import annotations

from collections.abc import Sequence

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable, send_key
from smtcoll.synth.constructions.hier import across_nodes

MAX_RINGS = 3  # rings per node at most (a DGX-1 has 6): each adds thread blocks per rank and channel, and
# the runtime's dependency ids are int8_t (at most 127 thread blocks per rank can be waited on): with 3 the
# program still lowers with 8 instances
OPS = 40  # transfers per ring link at most: the executor's thread blocks hold 64 steps, nops included

Ring = tuple[int, ...]


class _Lanes:
    """The NIC pairs from one node to another and the items on each; `pick` takes the least loaded,
    preferring one whose sender is `prefer` (no hop inside its node first)."""

    def __init__(self, topo: Topology, node: Sequence[int], members: list[list[int]]) -> None:
        local = {r: i for m in members for i, r in enumerate(m)}
        pairs: dict[tuple[int, int], dict[int, list[int]]] = {}
        for l in topo.links:
            a, b = node[l.src], node[l.dst]
            if a != b:
                pairs.setdefault((a, b), {}).setdefault(l.src, []).append(l.dst)
        self.lanes: dict[tuple[int, int], list[tuple[int, int]]] = {}
        n = len(members)
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                if (i, j) not in pairs:
                    raise NotApplicable(f"no link from node {i} to node {j}")
                lanes, used = [], set()
                for s, dsts in sorted(pairs[(i, j)].items()):
                    # the receiver of the same local rank (the rail's NIC), else one no other sender uses
                    same = [d for d in dsts if local[d] == local[s]]
                    free = [d for d in sorted(dsts) if d not in used]
                    d = same[0] if same else (free[0] if free else min(dsts))
                    used.add(d)
                    lanes.append((s, d))
                self.lanes[(i, j)] = lanes
        self.load: dict[tuple[int, int], int] = {}

    def pick(self, i: int, j: int, prefer: int) -> tuple[int, int]:
        best = min(self.lanes[(i, j)], key=lambda x: (self.load.get(x, 0) + (x[0] != prefer), x))
        self.load[best] = self.load.get(best, 0) + 1
        return best


class _Steps:
    """Sends by step index; `steps()` gives each step the rounds its busiest link or switch group needs."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.at: dict[int, list[Send]] = {}

    def add(self, step: int, send: Send) -> None:
        self.at.setdefault(step, []).append(send)

    def end(self) -> int:
        return max(self.at, default=-1) + 1

    def steps(self) -> list[Step]:
        out = []
        for i in sorted(self.at):
            load: dict[tuple[int, int], int] = {}
            for x in self.at[i]:
                load[(x.src, x.dst)] = load.get((x.src, x.dst), 0) + 1
            rounds = max(-(-c // self.topo.bandwidth(*k)) for k, c in load.items())
            used: dict[int, int] = {}
            for k, c in load.items():
                for g in self.topo.switches_of(*k):
                    used[g] = used.get(g, 0) + c
            rounds = max([rounds, *(-(-u // self.topo.switches[g].bandwidth) for g, u in used.items())])
            out.append(Step(rounds, sorted(self.at[i], key=send_key)))
        return out


def _ring_rounds(steps: _Steps, base: int, ring: Ring, lists: Sequence[Sequence[int]], gather: bool) -> dict:
    """Item r of every position in round r, p - 1 hops from step base + r (p - 1). Gather: the item starts
    at its position; reduce: it ends there (starting at the next one). Returns (address, rank) -> the step
    the address reaches that rank (gather) or leaves it (reduce, the last sender's step for its end)."""
    p = len(ring)
    reached: dict[tuple[int, int], int] = {}
    rounds = max((len(x) for x in lists), default=0)
    for r in range(rounds):
        for q, items in enumerate(lists):
            if r >= len(items):
                continue
            a = items[r]
            for h in range(p - 1):
                src = ring[(q + h) % p] if gather else ring[(q + 1 + h) % p]
                dst = ring[(q + h + 1) % p] if gather else ring[(q + 2 + h) % p]
                step = base + r * (p - 1) + h
                steps.add(step, Send(a, src, dst))
                reached[(a, dst)] = step
    return reached


def rail(topo: Topology, base: Collective) -> Schedule:
    what, node, n, members = across_nodes(topo, base, "multi-rail")
    p = len(members[0])
    if any(len(m) != p for m in members):
        raise NotApplicable("nodes of unequal size")
    local = _node_rings(topo, members[0])
    phases = 2 if what == "allreduce" else 1
    if phases == 2 and len(local) * OPS < 2 * topo.ranks:
        # fewer than two pieces per rank even on reversed rings: on a switch, a second ring (more pieces)
        local += _stride_rings(topo, members[0], local, 1)
    k = len(local)
    rings = [[tuple(members[x][i] for i in ring) for ring in local] for x in range(n)]
    # every ring link carries about n p c / k items per phase: as many pieces as the thread blocks hold;
    # an Allreduce runs its Allgather on the reversed rings (other connections: one phase each) when that
    # gives it more pieces per rank (its NICs' Allgather crossing then starts before the last ring round)
    split = phases == 2 and topo.ranks <= OPS * k and OPS * k // topo.ranks > OPS * k // (2 * topo.ranks)
    c = max(1, OPS * k // (topo.ranks * (1 if split else phases)))
    coll = base.with_chunks(c * (topo.ranks if what == "allreduce" else 1))
    steps = _Steps(topo)
    if what in ("reducescatter", "allreduce"):
        _reduce(steps, topo, node, members, rings, c)
    if what in ("allgather", "allreduce"):
        back = [[ring[::-1] for ring in rs] for rs in rings] if split else rings
        _gather(steps, topo, node, members, back, c, steps.end())
    return Schedule(topo, coll, steps.steps(), name="rail")


def _node_rings(topo: Topology, ranks: list[int]) -> list[Ring]:
    """The lane-disjoint rings inside one node, in its local numbering (one on a switch: more would share
    its ports and cost thread blocks without adding bandwidth; the instances add channels instead)."""
    found = ringlib.find_rings(ringlib.node_topology(topo, ranks))
    if not found:
        raise NotApplicable(f"no ring inside a node of {topo.name}")
    return list(found[:MAX_RINGS])


def _stride_rings(topo: Topology, ranks: list[int], have: list[Ring], want: int) -> list[Ring]:
    """Up to `want` more rings i -> i + d (mod P, d prime to P, local numbering) whose links exist and
    carry none of the rings in `have`: on a switch every GPU pair is linked, so each such ring is a
    connection of its own (more pieces per phase within a thread block's steps) on the same ports."""
    import math

    p = len(ranks)
    local = ringlib.node_topology(topo, ranks)
    links = {(l.src, l.dst) for l in local.links}
    used = {(r[i], r[(i + 1) % len(r)]) for r in have for i in range(len(r))}
    out: list[Ring] = []
    for d in range(2, p - 1):
        if len(out) >= want:
            break
        ring = tuple((i * d) % p for i in range(p))
        hops = {(ring[i], ring[(i + 1) % p]) for i in range(p)}
        if math.gcd(d, p) == 1 and hops <= links and not hops & used:
            out.append(ring)
            used |= hops
    return out


def _ring(o: int, j: int, k: int) -> int:
    """The ring of item (owner o, piece j): rotating with the owner, so that the rings share the items
    evenly even when an owner has fewer pieces than there are rings."""
    return (o + j) % k


def _gather(steps: _Steps, topo: Topology, node: list[int], members: list[list[int]],
            rings: list[list[Ring]], c: int, base: int) -> None:
    """Item (owner o, piece j) is address o*c + j; it rides ring j % k of every node."""
    n, k = len(members), len(rings[0])
    lanes = _Lanes(topo, node, members)
    # the rings carry every node's own items first
    reached: dict[tuple[int, int], int] = {}
    end = base
    for x in range(n):
        for i, ring in enumerate(rings[x]):
            lists = [[o * c + j for j in range(c) if _ring(o, j, k) == i] for o in ring]
            got = _ring_rounds(steps, base, ring, lists, True)
            reached.update(got)
            end = max([end, *(s + 1 for s in got.values())])
    # each item to every other node as soon as its lane's sender holds it
    arrivals: dict[int, list[tuple[int, int]]] = {}  # receiver -> (step, address)
    for j in range(c):
        for o in range(topo.ranks):
            a = o * c + j
            for y in range(n):
                if y == node[o]:
                    continue
                s, g = lanes.pick(node[o], y, o)
                step = base if s == o else reached[(a, s)] + 1
                steps.add(step, Send(a, s, g))
                arrivals.setdefault(g, []).append((step, a))
                end = max(end, step + 1)
    # then the items that arrived, in the order they arrive
    for y in range(n):
        for i, ring in enumerate(rings[y]):
            lists = [[a for _, a in sorted(arrivals.get(g, [])) if _ring(a // c, a % c, k) == i] for g in ring]
            _ring_rounds(steps, end, ring, lists, True)


def _reduce(steps: _Steps, topo: Topology, node: list[int], members: list[list[int]],
            rings: list[list[Ring]], c: int) -> None:
    n, k = len(members), len(rings[0])
    lanes = _Lanes(topo, node, members)
    # the rings first sum the items owned in other nodes, each ending at its lane's sender
    ends: dict[int, list[tuple[int, int, int]]] = {}  # sender -> (address, receiver, piece)
    for j in range(c):
        for o in range(topo.ranks):
            for y in range(n):
                if y != node[o]:
                    s, g = lanes.pick(y, node[o], -1)
                    ends.setdefault(s, []).append((o * c + j, g, _ring(o, j, k)))
    left: dict[tuple[int, int], int] = {}
    end = 0
    for y in range(n):
        for i, ring in enumerate(rings[y]):
            lists = [[a for a, _, r in ends.get(s, []) if r == i] for s in ring]
            got = _ring_rounds(steps, 0, ring, lists, False)
            left.update(got)
            end = max([end, *(s + 1 for s in got.values())])
    # each node's partial across its lane once summed
    arrived: dict[int, int] = {}  # address -> the last step a partial of it arrives in its owner's node
    for s, items in ends.items():
        for a, g, _ in items:
            step = left[(a, s)] + 1 if (a, s) in left else 0
            steps.add(step, Send(a, s, g))
            arrived[a] = max(arrived.get(a, 0), step)
            end = max(end, step + 1)
    # then the node's own items, those whose partials arrive first first
    for x in range(n):
        for i, ring in enumerate(rings[x]):
            lists = [sorted((o * c + j for j in range(c) if _ring(o, j, k) == i), key=lambda a: (arrived.get(a, 0), a))
                     for o in ring]
            _ring_rounds(steps, end, ring, lists, False)
