"""Tree packing: every address gets its own spanning tree, chosen to even out the load on links and
switch groups, and the list scheduler (`pipeline.py`) pipelines them: ForestColl's idea (Zhao et al.,
"ForestColl: Efficient Collective Communications on Heterogeneous Network Fabrics", 2024: pack
spanning out-trees by link capacity) with a greedy packing instead of its exact one.

Each tree grows from its root like Prim's algorithm: among the links from a rank in the tree to a rank
outside it, the one whose busiest resource (the link, or a switch group it crosses) would be least
loaded relative to its capacity, ties to the shallower, then the lower ranks. Loads accumulate over the
addresses, so later trees avoid what earlier ones used: on a switch, where a ring uses every port once
per step, the trees spread over every port; on mixed machines (MI250, AMD8, tori) they use the lanes the
rings leave idle. Allgather and Broadcast use out-trees, ReduceScatter and Reduce the in-trees of the
reversed links, Allreduce an in-tree to the address's owner and an out-tree from it.

A link's capacity is its bandwidth in units (lanes). Where the links' speeds per unit differ (a 5 GB/s and
a 10 GB/s link of one unit each, NICs beside NVLinks) `treepacks` also offers the packing by speed (GB/s,
a switch group at its rate): the sweep keeps the faster. The spec file custom-example (a switch group
inside the node, one slow link) times 0.67 of the bound for ReduceScatter, Reduce and Allreduce and 0.50
for Broadcast by units, 0.99-1.00 by speed (docs/benchmarks.md, "Unseen machines and sizes (session 9)").
"""

from __future__ import annotations

from collections.abc import Sequence

from smtcoll.bounds.throughput import rates
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.synth.constructions.common import NotApplicable, kind
from smtcoll.synth.constructions.pipeline import Plan, busiest_link, schedule_transfers
from smtcoll.synth.constructions.trees import distances

TARGET_ADDRESSES = 64


class Loads:
    """Chunks so far on every link and switch group, and the neighbour lists (looked up once); capacities
    in units of bandwidth, or with `speeds` in GB/s (`bounds.throughput.rates`)."""

    def __init__(self, topo: Topology, speeds: bool = False) -> None:
        self.topo = topo
        self.link: dict[tuple[int, int], int] = {}
        self.group = [0] * len(topo.switches)
        self.groups_of = {(l.src, l.dst): topo.switches_of(l.src, l.dst) for l in topo.links}
        self.bw: dict[tuple[int, int], float] = {(l.src, l.dst): l.bandwidth for l in topo.links}
        self.cap: list[float] = [g.bandwidth for g in topo.switches]
        if speeds:
            r = rates(topo)
            self.bw = {(l.src, l.dst): float(r.link[e]) for e, l in enumerate(topo.links)}
            self.cap = [float(x) for x in r.group]
        self.out: dict[int, list[int]] = {r: [] for r in range(topo.ranks)}
        self.into: dict[int, list[int]] = {r: [] for r in range(topo.ranks)}
        for s, d in sorted(self.bw):
            self.out[s].append(d)
            self.into[d].append(s)

    def cost(self, u: int, v: int) -> float:
        """The busiest resource of link u -> v, relative to its capacity, if it carried one more chunk (a
        float: a quotient of small integers, the same on every IEEE machine, and 10x faster than Fraction)."""
        worst = (self.link.get((u, v), 0) + 1) / self.bw[(u, v)]
        for g in self.groups_of[(u, v)]:
            worst = max(worst, (self.group[g] + 1) / self.cap[g])
        return worst

    def use(self, u: int, v: int) -> None:
        self.link[(u, v)] = self.link.get((u, v), 0) + 1
        for g in self.groups_of[(u, v)]:
            self.group[g] += 1


