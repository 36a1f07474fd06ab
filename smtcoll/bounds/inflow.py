"""The inflow bound: one-address Allreduce where a node's NICs let in few values a round and its GPUs pass
few on a round, so that what enters late reaches few of the node's GPUs.

Take a node V of p ranks and E = the contributions of the ranks outside it (one each). Every v in V must
hold all E at the end. Follow a contribution e in v's final set back along the sends that brought it (the
checker's arrival rule: a rank's set is its base plus what arrived, each the set of a sender a round
earlier): the last of those sends that crosses into V arrived at some y in V in a round s, and from y the
value travelled to v over sends inside V only, one hop a round. So each v's E is covered by the sets of
the values that entered V and reached v inside V in time. Counted over all of V:

    p * E <= sum over the values m that enter V of |m's set outside V| * |ranks of V m reaches by round T|.

- At most K values enter V a round (the capacity of the links into V, a NIC's switch group counting once
  for all its links, one value per link, as `entry._capacity` counts), and one that enters in round s was held by a
  rank with a link out of its node after round s - 1: at most M(s - 1) contributions (the reach bound's
  ramp, `reach.py`), and at most E of them outside V.
- A value that arrived at y in round s reaches at most F(T - s) ranks of V by round T: each rank it has
  reached passes it to at most c more a round (c: the most values a rank of V sends to others of V in a
  round, over its links inside V, a port's switch group counting once), so F(k) = min(p, (1 + c)^k).

So T rounds need sum over s = 1..T of K * min(E, M(s - 1)) * F(T - s) >= p * E. And per rank: the values
that enter in rounds s..T reach at most sum over s' = s..T of K F(T - s') ranks; where that is fewer than p,
some rank of V takes all E from the values of rounds 1..s - 1, so sum over s' < s of K min(E, M(s' - 1)) >= E
(`early`, for the least such s). pcie4slow x 5 (4 GPUs on PCIe ports of one value a round, one NIC: K = 1,
c = 1, E = 16, ramp 1, 3, 8, 16): after 5 rounds the values of rounds 4 and 5 reach at most 2 + 1 GPUs, so
one GPU takes its 16 from those of rounds 1..3, at most 1 + 3 + 8 = 12: 6 rounds, where the reach bound
gives 4 (the sum alone: 5). Like the reach bound it bounds the total rounds (a step of k rounds brings at
most k K values held when it began, each counted as one of its rounds, and passes a value on to at most k c
ranks per rank). Plain integers, no solver:
`proof check` recomputes it with this same function.
"""

from __future__ import annotations

from typing import Any

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import greedy_cover, node_of
from smtcoll.bounds.reach import reach_bound
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

MAX_ROUNDS = 1 << 16  # the count grows by at least K a round: it stops far earlier


def inflow_bound(topo: Topology, coll: Collective, reach: Bound | None = None) -> Bound:
    """The inflow bound (module docstring), in rounds; value None where it does not apply. `reach`: the
    reach bound already computed for this instance (its ramp is used; recomputed when not given)."""
    if topo.ranks != coll.ranks:
        return Bound("inflow", None, "rounds", {}, "the topology and collective differ in ranks")
    nodes = node_of(topo)
    if nodes is None:
        return Bound("inflow", None, "rounds", {}, "one node")
    if not _one_address_sum(coll):
        return Bound("inflow", None, "rounds", {}, "not a sum of one contribution per rank at one address, "
                                                   "needed everywhere")
    if reach is None:
        reach = reach_bound(topo, coll)
    # M(0..): what a rank with a link out of its node holds after each round (1: its own); beyond the reach
    # bound's ramp, everything
    ramp = [int(x) for x in reach.witness.get("ramp", [1])] if reach.value is not None else [1]
    best: Bound = Bound("inflow", None, "rounds", {}, "no node takes in fewer values than it must")
    crossing: dict[int, dict[tuple[int, int], int]] = {}  # node -> the links into it from others, one value each
    local: dict[int, dict[tuple[int, int], int]] = {}  # rank -> its links to other ranks of its node, one each
    for l in topo.links:
        if l.bandwidth <= 0 or l.src == l.dst:
            continue
        if nodes[l.src] != nodes[l.dst]:
            crossing.setdefault(nodes[l.dst], {})[(l.src, l.dst)] = 1
        else:
            local.setdefault(l.src, {})[(l.src, l.dst)] = 1
    groups_from: dict[int, list[int]] = {}
    into: dict[int, list[int]] = {}  # node -> its groups with every destination in it and no source
    for i, g in enumerate(topo.switches):
        where = {nodes[x] for x in g.dsts}
        for u in g.srcs:
            if nodes[u] in where:  # it may bound u's links inside its node (a NIC's out-group does not)
                groups_from.setdefault(u, []).append(i)
        if len(where) == 1 and not where & {nodes[x] for x in g.srcs}:
            into.setdefault(where.pop(), []).append(i)
    fan = [_out(topo, local.get(u, {}), groups_from.get(u, [])) for u in range(topo.ranks)]
    for a in sorted(set(nodes)):
        w = _node(topo, nodes, a, ramp, _into(topo, crossing.get(a, {}), into.get(a, [])), fan)
        if w is not None and (best.value is None or w["rounds"] > best.value):
            best = Bound("inflow", w["rounds"], "rounds", {**w, "chunks": coll.chunk_factor},
                         "rounds: the values that enter a node late reach few of its ranks in time")
    return best


