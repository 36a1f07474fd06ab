"""The relay bound: what one node knows of the others grows only through its entry ranks, and what enters
must cross the node before it can leave again.

On a machine of N nodes (`entry.node_of`), take a collective in which every chunk starts at one rank and
every rank needs every chunk (Allgather, or Allreduce with one address). In each node a pick the chunk c_a
of a rank w_a as far as possible from the node's exit ranks (the sources of links out of the node): f_a
hops. Let n_r be the most nodes a whose c_a some rank of one node holds after round r (its own counts: n_0
= 1). A value enters node b only over the links into it, at most K a round (their capacity, a switch group
counting once for all its links, as the entry bound counts it; one value per link for a combining
collective, whose sender has one value per address); each value was held by an exit rank z of a node a
when the round began. Such z holds its own c_a only from round f_a on, and another node's c_a' only if it
entered node a e rounds earlier at least (e: the hops from the nearest entry rank to the nearest exit
rank). So, with f the least f_a:

    n_r <= n_{r-1} + K * m_{r-1},    m_s = (n_{s-e} - 1) + [s >= f],    n_s = 1 for s <= 0.

With R the least r where n_R >= N, some c_a enters node b in round R or later, at an entry rank, and the
rank of b farthest from its entry ranks (g hops) holds it no sooner than g rounds after: rounds >= R + g.
Like the holdings bound it bounds the total rounds (a value crosses one hop per step, and a step of k
rounds sends at most what k one-round steps send, all of it held when the step began).

ndv2 x 8 (one NIC per node: out at GPU 0, in at GPU 1; K = 1, e = 1 (GPU 1 to GPU 0), f = 2 (GPU 7 to
GPU 0), g = 2): n = 1, 1, 1, 2, 3, 5, 8 after rounds 0..6 (Fibonacci), so R = 6 and 8 rounds, where the
distance bound gives 5; ndv2 x 4: R = 5, 7 rounds; x 3: 6; x 2: 5 (the distance bound's).
"""

from __future__ import annotations

from typing import Any

import attrs

from smtcoll.bounds.entry import _capacity, _from, adjacency, node_of
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

MAX_ROUNDS = 1 << 16


def _applies(coll: Collective) -> bool:
    """Every chunk starts at exactly one rank and every rank needs every chunk; one address if combining."""
    starts = [0] * coll.chunks
    for _, c in coll.pre:
        starts[c] += 1
    if any(s != 1 for s in starts):
        return False
    if coll.is_combining and len(set(coll.address)) != 1:
        return False
    return all(len(coll.post_sets[r]) == coll.chunks for r in range(coll.ranks))


def relay_bound(topo: Topology, coll: Collective) -> Bound:
    """The relay bound (module docstring), in rounds; value None where it does not apply. Plain integers
    throughout: `proof check` recomputes it with this same function."""
    if topo.ranks != coll.ranks:
        return Bound("relay", None, "rounds", {}, "the topology and collective differ in ranks")
    nodes = node_of(topo)
    if nodes is None:
        return Bound("relay", None, "rounds", {}, "one node")
    if not _applies(coll):
        return Bound("relay", None, "rounds", {}, "a chunk starts at several ranks or is not needed everywhere")
    n = max(nodes) + 1
    own: dict[int, list[int]] = {}
    for r, c in coll.pre:
        own.setdefault(r, []).append(c)
    ks, fs, es, gs = [], [], [], []
    # the links into and out of each node, and the adjacency both ways, in one pass over the links (a pass per
    # node cost mi250 x 16 0.3 CPU s); the same lists, in the same order, as scanning per node
    into: dict[int, list] = {}
    out_of: dict[int, list] = {}
    for l in topo.links:
        if nodes[l.src] != nodes[l.dst]:
            into.setdefault(nodes[l.dst], []).append(l)
            out_of.setdefault(nodes[l.src], []).append(l)
    forward, backward = adjacency(topo), adjacency(topo, reverse=True)
    for b in range(n):
        inside = {r for r in range(topo.ranks) if nodes[r] == b}
        crossing, leaving = into.get(b, []), out_of.get(b, [])
        if not crossing or not leaving:
            return Bound("relay", None, "rounds", {}, f"node {b} has no link in or out")
        if coll.is_combining:  # one value per link and round is useful
            crossing = [attrs.evolve(l, bandwidth=1) for l in crossing]
        ks.append(_capacity(topo, crossing, inside))
        entries = sorted({l.dst for l in crossing})
        exits = sorted({l.src for l in leaving})
        to_exit = _from(topo, exits, reverse=True, out=backward)  # hops from each rank to the nearest exit rank
        from_entry = _from(topo, entries, out=forward)
        owners = [w for w in sorted(inside) if own.get(w)]
        if not owners:  # a Broadcast's other nodes: the recursion counts each node's own chunk (n_0 = 1)
            return Bound("relay", None, "rounds", {}, f"node {b} starts with no chunk")
        fs.append(max(to_exit.get(w, 0) for w in owners))
        es.append(min(to_exit.get(y, 0) for y in entries))
        gs.append(max(from_entry.get(x, 0) for x in sorted(inside)))
    k, f, e, g = max(ks), min(fs), min(es), max(gs)
    held = [1]  # n_r
    while held[-1] < n:
        r = len(held)
        if r > MAX_ROUNDS:
            return Bound("relay", None, "rounds", {}, "the recursion did not converge")
        s = r - 1
        m = (held[s - e] if s - e >= 0 else 1) - 1 + (1 if s >= f else 0)
        held.append(min(n, held[-1] + k * m))
    w: dict[str, Any] = {"nodes": n, "capacity": k, "far": f, "relay": e, "last": g, "known": held,
                         "chunks": coll.chunk_factor}
    return Bound("relay", len(held) - 1 + g, "rounds", w,
                 "rounds: what a node knows of the others enters through its entry ranks and must cross it "
                 "before it leaves again")
