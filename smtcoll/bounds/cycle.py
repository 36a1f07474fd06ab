"""The odd-cycle bound: one-address Allreduce on a cycle of odd length n >= 5 needs (n + 1) / 2 steps, one
more than the distance bound D = (n - 1) / 2.

The model is the checker's (check/arrival.py): with one address a rank holds one set of contributions; a
send carries the sender's set as the step begins; the receiver adds it (disjoint from what it holds) or
takes it (it contains what it holds), arrivals of a step applied in turn. So a rank's set only grows, it
always contains the rank's own contribution, it holds only contributions at most t hops away after t
steps, and it is connected (each arrival comes from a neighbour and contains that neighbour): on a cycle,
an arc around its holder. Suppose every rank holds all n after D steps. Rank r's antipodes r + D and
r - D are D hops away, so they reach r in step D, r + D only from r + 1 (it is D hops from r - 1) and
r - D only from r - 1. So every rank x, being r + 1 for r = x - 1 and r - 1 for r = x + 1, holds x + D - 1
and x - D + 1 when step D begins: with its arc, every rank within D - 1 >= 1 hops, r among them. Rank r
then applies both arrivals in step D; the second one shares r with what r holds, so it must contain it,
but what r holds contains the antipode only the first one brought. No schedule of D steps exists, of any
rounds: steps (and rounds) >= D + 1.

Where the rings' constructions stand (synth/scale/allreduce.py): the junction plan takes 3k + 2 steps on
n = 4k + 3, the least an exact search of the same model finds for n <= 11; against D + 1 = 2k + 2 that
is within 1.5x, where the distance bound 2k + 1 alone would leave it above. Plain integers, no solver:
`proof check` recomputes it with this same function.
"""

from __future__ import annotations

from typing import Any

from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology


def _one_address_sum(coll: Collective) -> bool:
    """Every rank contributes one chunk, every contribution starts at one rank, one address, every rank
    needs every contribution."""
    if not coll.is_combining or len(set(coll.address)) != 1:
        return False
    starts = sorted(c for _, c in coll.pre)
    ranks = sorted(r for r, _ in coll.pre)
    if starts != list(range(coll.chunks)) or ranks != list(range(coll.ranks)):
        return False
    return all(len(coll.post_sets[r]) == coll.chunks for r in range(coll.ranks))


def cycle_order(topo: Topology) -> list[int] | None:
    """The ranks in cycle order when the links are exactly those of one cycle through every rank, in both
    directions; None otherwise."""
    n = topo.ranks
    if n < 3:
        return None
    out: dict[int, set[int]] = {r: set() for r in range(n)}
    into: dict[int, set[int]] = {r: set() for r in range(n)}
    for l in topo.links:
        if l.bandwidth <= 0 or l.src == l.dst:
            continue
        out[l.src].add(l.dst)
        into[l.dst].add(l.src)
    if any(len(out[r]) != 2 or out[r] != into[r] for r in range(n)):
        return None
    order, prev = [0], None
    while len(order) < n:
        nxt = sorted(out[order[-1]] - {prev}) if prev is not None else sorted(out[order[-1]])
        if not nxt or nxt[0] in order:
            return None  # a shorter cycle: the graph is not connected
        prev = order[-1]
        order.append(nxt[0])
    return order if order[0] in out[order[-1]] else None


def cycle_bound(topo: Topology, coll: Collective) -> Bound:
    """The odd-cycle bound (module docstring), in rounds (and steps); value None where it does not apply."""
    if topo.ranks != coll.ranks:
        return Bound("cycle", None, "rounds", {}, "the topology and collective differ in ranks")
    n = topo.ranks
    if n < 5 or n % 2 == 0:
        return Bound("cycle", None, "rounds", {}, "not a cycle of odd length 5 or more")
    order = cycle_order(topo)
    if order is None:
        return Bound("cycle", None, "rounds", {}, "the links are not those of one cycle, both ways")
    if not _one_address_sum(coll):
        return Bound("cycle", None, "rounds", {}, "not a sum of one contribution per rank at one address, "
                                                  "needed everywhere")
    d = (n - 1) // 2
    w: dict[str, Any] = {"cycle": n, "distance": d, "chunks": coll.chunk_factor}
    return Bound("cycle", d + 1, "rounds", w,
                 "rounds: on an odd cycle no rank can add both of its antipodes in the last step")
