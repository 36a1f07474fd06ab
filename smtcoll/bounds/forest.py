"""Algorithmic bandwidth of Allgather and ReduceScatter: ForestColl's cut formula (max-flow and Dinkelbach)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from smtcoll import collectives
from smtcoll.model import Collective, Link, SwitchGroup, Topology

if TYPE_CHECKING:
    import networkx as nx

from smtcoll.bounds.network import SINK, SOURCE, flow_network, link_part
from smtcoll.bounds.results import Bound

THROUGHPUT_REFINED_UP_TO = 64
THROUGHPUT_REFINED_SWITCHED_UP_TO = 16  # with switch groups every max-flow runs on the group network


def unit_speed(topo: Topology, gbps_per_unit: float | None = None) -> float | None:
    """GB/s of one unit of bandwidth: the override, else the fastest link's gbps / bandwidth."""
    if gbps_per_unit is not None:
        return gbps_per_unit
    speeds = [l.gbps / l.bandwidth for l in topo.links if l.gbps]
    return max(speeds) if speeds else None


def gb_capacities(topo: Topology, gbps_per_unit: float | None) -> tuple[Callable, Callable, str]:
    """Link and switch-group capacities in GB/s: `bandwidth * gbps_per_unit` when overridden, else the
    link's own gbps; a switch group gets bandwidth times the per-unit speed of the links it bounds.
    Without any speed the unit is "chunks per round"."""
    if gbps_per_unit is None and not any(l.gbps for l in topo.links):
        return (lambda l: l.bandwidth), (lambda g: g.bandwidth), "chunks/round"
    if gbps_per_unit is not None:
        return (lambda l: l.bandwidth * gbps_per_unit), (lambda g: g.bandwidth * gbps_per_unit), "GB/s"
    fallback = unit_speed(topo) or 1.0  # some link has a speed here, so unit_speed is not None

    def link_cap(l: Link) -> float:
        return l.gbps if l.gbps else l.bandwidth * fallback

    def group_cap(g: SwitchGroup) -> float:
        speeds = [link_cap(l) / l.bandwidth for l in topo.links if l.src in g.srcs and l.dst in g.dsts]
        return g.bandwidth * (max(speeds) if speeds else fallback)

    return link_cap, group_cap, "GB/s"


def _allgather_like(coll: Collective) -> str | None:
    """'allgather' when every rank starts with an equal share of distinct chunks and ends with all;
    'reducescatter' for its dual. Otherwise None (the cut formula is for these two)."""
    n = coll.ranks
    if not coll.is_combining:
        shares = [len(s) for s in coll.pre_sets]
        if (len(coll.pre) == coll.chunks and len(set(shares)) == 1 and shares[0] > 0
                and len(coll.post) == n * coll.chunks):
            return "allgather"
        return None
    kind = collectives.get(coll.name)  # a combining collective's family is its row's (the table of collectives)
    return kind.bound_family if kind is not None and kind.combining else None


def throughput_bound(topo: Topology, coll: Collective, gbps_per_unit: float | None = None) -> Bound:
    """`_throughput_bound`, computed once per instance: `bounds` asks for it twice (its row, and the time
    bound's candidate cut), and a 72-GPU switch's max-flows take seconds."""
    b = _throughput_bound(topo, coll, gbps_per_unit)
    return Bound(b.name, b.value, b.unit, dict(b.witness), b.note, b.per_chunk)  # the cached one stays unchanged


