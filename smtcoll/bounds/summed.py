"""The summed bound: one-address Allreduce counted over every rank at once, where ranks send few values a round.

The model is the checker's (`check/arrival.py`): a rank holds one set of contributions; a send carries the sender's
set as the step begins; the receiver adds it (disjoint) or takes it (a copy that contains what it holds). Either
way the set v holds after round t is at most what it held after round t - 1 plus the sets of the values that
arrived in round t. Sum over all ranks: with S(t) = the sizes of all ranks' sets after round t summed,

    S(t) <= S(t - 1) + (the sizes of the values sent in round t, summed).

Every value sent is the set of its sender after round t - 1. Split the links (one distinct value per link and
round: the sender's set; a second copy of it adds nothing) into those a switch group of one source bounds (a
rank's own port: at most its bandwidth in values a round, each the sender's own set) and the others: those a
switch group of several sources bounds (a NIC shared by a GPU pair: its bandwidth in values a round, each held by
one of its sources, at most M(t - 1)), the rest one value per link of their sender. So, with O the most values a
rank sends a round over its own groups and its uncovered links, and B the shared groups' bandwidths summed,

    S(t) <= (1 + O) S(t - 1) + B M(t - 1),    S(0) = N,

M(t) the most any rank holds after round t: M(t) <= M(t - 1) (1 + I), I the most values a rank takes a round (one
per link into it, a switch group with it among its destinations counting its bandwidth for all of its links into
it), M(0) = 1, both capped at N. Every rank must end with all N contributions: S(R) = N * N, so R >= the least t
with S(t) >= N * N. A step of k rounds moves one value per link (sets as the step began) and k times a group's
bandwidth, which k one-round steps of the recursion exceed: it bounds the total rounds.

It binds where every rank sends one value a round inside its node and NICs are shared (nvl36: an NVSwitch port
of one value a round, a NIC per GPU pair): S grows at most 2x a round plus the NICs' share, where a rank's own
tree triples (the holdings and reach bounds). nvl36 x 5 (180 GPUs, 90 NICs, O = 1, I = 2): S = 180, 450, 1170,
3150, 8730, 24750 after rounds 0..5, short of 180 x 180 = 32400: **6** rounds (reach, inflow and rails: 5). Where
a rank sends its set over every link at once (mi250: 3 or 4 xGMI links and its own NIC, O = 5) it proves little:
one rank's tree (`reach`) is the stronger argument there. Plain integers, no solver: `proof check` recomputes it
with this same function.
"""

from __future__ import annotations

from typing import Any

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import greedy_cover
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

MAX_ROUNDS = 1 << 16  # S grows by at least B a round where it grows: the recursion stops far earlier


def summed_bound(topo: Topology, coll: Collective) -> Bound:
    """The summed bound (module docstring), in rounds; value None where it does not apply."""
    if topo.ranks != coll.ranks:
        return Bound("summed", None, "rounds", {}, "the topology and collective differ in ranks")
    if not _one_address_sum(coll):
        return Bound("summed", None, "rounds", {}, "not a sum of one contribution per rank at one address, "
                                                   "needed everywhere")
    n = coll.ranks
    if n < 2:
        return Bound("summed", None, "rounds", {}, "one rank")
    out, shared, take = capacities(topo)
    must = n * n
    summed, ramp = [n], [1]
    while summed[-1] < must:
        if len(summed) > MAX_ROUNDS:
            return Bound("summed", None, "rounds", {}, "the recursion did not converge")
        nxt = min(must, summed[-1] * (1 + out) + shared * ramp[-1])
        if nxt == summed[-1]:
            return Bound("summed", None, "rounds", {}, "the sum stops growing short of every contribution")
        summed.append(nxt)
        ramp.append(min(n, ramp[-1] * (1 + take)))
    t = len(summed) - 1
    w: dict[str, Any] = {"out": out, "shared": shared, "take": take, "ramp": ramp[:t], "summed": summed,
                         "must": must, "chunks": coll.chunk_factor}
    return Bound("summed", t, "rounds", w,
                 "rounds: the ranks' sets summed grow at most by what the ports and the shared NICs send a round")


