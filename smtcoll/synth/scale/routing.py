"""Alltoall (any unicast collective: Gather, Scatter too) routed with a global view: a flow LP spreads the
traffic over the bottleneck links and switch groups, its flows are rounded into one path per chunk, and the
paths into steps.

1. **LP**: the bounds' concurrent flow LP (`smtcoll.bounds.lp.concurrent_flow`, HiGHS): one commodity
   per source rank (P x links variables, not P^2 x links), flow conservation with the demands, and
   `flow on a link <= bandwidth * T`, `through a switch group <= its bandwidth * T` (a switch group,
   a NIC shared by a node included, is one shared capacity); minimise T, the LP bound on the rounds.
2. **Paths**: each source's flow is decomposed into paths to its destinations (a standard flow
   decomposition), and each chunk takes, among the paths of its pair with LP flow left, the one whose
   busiest link or group is least loaded so far, then the most LP flow (a half-way chunk on a ring
   goes one way for half of the sources and the other way for the rest: what the translate cannot do).
3. **Steps**: store and forward, one round per step: every step each link (in a rotated order) moves
   the chunks waiting at its source whose next hop it is, the most hops to go first, within its
   bandwidth and its switch groups'. Where that order needs more rounds than the busiest link or group
   carries, the rounds are chosen one at a time by an integer program (`matched_rounds`).
Nothing here is trusted: the engine checks the schedule, and keeps it only when it is the best.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from fractions import Fraction

import attrs

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.scale.matched_rounds import matched_rounds
from smtcoll.synth.scale.translate import unicast_pairs

# chunks x steps (at least) of one list schedule: a few seconds (ndv2 x 12 Alltoall, 6.4 M: 2.6 s CPU); the
# second order, tried only where the first and the integer program missed, gets the smaller share
STORE_AND_FORWARD_WORK = 7_000_000
FALLBACK_ORDER_WORK = 2_000_000
LP_MAX_VARIABLES = 40_000  # P x links (or per orbit): HiGHS takes about 5 s CPU at 20,000 (a100 x 4), 15-20 s at 67,584


def routed_unicast(topo: Topology, coll: Collective, max_steps: int) -> Schedule | None:
    """The LP-routed schedule of a unicast collective (`unicast_pairs`), or None (another shape, an LP
    too large, or more than `max_steps` steps). Into one rank (Gather) the LP spreads the chunks over the
    root's neighbours' ports where the root's own port is narrow (a NIC per GPU: 12 chunks through 4 NICs
    of the root's node, then over NVLink, not 12 through the root's)."""
    pairs = unicast_pairs(coll)
    if pairs is None:
        return None
    links = sorted((l.src, l.dst) for l in topo.links)
    flows = _lp_flows(topo, links, pairs)
    if flows is None:
        return None
    paths = _choose_paths(topo, links, pairs, flows)
    # the store and forward with the critical resources first (milliseconds to seconds); above the busiest
    # resource's load, the rounds chosen one by one by an integer program (seconds: only where the list order
    # lost rounds), and where that does not answer, the list order with the longest ways first
    load = busiest_load(topo, paths)
    first = _store_and_forward(topo, coll, paths, max_steps, True, STORE_AND_FORWARD_WORK)
    found = [first] if first is not None else []
    if first is None or len(first.steps) > load:
        m = matched_rounds(topo, coll, paths, max_steps if first is None else len(first.steps) - 1, load)
        if m is not None:
            found.append(m)
        else:
            x = _store_and_forward(topo, coll, paths, max_steps, False, FALLBACK_ORDER_WORK)
            found += [x] if x is not None else []
    return min(found, key=lambda x: len(x.steps)) if found else None


def busiest_load(topo: Topology, paths: list[tuple[int, tuple[int, ...]]]) -> int:
    """The rounds the paths need at least: the most chunks a link or switch group carries over its bandwidth."""
    load: dict[tuple[int, int], int] = defaultdict(int)
    for _, path in paths:
        for hop in itertools.pairwise(path):
            load[hop] += 1
    group: dict[int, int] = defaultdict(int)
    for hop, k in load.items():
        for g in topo.switches_of(*hop):
            group[g] += k
    return max([-(-k // topo.bandwidth(*hop)) for hop, k in load.items()]
               + [-(-k // topo.switches[g].bandwidth) for g, k in group.items()], default=0)


def full_lp_fits(topo: Topology) -> bool:
    """Whether the routing LP is solved as it is (one commodity per source rank), not reduced by symmetry."""
    return topo.ranks * len(topo.links) <= LP_MAX_VARIABLES


def _lp_flows(topo: Topology, links: list[tuple[int, int]], pairs: dict[tuple[int, int], list[int]]
              ) -> dict[int, dict[tuple[int, int], float]] | None:
    """source -> link -> flow of the concurrent flow LP's optimum (positive flows only), solved by the
    bounds' LP layer (`smtcoll.bounds.lp.concurrent_flow`: the same LP `bounds` proves its rounds with)."""
    from smtcoll.bounds.lp import Commodity, concurrent_flow
    from smtcoll.bounds.symmetric_lp import node_group, symmetric_flow

    sources = sorted({s for s, _ in pairs})
    commodities = [Commodity(frozenset({s}), {d: Fraction(len(c)) for (x, d), c in sorted(pairs.items()) if x == s})
                   for s in sources]
    caps = ([Fraction(l.bandwidth) for l in topo.links], [Fraction(g.bandwidth) for g in topo.switches])
    if len(sources) * len(links) <= LP_MAX_VARIABLES:
        sol = concurrent_flow(topo, commodities, *caps)
    else:
        # too large as it is: a machine of identical nodes has the same optimum among flows its node shifts
        # (and node automorphisms) map onto each other, one commodity per orbit (dgx2 x 4: 67,584 -> 16,896)
        # (only where every pair exchanges the same: a Gather's demand is not invariant under the shifts)
        group = node_group(topo) if _complete(topo, pairs) else None
        if group is None or len(sources) * len(links) > LP_MAX_VARIABLES * len(group):
            return None
        sol = symmetric_flow(topo, commodities, *caps)
    if sol is None:
        return None
    return {s: {(topo.links[e].src, topo.links[e].dst): f for e, f in enumerate(sol.flows[i]) if f > 1e-7}
            for i, s in enumerate(sources)}


