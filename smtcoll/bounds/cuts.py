"""Rounds: cuts (a rank set, the chunks that must enter it, the capacity into it) and chunk-hops."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from smtcoll.model import Collective, Topology

if TYPE_CHECKING:
    import networkx as nx

from smtcoll.bounds.arrays import Arrays
from smtcoll.bounds.demand import address_transfers, must_enter
from smtcoll.bounds.network import cut_capacity, cut_value, flow_network
from smtcoll.bounds.receive import REFINED_CUTS
from smtcoll.bounds.results import Bound

EXHAUSTIVE_CUTS_UP_TO = 12
EXHAUSTIVE_SWITCHED_CUTS_UP_TO = 8
# Every rank subset is tried up to these many ranks (the second with switch groups, whose cuts each need
# a max-flow); beyond, the cut search is heuristic (every bound found is still valid).


def candidate_cuts(topo: Topology, dist: Any = None) -> list[frozenset[int]]:
    """All proper rank subsets of small topologies; beyond, balls of every radius around a spread of
    centers (every rank up to 64 ranks), blocks of consecutive ids (halves, quarters, eighths: the
    nodes of a machine, the slabs of a torus), and their complements."""
    p = topo.ranks
    everyone = frozenset(range(p))
    if p <= (EXHAUSTIVE_SWITCHED_CUTS_UP_TO if topo.switches else EXHAUSTIVE_CUTS_UP_TO):
        return [frozenset(s) for k in range(1, p) for s in itertools.combinations(range(p), k)]
    cuts: set[frozenset[int]] = set()
    n_centers = max(1, min(p, 4096 // p))
    rows = topo.distances if dist is None else {r: {v: int(d) for v, d in enumerate(dist[r]) if d < 1 << 30}
                                                 for r in range(0, p, max(1, p // n_centers))}
    for r in range(0, p, max(1, p // n_centers)):
        by_radius: dict[int, list[int]] = {}
        for v, d in rows[r].items():
            by_radius.setdefault(d, []).append(v)
        ball: set[int] = set()
        for radius in sorted(by_radius):
            ball |= set(by_radius[radius])
            if len(ball) < p:
                cuts.add(frozenset(ball))
                cuts.add(everyone - ball)
    for m in (2, 4, 8):
        if p % m == 0:
            for i in range(m):
                block = frozenset(range(i * p // m, (i + 1) * p // m))
                cuts.add(block)
                cuts.add(everyone - block)
    cuts |= {frozenset([r]) for r in range(p)}
    return sorted(cuts, key=lambda s: (len(s), sorted(s)))


def cut_bound(topo: Topology, coll: Collective, net: nx.DiGraph | None = None,
              arrays: Arrays | None = None) -> Bound:
    """Rounds >= ceil(d / b) for the rank set into which d chunks must cross through capacity b per
    round. The witness is the set, the chunks (addresses) and the crossing links and groups."""
    import numpy as np

    a = arrays or Arrays(topo, coll)
    cuts = candidate_cuts(topo, a.dist)
    x = np.zeros((a.p, len(cuts)), dtype=bool)
    for j, inside in enumerate(cuts):
        x[list(inside), j] = True
    d = np.zeros(len(cuts), dtype=np.int64)
    for lo in range(0, len(cuts), 512):  # columns in blocks: bounded memory on large collectives
        d[lo:lo + 512] = a.enter_counts(x[:, lo:lo + 512])
    b = a.plain_capacity(x)
    exact = bool(topo.switches) and topo.ranks <= EXHAUSTIVE_SWITCHED_CUTS_UP_TO
    net = net or (flow_network(topo) if topo.switches else None)
    if exact:
        assert net is not None
        b = np.array([cut_value(topo, inside, net) if d[j] else 0 for j, inside in enumerate(cuts)])
    if (d > 0).any() and (b[d > 0] == 0).any():
        j = int(np.nonzero((d > 0) & (b == 0))[0][0])
        return Bound("cut", None, "rounds", cut_witness(topo, coll, cuts[j], net),
                     "data must enter a set of ranks that no link enters: no schedule exists")
    order = [j for j in range(len(cuts)) if d[j]]
    if not order:
        return Bound("cut", 0, "rounds", {}, "no data must cross any cut")
    order.sort(key=lambda j: (-Fraction(int(d[j]), int(b[j])), j))
    best = (Fraction(int(d[order[0]]), int(b[order[0]])), order[0])
    if topo.switches and not exact:
        assert net is not None
        for j in order[:REFINED_CUTS]:
            bj = cut_value(topo, cuts[j], net)
            q = Fraction(int(d[j]), bj) if bj else Fraction(10**18)
            if q > best[0] or (q == best[0] and j < best[1]):
                best = (q, j)
    w = cut_witness(topo, coll, cuts[best[1]], net)
    q = Fraction(w["must_enter"], w["capacity"])
    return Bound("cut", math.ceil(q), "rounds", w, per_chunk=q / coll.chunk_factor)


def cut_witness(topo: Topology, coll: Collective, inside: Iterable[int], net: nx.DiGraph | None = None) -> dict:
    inside = sorted(set(inside))
    addrs = must_enter(coll, inside)
    b, crossing = cut_capacity(topo, inside, net)
    ratio = Fraction(len(addrs), b) if b else None
    return {"inside": inside, "must_enter": len(addrs), "addresses": addrs, "capacity": b,
            "rounds_per_chunk": None if ratio is None else str(ratio / coll.chunk_factor), **crossing}


def _chunk_hops(coll: Collective, arrays: Arrays) -> int:
    """Link uses every schedule makes: a chunk needed at n ranks that lack it arrives n times, and the
    farthest of them (d hops from the nearest holder) needs d arrivals along its path."""
    import numpy as np

    a = arrays
    lacking = a.post_lacking
    d = a.nearest_holder_distance()[lacking]
    c = a.post[lacking, 1]
    far = np.zeros(a.k, dtype=np.int64)
    np.maximum.at(far, c, d)
    n = np.bincount(c, minlength=a.k)
    return int(np.maximum(far, n).sum())


def _port_capacity(topo: Topology) -> int:
    """Chunks per round all ranks can receive (or send) at once, switch groups counted: each hop enters one
    rank and leaves one, so the least of the two sums over ranks bounds the hops per round (a switch of P
    ports moves P chunks a round, not the P(P-1) of its links). Each rank's rate is `cut_rate`'s charge of
    its links to its groups, in chunks; without groups, the links' sum."""
    if not topo.switches:
        return sum(l.bandwidth for l in topo.links)
    from smtcoll.bounds.throughput import Rates, cut_rate

    index: dict[tuple[int, int], list[int]] = {}  # by lookup: mi250 x 16 took 40 CPU s by scan
    for e, l in enumerate(topo.links):
        index.setdefault((l.src, l.dst), []).append(e)
    members = tuple(tuple(sorted(e for u in g.srcs for v in g.dsts for e in index.get((u, v), ())))
                    for g in topo.switches)
    r = Rates(tuple(Fraction(l.bandwidth) for l in topo.links), tuple(Fraction(g.bandwidth) for g in topo.switches),
              members)
    ins: list[list[int]] = [[] for _ in range(topo.ranks)]
    outs: list[list[int]] = [[] for _ in range(topo.ranks)]
    for e, l in enumerate(topo.links):
        if l.src != l.dst:
            ins[l.dst].append(e)
            outs[l.src].append(e)
    # one rank's links given: cut_rate scanned every link for each rank (mi250 x 16: 512 scans of 61,440 links)
    into = sum((cut_rate(topo, r, (v,), ins[v]) for v in range(topo.ranks)), Fraction(0))
    out = sum((cut_rate(topo, r, (), outs[v]) for v in range(topo.ranks)), Fraction(0))
    return math.floor(min(into, out))


