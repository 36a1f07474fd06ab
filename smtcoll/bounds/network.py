"""The topology as a flow network (switch groups as edges of their capacity) and the capacity into a rank set.

Each switch group is an edge `group.in -> group.out` of its capacity, and each link `s -> d` runs
`s -> group1 -> group2 -> ... -> d` through the groups that bound it (a relaxation when a group has
several sources and several destinations, so every capacity here is an upper bound, every bound a
valid lower bound). Shared by the bounds and the LP routing of `synth/scale` (one flow-network model)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from smtcoll.model import Link, SwitchGroup, Topology

if TYPE_CHECKING:
    import networkx as nx


SOURCE, SINK = ("source",), ("sink",)


def flow_network(topo: Topology, link_cap: Callable[[Link], float] | None = None,
                 group_cap: Callable[[SwitchGroup], float] | None = None) -> nx.DiGraph:
    """Ranks are nodes `0..P-1`; switch group i adds nodes ("group", i, "in"/"out")."""
    link_cap = link_cap or (lambda l: l.bandwidth)
    group_cap = group_cap or (lambda g: g.bandwidth)
    import networkx as nx  # 0.4 s to import: only topologies with switch groups need max-flows

    g: nx.DiGraph[Hashable] = nx.DiGraph()  # ranks, ("group", i, "in"/"out"), and SOURCE, SINK when cut
    g.add_nodes_from(range(topo.ranks))
    for i, grp in enumerate(topo.switches):
        g.add_edge(("group", i, "in"), ("group", i, "out"), capacity=group_cap(grp), group=i)
    # the edges summed in a dict, then added at once in the order of their first link (the graph networkx
    # builds edge by edge, in 40% of the time: mi250 x 16's 61,440 links)
    order = [_chain_order(grp, i) for i, grp in enumerate(topo.switches)]
    edges: dict[tuple[Any, Any], dict[str, Any]] = {}
    for link in topo.links:
        chain: list[Any] = [link.src]
        for i in sorted(topo.switches_of(link.src, link.dst), key=order.__getitem__):
            chain += [("group", i, "in"), ("group", i, "out")]
        chain.append(link.dst)
        cap = link_cap(link)
        for a, b in zip(chain[0::2], chain[1::2], strict=True):
            attr = edges.get((a, b))
            if attr is None:
                edges[(a, b)] = {"capacity": cap, "links": [(link.src, link.dst)]}
            else:
                attr["capacity"] += cap
                attr["links"].append((link.src, link.dst))
    g.add_edges_from((a, b, attr) for (a, b), attr in edges.items())
    return g


def _chain_order(group: SwitchGroup, index: int) -> tuple[int, int, int]:
    # A link's groups are chained from the sender's side to the receiver's: wide fan-out first (a rank's
    # out-port), narrow fan-in last (a rank's in-port). Flow merged in a group node may leave toward any
    # destination of that group, so a per-destination group placed before a shared one (a PCIe box's
    # socket link) would let the shared group feed ranks past their in-port: a valid but weak capacity.
    return (-len(group.dsts), len(group.srcs), index)


def cut_capacity(topo: Topology, inside: Iterable[int], net: nx.DiGraph | None = None) -> tuple[Any, dict]:
    """The most that can enter the rank set `inside` per round from the other ranks, and the crossing
    links and switch groups (whose capacities sum to it) as a witness."""
    inside = set(inside)
    if not topo.switches:  # no switch groups: the capacity is the sum over the links that enter
        crossing = [l for l in topo.links if l.dst in inside and l.src not in inside]
        return sum(l.bandwidth for l in crossing), {
            "links": [{"src": l.src, "dst": l.dst, "capacity": l.bandwidth} for l in crossing], "switch_groups": []}
    net = net or flow_network(topo)
    found = _scipy_min_cut(topo, inside, net)
    value: Any
    if found is not None:
        value, src_side = found
    else:  # a capacity that is not an integer: networkx's max-flow in exact arithmetic
        import networkx as nx

        flow = net.copy()
        for r in range(topo.ranks):
            if r in inside:
                flow.add_edge(r, SINK)
            else:
                flow.add_edge(SOURCE, r)
        value, (src_side, _) = nx.minimum_cut(flow, SOURCE, SINK)
    links, groups = [], []
    for a in src_side:
        if a == SOURCE:
            continue
        for b, data in net[a].items():
            if b in src_side or "capacity" not in data:
                continue
            if "group" in data:
                grp = topo.switches[data["group"]]
                groups.append({"group": grp.name or f"switches[{data['group']}]", "capacity": data["capacity"]})
            else:
                for s, d in data["links"]:
                    links.append({"src": s, "dst": d, "capacity": link_part(topo, net, a, b, s, d)})
    links.sort(key=lambda x: (x["src"], x["dst"]))
    groups.sort(key=lambda x: x["group"])
    return value, {"links": links, "switch_groups": groups}


def cut_value(topo: Topology, inside: Iterable[int], net: nx.DiGraph) -> Any:
    """The capacity into `inside`, as `cut_capacity` computes it (the max-flow value is unique), without
    the witness: scipy's max-flow in C where every capacity is an integer, networkx otherwise. For the
    many candidate cuts the bounds refine; the cut they keep gets its witness from `cut_capacity`."""
    inside = set(inside)
    built = _flow_matrix(topo, inside, net)
    if built is None:
        return cut_capacity(topo, inside, net)[0]
    from scipy.sparse.csgraph import maximum_flow

    m, source, sink = built
    return int(maximum_flow(m, source, sink).flow_value)


def _scipy_min_cut(topo: Topology, inside: set[int], net: nx.DiGraph) -> tuple[int, set[Any]] | None:
    """The max-flow value into `inside` and the source side of the minimum cut networkx's `minimum_cut`
    returns (every node that cannot reach the sink in the residual network: the same set for every
    maximum flow), by scipy's max-flow in C; None where a capacity is not an integer."""
    built = _flow_matrix(topo, inside, net)
    if built is None:
        return None
    import numpy as np
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    m, source, sink = built
    res = maximum_flow(m, source, sink)
    residual = csr_array(m - res.flow)
    residual.data = np.where(residual.data > 0, residual.data, 0)
    residual.eliminate_zeros()
    to_sink = set(breadth_first_order(residual.T.tocsr(), sink, return_predecessors=False).tolist())
    labels = list(net.graph["_csr"][0])
    return int(res.flow_value), {x for i, x in enumerate(labels) if i not in to_sink}