def _complete(topo: Topology, pairs: dict[tuple[int, int], list[int]]) -> bool:
    """Every ordered pair of distinct ranks has the same number of chunks (Alltoall-shaped)."""
    return len(pairs) == topo.ranks * (topo.ranks - 1) and len({len(c) for c in pairs.values()}) == 1


def decompose(s: int, flow: dict[tuple[int, int], float], demand: dict[int, int]
               ) -> dict[int, list[tuple[tuple[int, ...], float]]]:
    """destination -> [(path, amount)]: paths from s along positive flow, each ending where demand is
    left (a standard decomposition of a single-source flow; deterministic: sorted choices)."""
    flow = dict(flow)
    left = {d: float(k) for d, k in demand.items()}
    out_edges: dict[int, list[int]] = defaultdict(list)
    for a, b in sorted(flow):
        out_edges[a].append(b)
    paths: dict[int, list[tuple[tuple[int, ...], float]]] = defaultdict(list)
    for _ in range(len(demand) * (len(flow) + 2) + 10):
        if all(x <= 1e-6 for x in left.values()):
            break
        # depth-first along positive edges to a rank with demand left, never revisiting a rank
        path = [s]
        seen = {s}
        while True:
            v = path[-1]
            if v != s and left.get(v, 0) > 1e-6:
                break
            nxt = [w for w in out_edges[v] if flow.get((v, w), 0) > 1e-6 and w not in seen]
            if not nxt:  # a dead end (rounding, or a cycle): drop its last edge and start again
                if len(path) > 1:
                    flow[(path[-2], path[-1])] = 0.0
                    path = [s]
                    seen = {s}
                    continue
                path = []
                break
            w = max(nxt, key=lambda x: (flow[(v, x)], -x))
            path.append(w)
            seen.add(w)
        if not path:
            break
        d = path[-1]
        amount = min([left[d]] + [flow[(a, b)] for a, b in itertools.pairwise(path)])
        for a, b in itertools.pairwise(path):
            flow[(a, b)] -= amount
        left[d] -= amount
        paths[d].append((tuple(path), amount))
    return paths


@attrs.define
class _Cand:
    path: tuple[int, ...]
    left: float  # LP flow of this path not yet given to a chunk


REROUTE_PASSES = 12
REROUTE_BUDGET = 300_000  # candidate paths evaluated by the reroute passes in all: a count, not a clock
RELAY_PATHS_UP_TO = 64  # ranks: beyond, the candidate paths are the LP's only


