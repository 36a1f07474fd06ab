"""One-address Allreduce on machines of several nodes: each node sums inside, the node sums cross the
NICs to a few receivers, which pass the total on inside their node.

"Reduce to the most central rank, then broadcast" costs twice the radius and queues at that rank's
ports (dgx2 x 2: 10 steps against a holdings bound of 4). Here, as a plan of sends ordered by data flow
and scheduled as soon as possible (`allreduce._asap`, the overlapping constructions' scheduler):
1. inside every node, recursive doubling over the xor partners (where they are links: NVSwitch nodes,
   the DGX-1's cube-mesh): every GPU holds its node's sum after log2(P) steps;
2. the receivers (GPUs that a NIC link reaches from every other node; where the same GPUs also send over
   the NICs, the first half receive and the rest send, so that no sender has added another node's sum
   before it sends its own) each get every other node's sum from a sender there, disjoint values added;
3. the GPUs that are not receivers get a copy of the total along a breadth-first tree from the receivers.
dgx2 x 2: 4 + 1 + 1 = 6 steps (1.5x the holdings bound); ndv2 x 3: 3 + 2 + 2 = 7 (1.4x the distance
bound 5). None where a node is not a power of two with xor links, or a GPU cannot be reached.

The second (`doubling_nodes_allreduce`) takes many nodes (ndv2 x 16: the first sends 15 sums to one
receiver through one NIC) by recursive doubling over the nodes: after the node sums, with one NIC pair
(exit GPU u, entry GPU v) that joins every node to every other, node a's u sends its group's sum to
node a xor 2^i's v, which adds it (the two groups are disjoint) and passes it on to its u as copies
along a shortest path inside the node; log2 of the nodes' largest power of two such levels, the nodes
beyond it folded into the first ones before and given the total after; then the total spreads inside
each node from v. ndv2 x 16: 3 + 4 x 2 - 1 + 2 = 12 steps against the relay bound's 10.
"""

from __future__ import annotations

from smtcoll.bounds.entry import node_of
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.scale.allreduce import _asap, _every_rank_all, _Plan, _schedule


def nodes_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """The schedule (module docstring) for a one-address Allreduce-shaped collective, or None."""
    shape = _node_shape(topo, coll)
    if shape is None:
        return None
    n, p, linked = shape
    receivers, senders = _ends(linked, n, p)
    if not receivers:
        return None
    plan = _Plan(topo.ranks)
    _node_sums(plan, topo.ranks, p)  # 1. node sums
    plan.start_phase()
    for k in range(1, n):  # 2. the other nodes' sums to every receiver, node a + k's in turn k (a Latin
        for a in range(n):  # square: each node sends to one node a turn), from the least used sender there
            b = (a + k) % n
            used = dict.fromkeys(senders, 0)
            for v in receivers:
                srcs = [u for u in senders if (b * p + u, a * p + v) in linked]
                if not srcs:
                    return None
                u = min(srcs, key=lambda x: (used[x], x))
                used[u] += 1
                plan.send(b * p + u, a * p + v, together=True)
    plan.start_phase()
    parent = _tree(linked, p, receivers)
    if parent is None:
        return None
    for b in range(0, topo.ranks, p):  # 3. the total, as copies, in breadth-first order
        for child, par in parent:
            plan.send(b + par, b + child)
    steps = _asap(topo, plan)
    return None if steps is None else _schedule(topo, coll, steps)


def doubling_nodes_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """Recursive doubling over the nodes (module docstring) for a one-address Allreduce-shaped collective,
    or None."""
    shape = _node_shape(topo, coll)
    if shape is None:
        return None
    n, p, linked = shape
    pair = _nic_pair(linked, n, p)
    if pair is None:
        return None
    u, v = pair
    relay = _path(linked, p, v, u)
    parent = _tree(linked, p, [v])
    if relay is None or parent is None:
        return None
    plan = _Plan(topo.ranks)
    _node_sums(plan, topo.ranks, p)
    plan.start_phase()

    def cross(a: int, b: int) -> None:
        """Node a's group sum (at its u) into node b's v, added; then on to b's u as copies."""
        plan.send(a * p + u, b * p + v, together=True)
        plan.chain([b * p + x for x in relay])

    top = 1 << (n.bit_length() - 1)  # the largest power of two <= n
    for e in range(top, n):  # fold the nodes beyond it into the first ones
        cross(e, e - top)
    bit = 1
    while bit < top:
        for a in range(top):
            plan.send(a * p + u, (a ^ bit) * p + v, together=True)
        if bit * 2 < top:  # the next level sends from u: the new sum travels on to it
            for a in range(top):
                plan.chain([a * p + x for x in relay])
        plan.start_phase()
        bit <<= 1
    for e in range(top, n):  # the total back to the folded nodes (a copy: it contains their sums)
        plan.chain([(e - top) * p + x for x in relay])
        plan.send((e - top) * p + u, e * p + v)
    on_relay = set(relay)
    for b in range(0, topo.ranks, p):  # the total, as copies, in breadth-first order from v
        folded = b // p < n - top  # its relay path holds the total already
        for child, par in parent:
            if not (folded and child in on_relay):
                plan.send(b + par, b + child)
    steps = _asap(topo, plan)
    return None if steps is None else _schedule(topo, coll, steps)


