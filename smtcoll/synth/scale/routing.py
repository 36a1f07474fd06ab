"""Alltoall routed with a global view: a flow LP spreads the traffic over the bottleneck links and switch
groups, its flows are rounded into one path per chunk, and the paths into steps.

1. **LP** (HiGHS through `scipy.optimize.linprog`): one commodity per source rank (every chunk a source
   sends, aggregated: P x links variables, not P^2 x links), flow conservation at every other rank with
   its demand, and `sum of flows on a link <= bandwidth * T`, `sum over a switch group's links <= its
   bandwidth * T` (the capacity model of `smtcoll.bounds.flow_network`: a switch group is one shared
   capacity, a NIC shared by a node included); minimise T, then (a tiny weight) the total flow, so that
   no flow circulates. T is the LP lower bound on the rounds for these chunks (`bounds.lp_bound`).
2. **Paths**: each source's flow is decomposed into paths to its destinations (a standard flow
   decomposition), and each chunk takes, among the paths of its pair with LP flow left, the one whose
   busiest link or group is least loaded so far, then the most LP flow (a half-way chunk on a ring
   goes one way for half of the sources and the other way for the rest: what the translate cannot do).
3. **Steps**: store and forward, one round per step: every step each link (in a rotated order) moves
   the chunks waiting at its source whose next hop it is, the most hops to go first, within its
   bandwidth and its switch groups'.
Nothing here is trusted: the engine checks the schedule, and keeps it only when it is the best.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.scale.translate import alltoall_shape

LP_MAX_VARIABLES = 200_000  # P x links: 1024 ranks on a torus would be 4 million


def routed_alltoall(topo: Topology, coll: Collective, max_steps: int) -> Schedule | None:
    """The LP-routed schedule of an Alltoall-shaped collective, or None (another shape, an LP too large,
    or more than `max_steps` steps)."""
    pairs = alltoall_shape(coll)
    if pairs is None:
        return None
    links = sorted((l.src, l.dst) for l in topo.links)
    if topo.ranks * len(links) > LP_MAX_VARIABLES:
        return None
    flows = _lp_flows(topo, links, pairs)
    if flows is None:
        return None
    paths = _choose_paths(topo, links, pairs, flows)
    return _store_and_forward(topo, coll, paths, max_steps)


def _lp_flows(topo: Topology, links: list[tuple[int, int]], pairs: dict[tuple[int, int], list[int]]
              ) -> dict[int, dict[tuple[int, int], float]] | None:
    """source -> link -> flow of the LP optimum (only positive flows)."""
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    p, nl = topo.ranks, len(links)
    sources = sorted({s for s, _ in pairs})
    demand: dict[tuple[int, int], int] = {k: len(v) for k, v in pairs.items()}
    n = len(sources) * nl + 1
    t_var = n - 1
    rows, cols, vals, b_eq = [], [], [], []
    row = 0
    for si, s in enumerate(sources):
        for v in range(p):
            if v == s:
                continue
            for e, (a, b) in enumerate(links):
                if v in (a, b):
                    rows.append(row)
                    cols.append(si * nl + e)
                    vals.append(1.0 if b == v else -1.0)
            b_eq.append(float(demand.get((s, v), 0)))
            row += 1
    a_eq = coo_matrix((vals, (rows, cols)), shape=(row, n)).tocsr()
    rows, cols, vals, b_ub = [], [], [], []
    row = 0
    caps: list[tuple[list[int], int]] = [([e], topo.bandwidth(*links[e])) for e in range(nl)]
    for g in topo.switches:
        members = [e for e, (a, b) in enumerate(links) if a in g.srcs and b in g.dsts]
        if members:
            caps.append((members, g.bandwidth))
    for members, bw in caps:
        for si in range(len(sources)):
            rows += [row] * len(members)
            cols += [si * nl + e for e in members]
            vals += [1.0] * len(members)
        rows.append(row)
        cols.append(t_var)
        vals.append(-float(bw))
        b_ub.append(0.0)
        row += 1
    a_ub = coo_matrix((vals, (rows, cols)), shape=(row, n)).tocsr()
    cost = np.full(n, 1e-6)  # no circulating flow
    cost[t_var] = 1.0
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        return None
    out: dict[int, dict[tuple[int, int], float]] = {}
    for si, s in enumerate(sources):
        out[s] = {links[e]: float(res.x[si * nl + e]) for e in range(nl) if res.x[si * nl + e] > 1e-7}
    return out


def _decompose(s: int, flow: dict[tuple[int, int], float], demand: dict[int, int]
               ) -> dict[int, list[tuple[tuple[int, ...], float]]]:
    """destination -> [(path, amount)]: paths from s along positive flow, each ending where demand is
    left (a standard decomposition of a single-source flow; deterministic: sorted choices)."""
    flow = dict(flow)
    left = {d: float(k) for d, k in demand.items()}
    out_edges: dict[int, list[int]] = defaultdict(list)
    for a, b in sorted(flow):
        out_edges[a].append(b)
    paths: dict[int, list[tuple[tuple[int, ...], float]]] = defaultdict(list)
    for _ in range(10 * len(flow) + 10 * len(demand) + 10):
        if all(x <= 1e-6 for x in left.values()):
            break
        # depth-first along positive edges to a rank with demand left (the flow is acyclic by the cost)
        path = [s]
        seen = {s}
        while True:
            v = path[-1]
            if v != s and left.get(v, 0) > 1e-6:
                break
            nxt = [w for w in out_edges[v] if flow.get((v, w), 0) > 1e-6 and w not in seen]
            if not nxt:
                path = []
                break
            w = max(nxt, key=lambda x: (flow[(v, x)], -x))
            path.append(w)
            seen.add(w)
        if not path:
            break
        d = path[-1]
        amount = min([left[d]] + [flow[(a, b)] for a, b in zip(path, path[1:], strict=False)])
        for a, b in zip(path, path[1:], strict=False):
            flow[(a, b)] -= amount
        left[d] -= amount
        paths[d].append((tuple(path), amount))
    return paths


@attrs.define
class _Cand:
    path: tuple[int, ...]
    left: float  # LP flow of this path not yet given to a chunk


REROUTE_PASSES = 4
RELAY_PATHS_UP_TO = 64  # ranks: beyond, the candidate paths are the LP's only


def _choose_paths(topo: Topology, links: list[tuple[int, int]], pairs: dict[tuple[int, int], list[int]],
                  flows: dict[int, dict[tuple[int, int], float]]) -> list[tuple[int, tuple[int, ...]]]:
    """(chunk, path) for every chunk: the rounding of the LP, then a few passes that take each chunk off
    its path and put it back on the candidate path whose busiest link or group is least loaded (the
    candidates: the LP's paths for its pair, the direct link and, up to 64 ranks, every two-hop path)."""
    groups_of = {(a, b): topo.switches_of(a, b) for a, b in links}
    linkset = set(links)
    load: dict[tuple[int, int], int] = defaultdict(int)
    gload: dict[int, int] = defaultdict(int)

    def busiest(path: tuple[int, ...]) -> float:
        worst = 0.0
        for a, b in zip(path, path[1:], strict=False):
            worst = max(worst, (load[(a, b)] + 1) / topo.bandwidth(a, b))
            for g in groups_of[(a, b)]:
                worst = max(worst, (gload[g] + 1) / topo.switches[g].bandwidth)
        return worst

    def put(path: tuple[int, ...], k: int) -> None:
        for a, b in zip(path, path[1:], strict=False):
            load[(a, b)] += k
            for g in groups_of[(a, b)]:
                gload[g] += k

    out: list[tuple[int, tuple[int, ...]]] = []
    cands_of: list[list[_Cand]] = []
    for s in sorted(flows):
        demand = {d: len(c) for (x, d), c in pairs.items() if x == s}
        options = _decompose(s, flows[s], demand)
        for d in sorted(demand):
            cands = [_Cand(path, amount) for path, amount in options.get(d, [])]
            if not cands:
                return []
            known = {c.path for c in cands}
            extra: list[tuple[int, ...]] = [(s, d)] if (s, d) in linkset else []
            if topo.ranks <= RELAY_PATHS_UP_TO:
                extra += [(s, r, d) for r in range(topo.ranks) if (s, r) in linkset and (r, d) in linkset]
            cands += [_Cand(x, 0.0) for x in extra if x not in known]
            for chunk in pairs[(s, d)]:
                best = max(cands, key=lambda c: (c.left > 1e-6, -busiest(c.path), round(c.left, 6), -len(c.path)))
                best.left -= 1
                put(best.path, 1)
                out.append((chunk, best.path))
                cands_of.append(cands)
    for _ in range(REROUTE_PASSES):
        changed = False
        for i, (chunk, path) in enumerate(out):
            put(path, -1)
            chosen = min(cands_of[i], key=lambda c: (busiest(c.path), len(c.path), c.path)).path
            put(chosen, 1)
            if chosen != path:
                out[i] = (chunk, chosen)
                changed = True
        if not changed:
            break
    return out


def _store_and_forward(topo: Topology, coll: Collective, paths: list[tuple[int, tuple[int, ...]]],
                       max_steps: int) -> Schedule | None:
    if not paths:
        return None
    links = sorted((l.src, l.dst) for l in topo.links)
    groups_of = {(a, b): topo.switches_of(a, b) for a, b in links}
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
        group_left = [g.bandwidth for g in topo.switches]
        link_left = {link: topo.bandwidth(*link) for link in waiting}
        # every waiting chunk in one order, the most hops to go first (then a rotation by step): the
        # chunks on the long paths are the ones that can make the schedule longer
        cand = sorted(((-(len(paths[i][1]) - 1 - at[i]), (i + t) % len(paths), i, link)
                       for link, queue in waiting.items() for i in queue))
        moved: list[int] = []
        for _, _, i, link in cand:
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
            at[i] += 1
            if at[i] + 1 < len(path):
                waiting[(path[at[i]], path[at[i] + 1])].append(i)
            else:
                left -= 1
        steps.append(Step(1, [Send(*x) for x in sorted(sends)]))
    if left:
        return None
    return Schedule(topo, coll, steps)
