"""Alltoall at the throughput bound: every pair's data routed by the concurrent-flow LP in the links' real
speeds, cut into pieces, and sent in shifted rounds so that no port waits.

1. **Routes.** The bounds' concurrent flow LP (`smtcoll.bounds.lp.concurrent_flow`, HiGHS) with capacities in
   GB/s (`bounds.throughput.rates`: a link's speed, a switch group's or NIC's shared rate), one commodity per
   source: its optimum is the flow bound on the time per byte. On a switch (a100, dgx2) the routes are the
   direct links; across nodes the NICs carry equal shares, the rails bridged inside a node (every rank's
   own NIC busy); on direct-link machines (mi250) traffic spreads over the fat links and relays.
2. **Pieces.** Each pair's data is cut into C pieces (C about 64 / (ranks - 1): enough pieces per port to
   pipeline, few enough for a thread block's 64 operations), shared out over the pair's LP paths in
   proportion to their flow (largest remainder first; ties to the least loaded path in time).
3. **Steps.** Pieces in shifted order, piece by piece: rank s sends to s + k in the k-th slot (a
   permutation: every out-port and in-port of a switch serves one transfer at a time), each hop after the
   previous one, into the earliest step with room (`pipeline.schedule_transfers`).
The shift is the classic pairwise exchange of MPI's Alltoall (Thakur, Rabenseifner and Gropp, 2005);
NCCL's own Alltoall posts every pair at once (`nccl.direct`), which the ports then serve in no useful order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from fractions import Fraction

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.synth.constructions.common import NotApplicable, kind
from smtcoll.synth.constructions.pipeline import Plan, busiest_link, schedule_transfers

PIECES_PER_RANK = 256  # pieces each rank sends: the pipeline's tail is about one piece in this many
OPS_PER_LINK = 96  # messages per connection that `pairwise` allows (the lowering spreads them over channels)
# The exchange's own limit: a thread block's steps (the executor's 64). A relayed connection dealt over two
# channels delivers pieces in an order its relays do not follow: dgx2 x 2's NIC connections with 96
# messages timed 0.90 of the bound at 256 MiB in the sweep's model, with 64 0.995 (mi250 0.96 -> 0.98;
# dgx1 0.984 -> 0.978; a100, amd8, ndv2 x 2 unchanged)
EXCHANGE_OPS = MAX_STEPS["executor"]
FLOW_COST = 1e-6  # per unit of flow: no circulating flow in the LP's optimum (T itself is about 0.01-1)
LP_MAX_VARIABLES = 40_000  # ranks x links: beyond, HiGHS takes tens of seconds


def exchange(topo: Topology, base: Collective) -> Schedule:
    """The LP-routed, shifted, pipelined Alltoall (module docstring), checked by the caller."""
    from smtcoll.synth.scale.translate import alltoall_shape

    if kind(base) != "alltoall":
        raise NotApplicable("the pairwise exchange is an Alltoall")
    n = topo.ranks
    if n < 2:
        raise NotApplicable("one rank has nothing to exchange")
    if n * len(topo.links) > LP_MAX_VARIABLES:
        raise NotApplicable(f"{n} ranks x {len(topo.links)} links is beyond the routing LP's size limit")
    routes = _routes(topo)
    c = max(1, round(PIECES_PER_RANK / (n - 1)))
    while True:
        coll = base.with_chunks(c)
        pairs = alltoall_shape(coll)
        assert pairs is not None  # a built-in Alltoall (checked by kind)
        plan = _plan(topo, pairs, routes, c)
        if busiest_link(plan) <= EXCHANGE_OPS or c == 1:
            break
        c = max(1, c * EXCHANGE_OPS // busiest_link(plan))
    return Schedule(topo, coll, schedule_transfers(topo, plan), name="exchange")


Paths = dict[tuple[int, int], list[tuple[tuple[int, ...], float]]]


def _routes(topo: Topology) -> Paths:
    """(source, destination) -> [(path, share of the pair's data)], from the LP's optimum in GB/s."""
    from smtcoll.bounds.lp import Commodity, concurrent_flow
    from smtcoll.bounds.throughput import rates
    from smtcoll.synth.scale.routing import decompose

    n = topo.ranks
    r = rates(topo)
    commodities = [Commodity(frozenset({s}), {d: Fraction(1) for d in range(n) if d != s}) for s in range(n)]
    # capacities in GB/s (bytes per µs / 1000): numbers near 1 keep HiGHS's tolerances meaningful
    sol = concurrent_flow(topo, commodities, [x / 1000 for x in r.link], [x / 1000 for x in r.group], FLOW_COST)
    if sol is None:
        raise NotApplicable(f"{topo.name} is not strongly connected")
    out: Paths = {}
    for s in range(n):
        flow = {(topo.links[e].src, topo.links[e].dst): f for e, f in enumerate(sol.flows[s]) if f > 1e-7}
        options = decompose(s, flow, {d: 1 for d in range(n) if d != s})
        for d in range(n):
            if d != s:
                paths = [(p, a) for p, a in options.get(d, []) if a > 1e-6]
                if not paths:
                    raise NotApplicable(f"the LP routes nothing from {s} to {d}")
                total = sum(a for _, a in paths)
                out[(s, d)] = [(p, a / total) for p, a in paths]
    return out


def _plan(topo: Topology, pairs: dict[tuple[int, int], list[int]], routes: Paths, c: int) -> Plan:
    """Every piece on a path of its pair (largest remainder of the LP's shares), in shifted order."""
    from smtcoll.bounds.throughput import rates

    r = rates(topo)
    index = {(l.src, l.dst): e for e, l in enumerate(topo.links)}
    groups_of = r.groups_of
    busy: dict[tuple[str, int], Fraction] = {}  # link or group -> bytes per µs of load so far (pieces / rate)

    def cost(path: tuple[int, ...]) -> Fraction:
        worst = Fraction(0)
        for a, b in itertools.pairwise(path):
            e = index[(a, b)]
            worst = max(worst, busy.get(("l", e), Fraction(0)) + 1 / r.link[e],
                        *(busy.get(("g", g), Fraction(0)) + 1 / r.group[g] for g in groups_of[e]))
        return worst

    def put(path: tuple[int, ...]) -> None:
        for a, b in itertools.pairwise(path):
            e = index[(a, b)]
            busy[("l", e)] = busy.get(("l", e), Fraction(0)) + 1 / r.link[e]
            for g in groups_of[e]:
                busy[("g", g)] = busy.get(("g", g), Fraction(0)) + 1 / r.group[g]

    def slow(path: tuple[int, ...]) -> frozenset[Hashable]:
        # the path's resources at its slowest rate (the ones that pace it)
        res = [(("l", index[(a, b)]), r.link[index[(a, b)]]) for a, b in itertools.pairwise(path)]
        res += [(("g", g), r.group[g]) for a, b in itertools.pairwise(path) for g in groups_of[index[(a, b)]]]
        least = min(rate for _, rate in res)
        return frozenset(k for k, rate in res if rate == least)

    n = topo.ranks
    used: dict[tuple[int, int], list[int]] = {p: [0] * len(routes[p]) for p in routes}
    plan = Plan()
    for piece in range(c):
        chosen: list[tuple[int, tuple[int, ...]]] = []
        for shift in range(1, n):
            for s in range(n):
                d = (s + shift) % n
                options = routes[(s, d)]
                taken = used[(s, d)]
                # the path furthest behind its LP share, then the least loaded, then the shortest
                i = max(range(len(options)), key=lambda j: (round(options[j][1] * (piece + 1) - taken[j], 9),
                                                            -cost(options[j][0]), -len(options[j][0]), -j))
                taken[i] += 1
                put(options[i][0])
                chosen.append((pairs[(s, d)][piece], options[i][0]))
        for chunk, path in _matchings(chosen, slow):
            prev: list[int] = []
            for a, b in itertools.pairwise(path):
                prev = [plan.add(chunk, a, b, prev)]
    return plan


def _matchings(chosen: list[tuple[int, tuple[int, ...]]], slow: Callable[[tuple[int, ...]], frozenset[Hashable]]
               ) -> list[tuple[int, tuple[int, ...]]]:
    """`chosen` in rounds, each round a set of paths that share none of their slowest resources (a switch
    port, a NIC): sent in this order, every slow port serves one piece at a time and none waits for another
    (greedy, in the shifted order; on a switch the rounds are the shifts themselves)."""
    out: list[tuple[int, tuple[int, ...]]] = []
    left = chosen
    while left:
        busy: set[Hashable] = set()
        later = []
        for item in left:
            key = slow(item[1])
            if key & busy:
                later.append(item)
            else:
                busy |= key
                out.append(item)
        left = later
    return out
