"""The entry bound: chunks must enter a node through its NICs, and the last one must still be forwarded.

For a node S (a set of ranks): D chunks that no rank of S starts with are needed by some rank of S.
Every round at most `cap` chunks cross into S (the bandwidth of the links into S, a switch group whose
sources are all outside S and destinations all inside counting once for all its links), so some chunk
first enters S in round ceil(D / cap) or later, at an entry rank (a destination of those links). A rank
s of S that needs every one of the D chunks receives that chunk no sooner than `hops` rounds later, the
distance to s from the nearest entry rank (one hop per step, and a step has at least one round).
Rounds >= ceil(D / cap) + hops. ndv2 x 4 Allgather: 24 chunks through one NIC (1 per round) into GPU 1,
from which GPUs 4, 6 and 7 are 2 hops away: 26 rounds, where the receive and cut bounds give 24.

The nodes are those `Topology.compose` builds (its NIC groups are named `nic<i>-...@node<j>`): the
components of the links that no NIC group bounds.
"""

from __future__ import annotations

from collections import deque

from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology


def node_of(topo: Topology) -> list[int] | None:
    """Each rank's node: the components joined by the links no NIC group bounds, numbered by their
    least rank; None on a machine of one node."""
    nic = [g for g in topo.switches if g.name.startswith("nic")]
    if not nic:
        return None
    through = {(u, v) for g in nic for u in g.srcs for v in g.dsts}
    parent = list(range(topo.ranks))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for l in topo.links:
        if (l.src, l.dst) not in through:
            a, b = root(l.src), root(l.dst)
            parent[max(a, b)] = min(a, b)
    roots = sorted({root(r) for r in range(topo.ranks)})
    if len(roots) < 2:
        return None
    index = {r: i for i, r in enumerate(roots)}
    return [index[root(r)] for r in range(topo.ranks)]


def entry_bound(topo: Topology, coll: Collective) -> Bound:
    """The entry bound (module docstring), the best over the nodes, in rounds for the collective as
    given; value None when the machine has one node or no node must import anything."""
    if coll.is_combining:  # partial sums may be combined before they enter: fewer than D would
        return Bound("entry", None, "rounds", {}, "combining collective")
    nodes = node_of(topo)
    if nodes is None:
        return Bound("entry", None, "rounds", {}, "one node")
    best: Bound = Bound("entry", None, "rounds", {}, "no node must import a chunk")
    for i in sorted(set(nodes)):
        inside = {r for r in range(topo.ranks) if nodes[r] == i}
        w = node_witness(topo, coll, inside)
        if w is not None:
            w = {"node": i, "chunks": coll.chunk_factor, **w}
        if w is not None and (best.value is None or w["rounds"] > best.value):
            best = Bound("entry", w["rounds"], "rounds", w,
                         "rounds for this chunk count: the node's imports enter at the capacity into it, the last "
                         "one must still reach the farthest rank")
    return best


def node_witness(topo: Topology, coll: Collective, inside: set[int]) -> dict | None:
    """The bound for one node, with everything needed to re-check it; None when it proves nothing."""
    held = {c for r, c in coll.pre if r in inside}
    imports = sorted({c for r, c in coll.post if r in inside} - held)
    if not imports:
        return None
    crossing = [l for l in topo.links if l.src not in inside and l.dst in inside]
    cap = _capacity(topo, crossing, inside)
    if cap <= 0:
        return None
    entries = sorted({l.dst for l in crossing})
    need = set(imports)
    needers = sorted(r for r in inside if need <= set(coll.post_sets[r]))
    dist = _from(topo, entries)
    hops, farthest = max(((dist.get(s, 0), s) for s in needers), default=(0, -1))
    ramp = -(-len(imports) // cap)
    return {"inside": sorted(inside), "must_enter": len(imports), "capacity": cap, "entries": entries,
            "farthest": farthest, "hops": hops, "rounds": ramp + hops}


def _capacity(topo: Topology, crossing: list, inside: set[int]) -> int:
    """Chunks that can cross into `inside` per round: the bandwidth of some switch groups (sources all
    outside, destinations all inside) that together bound every crossing link they cover, plus the
    bandwidth of the links none of them covers. Any such choice is an upper bound (each covered link's
    chunks count in a chosen group); the groups are chosen greedily, the least bandwidth per link
    bandwidth newly covered first, while that beats counting the links alone. (A NIC's out-group and its
    peer's in-group both cover a link between two nodes: counting both, mi250 x 2 Alltoall gave 8 rounds
    where the in-groups alone give 16.)"""
    bw = {(l.src, l.dst): l.bandwidth for l in crossing}
    links_of = []
    for g in topo.switches:
        if set(g.srcs) & inside or not set(g.dsts) <= inside:
            continue
        srcs = set(g.srcs)
        dsts = set(g.dsts)
        mine = frozenset(k for k in bw if k[0] in srcs and k[1] in dsts)
        if mine:
            links_of.append((g.bandwidth, mine))
    return greedy_cover(bw, links_of)


def greedy_cover(bw: dict[tuple[int, int], int], links_of: list[tuple[int, frozenset[tuple[int, int]]]]) -> int:
    """Per round, an upper bound on what the links `bw` (link -> bandwidth) carry in all when the switch groups
    `links_of` ((bandwidth, the links it bounds)) are counted instead of the links they cover: the groups
    chosen greedily, the least bandwidth per link bandwidth newly covered first, while that beats counting the
    links; the uncovered links count their own bandwidth. Any choice is an upper bound."""
    left = set(bw)
    cap = 0
    while True:
        best = None
        for gbw, mine in links_of:
            new = sum(bw[k] for k in mine & left)
            if new > gbw and (best is None or gbw * best[1] < best[0] * new):
                best = (gbw, new, mine)
        if best is None:
            break
        cap += best[0]
        left -= best[2]
    return cap + sum(bw[k] for k in left)


def _from(topo: Topology, sources: list[int], reverse: bool = False) -> dict[int, int]:
    """Hops from the nearest of `sources` (breadth-first search over the links); `reverse`: hops to the
    nearest of them."""
    out: dict[int, list[int]] = {}
    for l in topo.links:
        a, b = (l.dst, l.src) if reverse else (l.src, l.dst)
        out.setdefault(a, []).append(b)
    dist = dict.fromkeys(sources, 0)
    queue = deque(sources)
    while queue:
        x = queue.popleft()
        for y in out.get(x, []):
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist
