"""Rounds: what one rank must receive over the capacity into it."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from smtcoll.model import Collective, Topology

if TYPE_CHECKING:
    import networkx as nx

from smtcoll.bounds.arrays import Arrays, distinct
from smtcoll.bounds.demand import must_receive
from smtcoll.bounds.network import cut_capacity, cut_value, flow_network
from smtcoll.bounds.results import Bound

# With switch groups, capacities are first over-estimated by summing links (cheap, so every candidate
# gets one: a valid bound); this many best candidates then get the exact max-flow capacity.
REFINED_CUTS = 8


def _receive_counts(coll: Collective, a: Arrays) -> list[int]:
    """len(must_receive_all(coll)[r]) per rank, without building the per-rank lists (1M pairs at 1024)."""
    import numpy as np

    n_addr = int(a.address.max()) + 1 if len(a.address) else 1
    space = a.p * n_addr
    # a needed (rank, address) counts when a needed contribution is not there at the start ...
    missing = a.post[a.post_lacking]
    marked = missing[:, 0] * n_addr + a.address[missing[:, 1]]
    # ... or the start holds a contribution there that the rank must not end with
    extra = a.pre[a.pre_unneeded]
    if len(extra):
        extra_ra = extra[:, 0] * n_addr + a.address[extra[:, 1]]
        needed_ra = a.post[:, 0] * n_addr + a.address[a.post[:, 1]]
        marked = np.concatenate([marked, extra_ra[np.isin(extra_ra, needed_ra)]])
    marked = distinct(marked, space)
    return np.bincount(marked // n_addr, minlength=a.p).tolist()


def _in_capacity_fast(topo: Topology, arrays: Arrays) -> list[int]:
    """An upper bound on the chunks per round that can enter each rank: its in-links, where a switch
    group into the rank counts at most its own bandwidth for the links it bounds."""
    import numpy as np

    plain = np.bincount(arrays.dst, weights=arrays.bw, minlength=arrays.p).astype(np.int64)
    if not topo.switches:
        return plain.tolist()
    best = plain.copy()
    for g in topo.switches:
        srcs = np.zeros(arrays.p, dtype=bool)
        srcs[list(g.srcs)] = True
        bounded = np.bincount(arrays.dst, weights=arrays.bw * srcs[arrays.src], minlength=arrays.p).astype(np.int64)
        for v in g.dsts:
            best[v] = min(best[v], plain[v] - bounded[v] + g.bandwidth)
    return best.tolist()


def receive_bound(topo: Topology, coll: Collective, net: nx.DiGraph | None = None,
                  arrays: Arrays | None = None) -> Bound:
    """Rounds >= ceil(k / b) for the rank that must receive k chunks through in-links and switch
    in-ports of total capacity b chunks per round (= steps when each step has one round)."""
    a = arrays or Arrays(topo, coll)
    counts = _receive_counts(coll, a)
    caps = _in_capacity_fast(topo, a)
    cands = [(Fraction(k, b) if b else Fraction(10**18), r) for r, (k, b) in enumerate(zip(counts, caps)) if k]
    if not cands:
        return Bound("receive", 0, "rounds", {}, "no rank must receive anything")
    # the best ratio, ties to the smallest rank; with switch groups the exact capacity of the best few
    cands.sort(key=lambda x: (-x[0], x[1]))
    if topo.switches:
        net = net or flow_network(topo)
        refined = []
        for _, r in cands[:REFINED_CUTS]:
            b = cut_value(topo, [r], net)
            refined.append((Fraction(counts[r], b) if b else Fraction(10**18), r))
        cands = sorted(refined + cands, key=lambda x: (-x[0], x[1]))
    _, r = cands[0]
    w = _receive_witness(topo, coll, r, net)
    if w["capacity"] == 0:
        return Bound("receive", None, "rounds", w, f"rank {r} must receive but has no way in: no schedule exists")
    q = Fraction(w["must_receive"], w["capacity"])
    return Bound("receive", math.ceil(q), "rounds", w, per_chunk=q / coll.chunk_factor)


def _receive_witness(topo: Topology, coll: Collective, r: int, net: nx.DiGraph | None = None) -> dict[str, Any]:
    need = must_receive(coll, r)
    b, crossing = cut_capacity(topo, [r], net)
    return {"rank": r, "must_receive": len(need), "addresses": need, "capacity": b, **crossing}