def _node(topo: Topology, nodes: list[int], a: int, ramp: list[int], k: int, fan: list[int]) -> dict[str, Any] | None:
    """The bound for node a with its numbers, or None where nothing enters it (no schedule: other bounds
    say so) or it has one rank. `k`: the values that enter it a round; `fan`: c per rank."""
    inside = {r for r in range(topo.ranks) if nodes[r] == a}
    p = len(inside)
    outside = topo.ranks - p
    if k <= 0 or p < 2 or outside < 1:
        return None
    c = max(fan[u] for u in inside)
    need = p * outside

    def held(s: int) -> int:  # what a value entering in round s carries from outside, at most
        return min(outside, ramp[s - 1] if s - 1 < len(ramp) else outside)

    counts = [0]
    early = [0]
    t = 0
    while counts[-1] < need or early[-1] < outside:
        t += 1
        if t > MAX_ROUNDS:
            return None
        counts.append(sum(k * held(s) * _reach(p, c, t - s) for s in range(1, t + 1)))
        # the values entering in rounds s..t reach at most sum k F(t - s') ranks: where that is fewer than p,
        # some rank takes everything from outside from the values of rounds before s (the latest such s binds)
        late, s = 0, t
        while s >= 1 and late + k * _reach(p, c, t - s) < p:
            late += k * _reach(p, c, t - s)
            s -= 1
        early.append(outside if s == t else sum(k * held(x) for x in range(1, s + 1)))
    return {"node": a, "ranks": p, "outside": outside, "entry": k, "fanout": c,
            "ramp": [min(outside, x) for x in ramp[:max(t - 1, 1)]], "inflow": counts, "must": need,
            "early": early, "rounds": t}


def _into(topo: Topology, bw: dict[tuple[int, int], int], groups: list[int]) -> int:
    """K: the values that cross into a node in one round over the links `bw` (one each), a switch group
    (`groups`: sources all outside, destinations all inside) counting its bandwidth for all the links it
    covers, as `entry._capacity` counts them."""
    mine = [(g.bandwidth, _covered(bw, g.srcs, g.dsts)) for g in (topo.switches[i] for i in groups)]
    return greedy_cover(bw, [(gbw, links) for gbw, links in mine if links])


def _covered(bw: dict[tuple[int, int], int], srcs: tuple[int, ...], dsts: tuple[int, ...],
             ) -> frozenset[tuple[int, int]]:
    """The links of `bw` from srcs to dsts (by the pairs where they are fewer: a NIC's group on mi250 x 16
    has 15 sources and one destination among 3,840 links into the node)."""
    if len(srcs) * len(dsts) < len(bw):
        return frozenset(k for k in ((u, v) for u in srcs for v in dsts) if k in bw)
    a, b = set(srcs), set(dsts)
    return frozenset(k for k in bw if k[0] in a and k[1] in b)


def _out(topo: Topology, bw: dict[tuple[int, int], int], groups: list[int]) -> int:
    """The most values a rank sends to other ranks of its node in one round (`bw`: its links there, one
    value each): one per link, or a switch group's bandwidth (`groups`: those with the rank among their
    sources) for all the links it covers, chosen greedily (any choice is an upper bound)."""
    if not bw:
        return 0
    u = next(iter(bw))[0]
    mine = [(topo.switches[i].bandwidth, _covered(bw, (u,), topo.switches[i].dsts)) for i in groups]
    return greedy_cover(bw, [(gbw, links) for gbw, links in mine if links])


def _reach(p: int, fan: int, k: int) -> int:
    """F(k) = min(p, (1 + fan)^k): the ranks of a node a value reaches k rounds after it entered."""
    f = 1
    for _ in range(k):
        f = min(p, f * (1 + fan))
        if f == p:
            break
    return f
