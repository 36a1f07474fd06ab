"""An upper bound on the concurrent flow LP's optimum, without an LP: route every demand along one shortest
path (in hops) from its nearest source and take the most loaded link or switch group.

Any routing is a feasible point of the LP (`lp.concurrent_flow`), so its time T_route is at least the LP
optimum. Where a bound already proved (a cut, a rank-set cut) reaches T_route, the LP cannot prove more:
its optimum lies between the two, so it equals T_route and need not be solved. On a switch domain every
demand goes straight to its rank and the per-port cut is the optimum: `smtcoll bounds` on a 72-GPU switch's
Alltoall solved two LPs of 368,000 variables to learn what the cut already said (issue 24).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from fractions import Fraction

from smtcoll.bounds.lp import Commodity
from smtcoll.model import Topology


def route_time(topo: Topology, commodities: Sequence[Commodity], link_cap: Sequence[Fraction],
               group_cap: Sequence[Fraction]) -> Fraction | None:
    """The time of the shortest-path routing: max over links and groups of load / capacity (exact); None
    when a demand cannot be routed or a loaded link or group has no capacity."""
    out_of: dict[int, list[tuple[int, int]]] = {v: [] for v in range(topo.ranks)}
    for e, l in enumerate(topo.links):
        out_of[l.src].append((l.dst, e))
    load = [Fraction(0)] * len(topo.links)
    for com in commodities:
        via: dict[int, int] = {}  # rank -> the link it is reached by
        seen = set(com.sources)
        queue = deque(sorted(com.sources))
        while queue:
            u = queue.popleft()
            for v, e in out_of[u]:
                if v not in seen:
                    seen.add(v)
                    via[v] = e
                    queue.append(v)
        for v, d in com.demand.items():
            if not d:
                continue
            if v not in seen:
                return None
            x = v
            while x not in com.sources:
                e = via[x]
                load[e] += d
                x = topo.links[e].src
    worst = Fraction(0)
    group_load: dict[int, Fraction] = {}
    for e, carried in enumerate(load):
        if not carried:
            continue
        if not link_cap[e]:
            return None
        worst = max(worst, carried / link_cap[e])
        for g in topo.switches_of(topo.links[e].src, topo.links[e].dst):
            group_load[g] = group_load.get(g, Fraction(0)) + carried
    for g, carried in sorted(group_load.items()):
        if not group_cap[g]:
            return None
        worst = max(worst, carried / group_cap[g])
    return worst