@functools.lru_cache(maxsize=4)
def _throughput_bound(topo: Topology, coll: Collective, gbps_per_unit: float | None = None) -> Bound:
    """Allgather algorithmic bandwidth (output bytes / time) <= min over rank sets A that lack some
    rank of N * B+(A) / |A|, B+(A) the capacity out of A (every chunk of A must leave A); found with
    max-flow and Dinkelbach's iteration as in ForestColl. ReduceScatter: the same on the reversed
    topology."""
    kind = _allgather_like(coll)
    if kind is None:
        return Bound("throughput", None, "GB/s", {}, "the cut formula applies to Allgather and ReduceScatter")
    net_topo = topo if kind == "allgather" else topo.reversed()
    link_cap, group_cap, unit = gb_capacities(net_topo, gbps_per_unit)
    net = flow_network(net_topo, link_cap, group_cap)
    n = topo.ranks
    # start from the best single-rank-complement cut: A = all ranks but v (v must receive N-1 shares)
    x: float = float("inf")
    witness_set: list[int] | None = None
    refine = n <= (THROUGHPUT_REFINED_SWITCHED_UP_TO if topo.switches else THROUGHPUT_REFINED_UP_TO)
    spread = range(n) if refine else range(0, n, max(1, n // 16))  # max-flows are slow
    for v in spread:
        inside = [u for u in range(n) if u != v]
        b = _out_capacity(net, inside)
        cand = b / (n - 1)
        if witness_set is None or cand < x - 1e-12:
            x, witness_set = cand, inside
    # Dinkelbach's refinement needs a max-flow per rank per iteration: beyond THROUGHPUT_REFINED_UP_TO
    # ranks the best single-rank complement stands (still an upper bound; exact on vertex-transitive
    # topologies, where every rank's complement is the same cut)
    for _ in range(100 if refine else 0):
        improved = False
        for v in range(n):
            g = net.copy()
            for u in range(n):
                g.add_edge(SOURCE, u, capacity=x)
            import networkx as nx

            value, (side, _) = nx.minimum_cut(g, SOURCE, v)
            if value < n * x * (1 - 1e-9):
                inside = sorted(u for u in side if isinstance(u, int))
                b = _out_capacity(net, inside)
                x, witness_set, improved = b / len(inside), inside, True
                break
        if not improved:
            break
    assert witness_set is not None  # the loop over ranks ran at least once (n >= 1)
    b = _out_capacity(net, witness_set)
    crossing = _crossing(net_topo, net, witness_set)
    w = {"collective": kind, "ranks": n, "sending_side": witness_set, "shares_that_must_leave": len(witness_set),
         "capacity_out": round(b, 6), "unit": unit, "formula": "N * capacity_out / shares_that_must_leave",
         **crossing}
    if kind == "reducescatter":
        w["note"] = "computed on the reversed topology (ReduceScatter is the dual of Allgather)"
    return Bound("throughput", round(n * b / len(witness_set), 6), f"{unit} algorithmic bandwidth", w,
                 "an upper bound: no algorithm beats it")


def _out_capacity(net: nx.DiGraph, inside: Iterable[int]) -> float:
    inside = set(inside)
    if all(isinstance(v, int) for v in net.nodes):  # no switch groups: sum the links that leave
        return sum(d["capacity"] for a, b, d in net.edges(data=True) if a in inside and b not in inside)
    g = net.copy()
    for u in [v for v in g.nodes if isinstance(v, int)]:
        g.add_edge(SOURCE, u) if u in inside else g.add_edge(u, SINK)
    import networkx as nx

    return nx.maximum_flow_value(g, SOURCE, SINK)


def _crossing(topo: Topology, net: nx.DiGraph, inside: list[int]) -> dict:
    g = net.copy()
    for u in range(topo.ranks):
        g.add_edge(SOURCE, u) if u in inside else g.add_edge(u, SINK)
    import networkx as nx

    _, (side, _) = nx.minimum_cut(g, SOURCE, SINK)
    links, groups = [], []
    for a in side:
        for b, data in g[a].items():
            if b in side or "capacity" not in data:
                continue
            if "group" in data:
                grp = topo.switches[data["group"]]
                groups.append({"group": grp.name or f"switches[{data['group']}]",
                               "capacity": round(data["capacity"], 6)})
            else:
                links += [{"src": s, "dst": d, "capacity": round(link_part(topo, g, a, b, s, d), 6)}
                          for s, d in data["links"]]
    links.sort(key=lambda x: (x["src"], x["dst"]))
    groups.sort(key=lambda x: x["group"])
    return {"links": links, "switch_groups": groups}