def capacities(topo: Topology) -> tuple[int, int, int]:
    """(O, B, I) of the module docstring: the most values a rank sends a round over its own groups and the links
    no group bounds, the bandwidths of the groups of several sources that bound the other links summed, and the
    most values a rank takes a round."""
    outs: dict[int, set[tuple[int, int]]] = {}
    ins: dict[int, set[tuple[int, int]]] = {}
    for l in topo.links:
        if l.bandwidth > 0 and l.src != l.dst:
            outs.setdefault(l.src, set()).add((l.src, l.dst))
            ins.setdefault(l.dst, set()).add((l.src, l.dst))
    own: dict[int, list[Any]] = {}
    several = []
    into: dict[int, list[Any]] = {}
    for g in topo.switches:
        if len(set(g.srcs)) == 1:
            own.setdefault(g.srcs[0], []).append(g)
        else:
            several.append(g)
        for d in set(g.dsts):
            into.setdefault(d, []).append(g)
    # a rank's own groups first (its values are its own set, counted in S); what they leave, the shared groups
    rest: dict[tuple[int, int], int] = {}
    own_cap: dict[int, int] = {}
    for u, links in outs.items():
        mine = []
        covered: set[tuple[int, int]] = set()
        for g in own.get(u, []):
            dsts = set(g.dsts)
            m = frozenset(k for k in links if k[1] in dsts)
            if m:
                mine.append((g.bandwidth, m))
                covered |= m
        own_cap[u] = greedy_cover(dict.fromkeys(covered, 1), mine)
        rest.update(dict.fromkeys(links - covered, 1))
    by_src: dict[int, list[tuple[int, int]]] = {}
    by_dst: dict[int, list[tuple[int, int]]] = {}
    for k in sorted(rest):
        by_src.setdefault(k[0], []).append(k)
        by_dst.setdefault(k[1], []).append(k)
    groups = []
    for g in several:
        srcs, dsts = set(g.srcs), set(g.dsts)
        # from the side with fewer links (a NIC's in-group: two GPUs, its sources every GPU of the other nodes)
        if sum(len(by_src.get(x, ())) for x in srcs) <= sum(len(by_dst.get(x, ())) for x in dsts):
            m = frozenset(k for x in srcs for k in by_src.get(x, ()) if k[1] in dsts)
        else:
            m = frozenset(k for x in dsts for k in by_dst.get(x, ()) if k[0] in srcs)
        if m:
            groups.append((g.bandwidth, m))
    shared, left = _cover(rest, groups)
    for src, _ in left:  # links no chosen group bounds: one value each, of their sender's own set
        own_cap[src] = own_cap.get(src, 0) + 1
    take = 0
    for v, links in ins.items():
        mine = []
        for g in into.get(v, []):
            if len(g.srcs) < len(links):  # a NIC's out-group on mi250 x 16: one source, 240 links into v
                m = frozenset(k for k in ((x, v) for x in g.srcs) if k in links)
            else:
                srcs = set(g.srcs)
                m = frozenset(k for k in links if k[0] in srcs)
            if len(m) > g.bandwidth:  # a group of no more links than its bandwidth bounds nothing
                mine.append((g.bandwidth, m))
        take = max(take, greedy_cover(dict.fromkeys(links, 1), mine))
    return max(own_cap.values(), default=0), shared, take


def _cover(links: dict[tuple[int, int], int], groups: list[tuple[int, frozenset[tuple[int, int]]]],
           ) -> tuple[int, set[tuple[int, int]]]:
    """Groups counted instead of the links they cover, in one pass from the least bandwidth per link (ties in
    their order), each only while it covers more links not yet covered than its bandwidth (any choice is an upper
    bound; `entry.greedy_cover` re-rates after each pick, too slow for the 288 NICs of nvl36 x 16): the chosen
    groups' bandwidth and the links left to count one by one."""
    left = set(links)
    cap = 0
    for gbw, mine in sorted(groups, key=lambda x: x[0] / len(x[1])):
        new = mine & left
        if len(new) > gbw:
            cap += gbw
            left -= new
    return cap, left