def hops_bound(topo: Topology, coll: Collective, arrays: Arrays | None = None) -> Bound:
    """Rounds >= ceil(H / B): the chunk-hops H every schedule makes over the capacity B of all links
    per round (Ring(8) Alltoall: 128 hops over 16 links; an 8x8 torus Alltoall: 16384 over 256).
    Combining collectives count address transfers instead (`demand.address_transfers`: 2(N-1) per address
    of an Allreduce, the one-way gossip bound; ndv2 Allreduce: 14 over 48 per round, 7/24 round per chunk)."""
    if coll.is_combining:
        hops, cap = address_transfers(coll, topo), sum(l.bandwidth for l in topo.links)
    else:
        a = arrays or Arrays(topo, coll)
        hops, cap = _chunk_hops(coll, a), int(a.bw.sum())
    cap = min(cap, _port_capacity(topo))
    if not hops:
        return Bound("hops", 0, "rounds", {}, "nothing to move")
    if not cap:
        return Bound("hops", None, "rounds", {}, "no links: no schedule exists")
    w = {"chunk_hops": hops, "capacity": cap, "rounds_per_chunk": str(Fraction(hops, cap) / coll.chunk_factor)}
    return Bound("hops", math.ceil(Fraction(hops, cap)), "rounds", w, per_chunk=Fraction(hops, cap) / coll.chunk_factor)