def spanning_tree(topo: Topology, root: int, loads: Loads, inward: bool,
                  ranks: Sequence[int] | None = None, slack: int | None = None) -> dict[int, int]:
    """rank -> parent: an out-tree from `root` (inward False) or an in-tree to it, grown greedily, over
    `ranks` (default: all) and the links among them; with `slack`, no rank deeper than its distance from
    the root plus `slack`."""
    inside = set(range(topo.ranks) if ranks is None else ranks)
    far = distances(topo, root, inward, inside) if slack is not None else {}
    near = loads.into if inward else loads.out
    depth = {root: 0}
    parent: dict[int, int] = {}
    # candidate links from the tree, each with its key; a link's key changes only when that link (or a
    # group it shares) is used, so the candidates are re-keyed after each addition (Prim's algorithm)
    frontier: dict[tuple[int, int], tuple] = {}

    def offer(u: int) -> None:
        for v in near[u]:
            if v in depth or v not in inside or (slack is not None and depth[u] + 1 > far[v] + slack):
                continue
            link = (v, u) if inward else (u, v)
            frontier[(u, v)] = (loads.cost(*link), depth[u], u, v)

    offer(root)
    while len(depth) < len(inside):
        if not frontier:
            raise NotApplicable(f"some rank cannot {'reach' if inward else 'be reached from'} rank {root}")
        _, d, u, v = min(frontier.values())
        depth[v] = d + 1
        parent[v] = u
        used = (v, u) if inward else (u, v)
        loads.use(*used)
        shared = set(loads.groups_of[used])
        for key in [k for k in frontier if k[1] == v]:
            del frontier[key]
        for (a, b), old in list(frontier.items()):
            link = (b, a) if inward else (a, b)
            if link == used or shared.intersection(loads.groups_of[link]):
                frontier[(a, b)] = (loads.cost(*link), *old[1:])
        offer(v)
    return parent


def uneven(topo: Topology) -> bool:
    """Whether the links' speeds per unit of bandwidth differ (the packings by units and by speed differ)."""
    r = rates(topo)
    return len({x / l.bandwidth for x, l in zip(r.link, topo.links, strict=True)}) > 1


def treepacks(topo: Topology, base: Collective) -> list[Schedule]:
    """`treepack`'s schedule (capacities in units), then, where the speeds per unit differ, the packing by
    speed (the sweep's candidates)."""
    first = treepack(topo, base)
    return [first, treepack(topo, base, speeds=True)] if uneven(topo) else [first]


def treepack(topo: Topology, base: Collective, speeds: bool = False) -> Schedule:
    what = kind(base)
    if what not in ("allgather", "broadcast", "reducescatter", "reduce", "allreduce"):
        raise NotApplicable("tree packing covers Allgather, Broadcast, ReduceScatter, Reduce and Allreduce")
    n = topo.ranks
    per_buffer = n if what in ("allgather", "reducescatter") else 1
    c = max(1, TARGET_ADDRESSES // per_buffer)
    while True:
        coll = base.with_chunks(c)
        plan = _plan(what, topo, coll, speeds)
        busiest = busiest_link(plan)
        if busiest <= MAX_STEPS["executor"] or c == 1:
            break
        c = max(1, c * MAX_STEPS["executor"] // busiest)
    return Schedule(topo, coll, schedule_transfers(topo, plan), name="treepack")


def _plan(what: str, topo: Topology, coll: Collective, speeds: bool) -> Plan:
    plan = Plan()
    loads = Loads(topo, speeds)
    c = coll.chunk_factor
    root = coll.root or 0
    # interleave the roots (address order r*C + j -> j-major) so that every root's trees share the loads
    addresses = sorted(coll.addresses, key=lambda a: (a % c, a // c))
    for a in addresses:
        if what in ("allgather", "reducescatter"):
            owner = a // c
        elif what == "allreduce":
            owner = a % topo.ranks
        else:
            owner = root
        if what in ("allgather", "broadcast"):
            plan.broadcast(a, spanning_tree(topo, owner, loads, inward=False), owner)
        elif what in ("reducescatter", "reduce"):
            plan.reduce(a, spanning_tree(topo, owner, loads, inward=True), owner)
        else:
            into = plan.reduce(a, spanning_tree(topo, owner, loads, inward=True), owner)
            plan.broadcast(a, spanning_tree(topo, owner, loads, inward=False), owner, into)
    return plan