def _choose_paths(topo: Topology, links: list[tuple[int, int]], pairs: dict[tuple[int, int], list[int]],
                  flows: dict[int, dict[tuple[int, int], float]]) -> list[tuple[int, tuple[int, ...]]]:
    """(chunk, path) for every chunk: the rounding of the LP, then a few passes that take each chunk off
    its path and put it back on the candidate path whose busiest link or group is least loaded (the
    candidates: the LP's paths for its pair, the direct link and, up to 64 ranks, every two-hop path),
    within REROUTE_BUDGET candidate evaluations (deterministic: the same on a busy machine)."""
    groups_of = {(a, b): topo.switches_of(a, b) for a, b in links}
    linkset = set(links)
    load: dict[tuple[int, int], int] = defaultdict(int)
    gload: dict[int, int] = defaultdict(int)

    def busiest(path: tuple[int, ...]) -> float:
        worst = 0.0
        for a, b in itertools.pairwise(path):
            worst = max(worst, (load[(a, b)] + 1) / topo.bandwidth(a, b))
            for g in groups_of[(a, b)]:
                worst = max(worst, (gload[g] + 1) / topo.switches[g].bandwidth)
        return worst

    def spread_cost(path: tuple[int, ...]) -> float:
        # the sum of squared loads the path would add to: moves that lower no maximum still even out
        total = 0.0
        for a, b in itertools.pairwise(path):
            total += ((load[(a, b)] + 1) / topo.bandwidth(a, b)) ** 2
            for g in groups_of[(a, b)]:
                total += ((gload[g] + 1) / topo.switches[g].bandwidth) ** 2
        return total

    def put(path: tuple[int, ...], k: int) -> None:
        for a, b in itertools.pairwise(path):
            load[(a, b)] += k
            for g in groups_of[(a, b)]:
                gload[g] += k

    out_nb: dict[int, list[int]] = defaultdict(list)
    for a, b in links:
        out_nb[a].append(b)
    out: list[tuple[int, tuple[int, ...]]] = []
    cands_of: list[list[_Cand]] = []
    for s in sorted(flows):
        demand = {d: len(c) for (x, d), c in pairs.items() if x == s}
        options = decompose(s, flows[s], demand)
        for d in sorted(demand):
            cands = [_Cand(path, amount) for path, amount in options.get(d, [])]
            known = {c.path for c in cands}
            extra: list[tuple[int, ...]] = [(s, d)] if (s, d) in linkset else []
            if topo.ranks <= RELAY_PATHS_UP_TO:
                extra += [(s, r, d) for r in range(topo.ranks) if (s, r) in linkset and (r, d) in linkset]
                extra += _shortest_paths(topo, out_nb, s, d, SHORTEST_PATHS)
            cands += [_Cand(x, 0.0) for x in dict.fromkeys(extra) if x not in known]
            if not cands:
                return []
            for chunk in pairs[(s, d)]:
                best = max(cands, key=lambda c: (c.left > 1e-6, -busiest(c.path), round(c.left, 6), -len(c.path)))
                best.left -= 1
                put(best.path, 1)
                out.append((chunk, best.path))
                cands_of.append(cands)
    evaluated = 0
    for _ in range(REROUTE_PASSES):
        changed = False
        for i, (chunk, path) in enumerate(out):
            evaluated += len(cands_of[i])
            if evaluated > REROUTE_BUDGET:
                return out
            put(path, -1)
            chosen = min(cands_of[i], key=lambda c: (busiest(c.path), spread_cost(c.path), len(c.path), c.path)).path
            put(chosen, 1)
            if chosen != path:
                out[i] = (chunk, chosen)
                changed = True
        if not changed:
            break
    return out


SHORTEST_PATHS = 32  # per pair, up to RELAY_PATHS_UP_TO ranks: candidates the LP's vertex optimum may not use


def _shortest_paths(topo: Topology, out_nb: dict[int, list[int]], s: int, d: int, most: int) -> list[tuple[int, ...]]:
    """Up to `most` shortest paths from s to d, in sorted order (depth-first along links that get closer)."""
    dist = topo.distances
    found: list[tuple[int, ...]] = []
    stack: list[tuple[int, ...]] = [(s,)]
    while stack and len(found) < most:
        path = stack.pop()
        u = path[-1]
        if u == d:
            found.append(path)
            continue
        stack += [(*path, v) for v in reversed(out_nb[u]) if dist[v].get(d, -1) == dist[u][d] - 1]
    return found