def _node_shape(topo: Topology, coll: Collective) -> tuple[int, int, set[tuple[int, int]]] | None:
    """(nodes, GPUs per node, links) where the nodes are identical blocks of a power of two of GPUs joined by
    the xor partners inside, and the collective is a one-address Allreduce; None otherwise."""
    nodes = node_of(topo) or _named_nodes(topo)
    if nodes is None or len(coll.addresses) != 1 or len(coll.pre) != coll.chunks or not _every_rank_all(coll):
        return None
    n = max(nodes) + 1
    p = topo.ranks // n
    if nodes != [r // p for r in range(topo.ranks)] or p & (p - 1):
        return None
    linked = {(l.src, l.dst) for l in topo.links if l.bandwidth > 0}
    bit = 1
    while bit < p:
        if any((b + r, b + (r ^ bit)) not in linked for b in range(0, topo.ranks, p) for r in range(p)):
            return None
        bit <<= 1
    return n, p, linked


def _node_sums(plan: _Plan, ranks: int, p: int) -> None:
    """Recursive doubling inside every node: each GPU holds its node's sum after log2(p) exchanges."""
    bit = 1
    while bit < p:
        for b in range(0, ranks, p):
            for r in range(p):
                if r < r ^ bit:
                    plan.exchange(b + r, b + (r ^ bit))
        bit <<= 1


def _nic_pair(linked: set[tuple[int, int]], n: int, p: int) -> tuple[int, int] | None:
    """The first (exit u, entry v) of node-local GPUs with a link from every node's u to every other node's v."""
    outs = sorted({(a % p, b % p) for a, b in linked if a // p != b // p})
    for u, v in outs:
        if all((a * p + u, b * p + v) in linked for a in range(n) for b in range(n) if a != b):
            return u, v
    return None


def _path(linked: set[tuple[int, int]], p: int, src: int, dst: int) -> list[int] | None:
    """A shortest path src -> dst over node 0's links (the first in rank order), as its ranks."""
    prev: dict[int, int] = {src: src}
    frontier = [src]
    while frontier and dst not in prev:
        nxt = []
        for x in frontier:
            for y in range(p):
                if y not in prev and (x, y) in linked:
                    prev[y] = x
                    nxt.append(y)
        frontier = nxt
    if dst not in prev:
        return None
    path = [dst]
    while path[-1] != src:
        path.append(prev[path[-1]])
    return path[::-1]


def _named_nodes(topo: Topology) -> list[int] | None:
    """The nodes `Topology.compose` names (`...-Nnodes`, `...-Nnodes-reversed` for a dual's reversed
    machine), where no NIC group tells them apart (two nodes whose NICs each join one pair: dgx2 x 2, ndv2
    x 2; h100 x 2's NICs each join one GPU to its one peer on its rail). Callers check the nodes they use."""
    if topo.named_nodes < 2:
        return None
    p = topo.ranks // topo.named_nodes
    return [r // p for r in range(topo.ranks)]


def _ends(linked: set[tuple[int, int]], n: int, p: int) -> tuple[list[int], list[int]]:
    """Node-local receivers and senders of the NIC links (the same in every node, as composed)."""
    into = {v % p for u, v in linked if u // p != v // p}
    out = {u % p for u, v in linked if u // p != v // p}
    receivers = sorted(v for v in into if all(any((b * p + u, v) in linked for u in out) for b in range(1, n)))
    if set(receivers) & out:
        receivers = receivers[:len(receivers) // 2]
    senders = sorted(out - set(receivers))
    return receivers, senders


def _tree(linked: set[tuple[int, int]], p: int, sources: list[int]) -> list[tuple[int, int]] | None:
    """(child, parent) in breadth-first order over node 0's links from `sources`; None if some GPU is
    not reached."""
    out: dict[int, list[int]] = {}
    for u, v in sorted((u, v) for u, v in linked if u < p and v < p):  # filtered first: the NIC links are many
        out.setdefault(u, []).append(v)
    seen = set(sources)
    frontier = list(sources)
    order: list[tuple[int, int]] = []
    kids = dict.fromkeys(range(p), 0)
    while frontier:
        nxt: list[int] = []
        for v in range(p):  # each new GPU from the frontier GPU with the fewest children so far
            if v in seen:
                continue
            pars = [u for u in frontier if v in out.get(u, [])]
            if pars:
                u = min(pars, key=lambda x: (kids[x], x))
                kids[u] += 1
                order.append((v, u))
                nxt.append(v)
        seen.update(nxt)
        frontier = nxt
    return order if len(seen) == p else None
