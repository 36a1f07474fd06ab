"""The concurrent flow LP of a machine of identical nodes, reduced by its symmetries.

A group of automorphisms of the topology (links with their bandwidths, switch groups with theirs) that
maps the commodities onto each other maps optimal flows to optimal flows; their average over the group is
optimal and symmetric. So the LP restricted to symmetric flows has the same optimum T: only one commodity
per orbit is a variable, and one capacity row per orbit of links (and of switch groups) stands for all of
them. The group used: the shifts of the nodes times the automorphisms of a node (networkx) that extend to
the whole machine, acting freely on the ranks (so on links and commodities too). mi250 x 3 Alltoall: 12
elements, 82,000 variables -> 6,800.

The dual of a reduced row is the sum of the equal duals of the rows it stands for, so each link's length
is its orbit's dual over the orbit's size; the lengths certificate recomputes the bound they prove
exactly, so any rounding only loses tightness, never soundness.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from smtcoll.model import Topology

if TYPE_CHECKING:
    from smtcoll.bounds.lp import Commodity, FlowSolution, Method

MAX_NODE_AUTOMORPHISMS = 64  # enumerated with networkx before giving up on a node's group


def node_group(topo: Topology) -> list[tuple[int, ...]] | None:
    """The node shifts times the node's automorphisms that are automorphisms of the machine and together
    act freely on the ranks; None when the machine is not n >= 2 identical nodes of contiguous ranks or
    the group is trivial."""
    from networkx.algorithms.isomorphism import DiGraphMatcher

    from smtcoll.bounds.entry import node_of

    nodes = node_of(topo)
    if nodes is None:
        return None
    n = max(nodes) + 1
    g = topo.ranks // n
    if g * n != topo.ranks or nodes != [r // g for r in range(topo.ranks)]:
        return None
    bw = {(l.src, l.dst): l.bandwidth for l in topo.links}
    groups = {(tuple(sorted(s.srcs)), tuple(sorted(s.dsts)), s.bandwidth) for s in topo.switches}

    def is_automorphism(p: tuple[int, ...]) -> bool:
        return (all(bw.get((p[u], p[v])) == b for (u, v), b in bw.items())
                and all((tuple(sorted(p[x] for x in s)), tuple(sorted(p[x] for x in d)), b) in groups
                        for s, d, b in groups))

    inside = Topology("node", g, [l for l in topo.links if l.src < g and l.dst < g])
    graph = inside.graph()
    auts: list[tuple[int, ...]] = []
    for m in DiGraphMatcher(graph, graph, edge_match=lambda a, b: a["bandwidth"] == b["bandwidth"]).isomorphisms_iter():
        auts.append(tuple(m[i] for i in range(g)))
        if len(auts) > MAX_NODE_AUTOMORPHISMS:
            # too many to list (an NVSwitch node has g! of them): the node's rotations r -> r + k instead, a
            # cyclic group acting freely (the machine check below keeps those that map NICs onto NICs: nvl36
            # x 2, a NIC per GPU pair, keeps the even ones: 36 elements, its Alltoall LP 191,808 -> 5,328)
            bwi = {(l.src, l.dst): l.bandwidth for l in inside.links}
            auts = [a for a in (tuple((r + k) % g for r in range(g)) for k in range(g))
                    if all(bwi.get((a[u], a[v])) == b for (u, v), b in bwi.items())]
            break
    elements = sorted({tuple(((r // g + k) % n) * g + a[r % g] for r in range(topo.ranks))
                       for k in range(n) for a in auts})
    ident = tuple(range(topo.ranks))
    # the machine's automorphisms among them (a node automorphism that moves the GPU a NIC hangs on is not
    # one: ndv2), acting freely; if those are not closed under composition, the node shifts alone
    free = [p for p in elements if (p == ident or all(p[r] != r for r in range(topo.ranks))) and is_automorphism(p)]
    shifts = [p for p in free if all(p[r] % g == r % g for r in range(topo.ranks))]
    for cand in (free, shifts):
        have = set(cand)
        # closed under composition (else not a group: the LP argument needs one)
        if len(cand) >= 2 and all(tuple(a[x] for x in b) in have for a in cand for b in cand):
            return cand
    return None


# the last LP solved (its topology, its other arguments, its answer): synth's bound and routing share it
_LAST: list[tuple[Topology, object, FlowSolution | None]] = []


def symmetric_flow(topo: Topology, commodities: Sequence[Commodity], link_cap: Sequence[Fraction],
                   group_cap: Sequence[Fraction], method: Method = "highs") -> FlowSolution | None:
    """`concurrent_flow`'s optimum, lengths and flows from the reduced LP (module docstring): commodity
    p(rep)'s flow on link p(e) is rep's on e, for every element p. None when the topology has no such group
    or the commodities are not single-source ones the group permutes (the caller then solves the full LP).
    The same arguments (the same topology object, commodities in the same order) as the last call give its
    answer again without solving: `synth` proves its bound with the LP its routing then uses."""
    key = ([(c.sources, tuple(c.demand.items())) for c in commodities], list(link_cap), list(group_cap), method)
    if _LAST and _LAST[0][0] is topo and _LAST[0][1] == key:
        return _LAST[0][2]
    sol = _symmetric_flow(topo, commodities, link_cap, group_cap, method)
    _LAST[:] = [(topo, key, sol)]
    return sol


def _symmetric_flow(topo: Topology, commodities: Sequence[Commodity], link_cap: Sequence[Fraction],
                    group_cap: Sequence[Fraction], method: Method) -> FlowSolution | None:
    import numpy as np

    from smtcoll.bounds.lp import FlowSolution, _put, _sparse, group_members, link_ends, solve

    group = node_group(topo)
    if group is None or any(len(c.sources) != 1 for c in commodities):
        return None
    by_source = {next(iter(c.sources)): c for c in commodities}
    if len(by_source) != len(commodities):
        return None
    for p in group:  # the group maps every commodity onto one, demands included
        for s, c in by_source.items():
            image = by_source.get(p[s])
            if image is None or image.demand != {p[v]: d for v, d in c.demand.items()}:
                return None
    links = topo.links
    m = len(links)
    index = {(l.src, l.dst): e for e, l in enumerate(links)}
    reps = sorted({min(p[s] for p in group) for s in by_source})
    link_orbit = [min(index[p[l.src], p[l.dst]] for p in group) for l in links]
    members = group_members(topo)
    gkey = [(tuple(sorted(s.srcs)), tuple(sorted(s.dsts))) for s in topo.switches]
    gindex = {k: i for i, k in enumerate(gkey)}
    group_orbit = [min(gindex[(tuple(sorted(p[x] for x in s)), tuple(sorted(p[x] for x in d)))] for p in group)
                   for s, d in gkey]
    t_var = len(reps) * m
    eq_r: list[int] = []
    eq_c: list[int] = []
    eq_v: list[float] = []
    b_eq: list[float] = []
    into, out_of = link_ends(topo)
    for i, rep in enumerate(reps):
        com = by_source[rep]
        for v in range(topo.ranks):
            if v == rep:
                continue
            row = len(b_eq)
            for e in into[v]:
                _put(eq_r, eq_c, eq_v, row, i * m + e, 1.0)
            for e in out_of[v]:
                _put(eq_r, eq_c, eq_v, row, i * m + e, -1.0)
            b_eq.append(float(com.demand.get(v, 0)))
    # one row per orbit: the load of its representative link (group) over every commodity h(rep), which
    # carries rep's flow of h^-1(e) on e
    inverse = [tuple(sorted(range(topo.ranks), key=lambda r: p[r])) for p in group]
    ub_r: list[int] = []
    ub_c: list[int] = []
    ub_v: list[float] = []
    caps: list[float] = []
    rows_of: dict[tuple[str, int], int] = {}

    def load(row: int, e: int) -> None:
        u, v = links[e].src, links[e].dst
        for q in inverse:
            pre = index[q[u], q[v]]
            for i in range(len(reps)):
                _put(ub_r, ub_c, ub_v, row, i * m + pre, 1.0)

    for e in sorted(set(link_orbit)):
        rows_of[("l", e)] = len(caps)
        load(len(caps), e)
        caps.append(float(link_cap[e]))
    for gi in sorted(set(group_orbit)):
        rows_of[("g", gi)] = len(caps)
        for e in members[gi]:
            load(len(caps), e)
        caps.append(float(group_cap[gi]))
    for row, cap in enumerate(caps):
        _put(ub_r, ub_c, ub_v, row, t_var, -cap)
    n = t_var + 1
    cost = np.zeros(n)
    cost[t_var] = 1.0
    res = solve(cost, _sparse(ub_v, ub_r, ub_c, (len(caps), n)), np.zeros(len(caps)),
                _sparse(eq_v, eq_r, eq_c, (len(b_eq), n)), np.array(b_eq), method)
    if res.status != 0 or res.value is None:
        return None
    size_l = {o: link_orbit.count(o) for o in set(link_orbit)}
    size_g = {o: group_orbit.count(o) for o in set(group_orbit)}
    raw = ([-res.ineq_duals[rows_of[("l", link_orbit[e])]] / size_l[link_orbit[e]] for e in range(m)]
           + [-res.ineq_duals[rows_of[("g", group_orbit[g])]] / size_g[group_orbit[g]] for g in range(len(gkey))])
    top = max(raw, default=0.0)
    lengths = [max(Fraction(0), Fraction(x / top).limit_denominator(10**6)) if top > 0 else Fraction(0) for x in raw]
    flows: list[list[float]] = [[0.0] * m for _ in commodities]
    position = {next(iter(c.sources)): k for k, c in enumerate(commodities)}
    for i, rep in enumerate(reps):
        for p in group:  # the group acts freely: each source of rep's orbit is p(rep) for one p
            into_row = flows[position[p[rep]]]
            for e, l in enumerate(links):
                into_row[index[p[l.src], p[l.dst]]] = float(res.x[i * m + e])
    return FlowSolution(res.x[t_var], tuple(lengths[:m]), tuple(lengths[m:]), tuple(tuple(f) for f in flows))