def _store_and_forward(topo: Topology, coll: Collective, paths: list[tuple[int, tuple[int, ...]]],
                       max_steps: int, critical: bool = False, budget: int = STORE_AND_FORWARD_WORK
                       ) -> Schedule | None:
    """`critical`: the chunk whose remaining hops cross the resource (link or switch group) with the
    most work left, relative to its capacity, goes first; else the most hops to go first. None beyond
    `budget` (chunks x steps)."""
    if not paths:
        return None
    links = sorted((l.src, l.dst) for l in topo.links)
    groups_of = {(a, b): topo.switches_of(a, b) for a, b in links}
    work: dict[object, int] = defaultdict(int)  # chunks still to cross each link and group
    for _, path in paths:
        for a, b in itertools.pairwise(path):
            work[(a, b)] += 1
            for g in groups_of[(a, b)]:
                work[g] += 1

    # every step orders every waiting chunk: about chunks x steps of work, with steps at least the busiest
    # link's load; beyond the budget the engine's other methods answer (ring:100 Alltoall: 9,900 chunks x
    # about 1,250 steps took minutes)
    busiest = max(work[(a, b)] / topo.bandwidth(a, b) for a, b in links if work[(a, b)])
    if len(paths) * busiest > budget:
        return None

    bw = {link: topo.bandwidth(*link) for link in links}
    gbw = [g.bandwidth for g in topo.switches]
    pressure: dict[tuple[int, int], float] = {}  # per link, this step: its and its groups' work per capacity

    def load(link: tuple[int, int]) -> float:
        x = pressure.get(link)
        if x is None:
            x = pressure[link] = max([work[link] / bw[link], *(work[g] / gbw[g] for g in groups_of[link])])
        return x

    urgent: dict[tuple[int, ...], float] = {}  # this step, per way still to go

    def urgency(i: int) -> float:
        path = paths[i][1][at[i]:]
        worst = urgent.get(path)
        if worst is None:
            worst = urgent[path] = max(load(hop) for hop in itertools.pairwise(path))
        return worst
    at = [0] * len(paths)  # position along the path
    waiting: dict[tuple[int, int], list[int]] = defaultdict(list)  # link -> packets whose next hop it is
    for i, (_, path) in enumerate(paths):
        if len(path) > 1:
            waiting[(path[0], path[1])].append(i)
    steps: list[Step] = []
    left = sum(1 for _, path in paths if len(path) > 1)
    for t in range(max_steps):
        if not left:
            break
        waiting = defaultdict(list, {k: v for k, v in waiting.items() if v})
        group_left = list(gbw)
        link_left = {link: bw[link] for link in waiting}
        pressure.clear()  # the work left changed last step
        urgent.clear()
        # every waiting chunk in one order, the most hops to go first (then a rotation by step): the
        # chunks on the long paths are the ones that can make the schedule longer
        # (only a link's first `bandwidth` chunks in that order can move: a group that stops one stops the rest)
        cand = sorted(itertools.chain.from_iterable(
            heapq.nsmallest(bw[link], ((-urgency(i) if critical else 0.0, -(len(paths[i][1]) - 1 - at[i]),
                                        (i + t) % len(paths), i, link) for i in queue))
            for link, queue in waiting.items()))
        moved: list[int] = []
        for _, _, _, i, link in cand:
            if link_left[link] <= 0 or any(group_left[g] <= 0 for g in groups_of[link]):
                continue
            link_left[link] -= 1
            for g in groups_of[link]:
                group_left[g] -= 1
            waiting[link].remove(i)
            moved.append(i)
        if not moved:
            return None
        sends = []
        for i in moved:
            chunk, path = paths[i]
            u, v = path[at[i]], path[at[i] + 1]
            sends.append((coll.address[chunk], u, v))
            work[(u, v)] -= 1
            for g in groups_of[(u, v)]:
                work[g] -= 1
            at[i] += 1
            if at[i] + 1 < len(path):
                waiting[(path[at[i]], path[at[i] + 1])].append(i)
            else:
                left -= 1
        steps.append(Step(1, [Send(*x) for x in sorted(sends)]))
    if left:
        return None
    return Schedule(topo, coll, steps)