def _flow_matrix(topo: Topology, inside: set[int], net: nx.DiGraph) -> tuple[Any, int, int] | None:
    """The network with a source into every rank outside `inside` and a sink out of every rank inside, as
    scipy's integer capacity matrix (its nodes in `net`'s order, then the source and the sink); None where a
    capacity is not an integer. The network's own part is built once and kept in `net.graph`."""
    base = net.graph.get("_csr")
    if base is None:
        base = net.graph["_csr"] = _csr_parts(net)
    if base is False:
        return None
    import numpy as np
    from scipy.sparse import csr_array

    index, rows, cols, caps, big = base
    p = topo.ranks
    n = len(index)
    source, sink = n, n + 1
    is_in = np.zeros(p, dtype=bool)
    is_in[list(inside)] = True
    node = np.array([index[r] for r in range(p)], dtype=np.int64)
    r2 = np.concatenate([rows, node[is_in], np.full(int((~is_in).sum()), source)])
    c2 = np.concatenate([cols, np.full(int(is_in.sum()), sink), node[~is_in]])
    w2 = np.concatenate([caps, np.full(p, big, dtype=np.int64)])
    m = csr_array((w2, (r2, c2)), shape=(n + 2, n + 2))  # int64, as w2
    m.sum_duplicates()
    return m, source, sink


def _csr_parts(net: nx.DiGraph) -> Any:
    """The network's edges as integer arrays (False when a capacity is not an integer)."""
    import numpy as np

    index = {x: i for i, x in enumerate(net.nodes)}
    rows, cols, caps = [], [], []
    for a, b, data in net.edges(data=True):
        c = data.get("capacity")
        if c is None or int(c) != c:
            return False
        rows.append(index[a])
        cols.append(index[b])
        caps.append(int(c))
    big = sum(caps) + 1  # more than any cut: the source and sink edges are never cut
    return (index, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(caps, dtype=np.int64),
            big)


def link_part(topo: Topology, net: nx.DiGraph, a: Any, b: Any, s: int, d: int) -> Any:
    # the capacity of one link's share of a network edge (edges shared by several links sum them)
    total = net[a][b]["capacity"]
    if len(net[a][b]["links"]) == 1:
        return total
    return total * topo.bandwidth(s, d) / sum(topo.bandwidth(x, y) for x, y in net[a][b]["links"])

