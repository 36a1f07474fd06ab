"""Hierarchical collectives across nodes: inside each node along trees that balance the links' loads
(`treepack.spanning_tree`, at most 2 hops deeper than the shortest path), across the nodes
through their NICs, pipelined address by address (the list scheduler of `pipeline.py`), so that the NIC
carries one address per step while the NVLink trees of the next addresses run beside it.

Allreduce and ReduceScatter go along the ring of the nodes (node i's NIC sends to node i + 1 only), a
group of addresses at a time, one address per node: the partial sum of the address that completes at
node j starts at node j + 1, and each node on its way reduces its own ranks into it (an in-tree to the
NIC that sends to the next node, through the rank the previous node's NIC wrote). ReduceScatter ends
with node j reducing into the address's owner; Allreduce reduces it into node j's sending NIC rank,
which broadcasts it inside j and passes it on around the ring, each node broadcasting it inside and
forwarding it. Each NIC carries (n - 1)/n of the buffer for ReduceScatter, 2(n - 1)/n for Allreduce:
the bounds (the cut around a node; the 2(n - 1) one-way gossip transfers between n nodes). Sending to
one peer only is what keeps the NICs busy: with every node sending to every other (the earlier direct
scheme, partials straight to the owner's node), a sender's next chunk waited for a receiver that another
sender held and ndv2 x4 reached 0.82 (ReduceScatter) and 0.92 (Allreduce) of the bound in the sweep's
model; along the ring 0.99. Allgather: the owner's node broadcasts the address and sends it to every
other node once. Blue Connect (Cho et al., 2019) and NCCL's hierarchical (CollNet-less)
two-level algorithms follow the same idea.
"""

from __future__ import annotations

from smtcoll.limits import MAX_CELLS
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.pipeline import Plan, busiest_link, schedule_transfers
from smtcoll.synth.constructions.treepack import Loads, spanning_tree
from smtcoll.synth.constructions.trees import Gateways, node_ranks

# groups (one address per node) at each end of a pipeline that take shortest-path trees: the NICs wait for
# the first groups' reductions inside the nodes and the last broadcasts or reductions wait for the NICs, so
# the ends want the shallowest trees; the balanced trees in between spread the NVLink load
EDGE_GROUPS = 1
# addresses per buffer, at most (OPS_PER_LINK bounds it): the smaller the chunks, the less the pipeline's
# ramp (the first reductions inside the nodes, the last broadcasts) costs. ndv2 x4 at 1 GiB in the sweep's
# model: Allreduce 0.970 of the bound with 64, 0.986 with 128 (docs/benchmarks.md, "ndv2 x4 (session 6)")
TARGET_ADDRESSES = 256
# messages on one connection at most: the lowering spreads a connection of more than 32 over channels, each
# thread block holding at most MAX_STEPS["executor"] (64) operations; 3 x 64 lowers at 1 and 2 instances
# (the thread blocks a rank waits for stay within the int8 depid) on ndv2 up to 8 nodes
OPS_PER_LINK = 3 * MAX_STEPS["executor"]


def across_nodes(topo: Topology, base: Collective, family: str) -> tuple[str, list[int], int, list[list[int]]]:
    """What a construction across nodes starts from: the collective's kind, each rank's node, the node
    count and each node's ranks; NotApplicable on one node or another collective."""
    what = kind(base)
    node = ringlib.nodes_of(topo)
    n = max(node) + 1
    if n < 2:
        raise NotApplicable(f"{family} schedules are for several nodes (--nodes N)")
    if what not in ("allreduce", "allgather", "reducescatter"):
        raise NotApplicable(f"{family} schedules cover Allreduce, Allgather and ReduceScatter")
    return what, node, n, node_ranks(node)


def hier(topo: Topology, base: Collective) -> Schedule:
    what, node, n, members = across_nodes(topo, base, "hierarchical")
    gates = Gateways(topo, node)
    if what == "allreduce":
        width = max(gates.width(i, j) for i in range(n) for j in range(n) if i != j)
        step = n * width  # C rotates the root over the nodes and the NIC over a node's NICs evenly
    else:
        step = 1  # pieces per rank
    per_buffer = topo.ranks if what != "allreduce" else 1
    # Allgather keeps 64 addresses within one thread block per link: it lowers at 8 instances, where its
    # direct sends do best (ndv2 x4 0.99 of the bound); with more, smaller chunks it lowers at 1 only
    target, most = (TARGET_ADDRESSES, OPS_PER_LINK) if what != "allgather" else (64, MAX_STEPS["executor"])
    c = step * max(1, -(-target // (step * per_buffer)))
    # within the rank x chunk cells a collective may have (limits.MAX_CELLS, checked where the lowering
    # builds its collectives): dgx2 x8 Allreduce keeps C = 64, 128 ranks x 8192 chunks
    cells = topo.ranks * topo.ranks * (topo.ranks if what == "reducescatter" else 1)
    c = max(step, min(c, MAX_CELLS // cells // step * step))
    while True:
        coll = base.with_chunks(c)
        plan = _plan(what, topo, coll, members, gates, node)
        busiest = busiest_link(plan)
        if busiest <= most or c <= step:
            break
        # the same trees per address: the busiest link's load scales with C
        c = max(step, c * most // busiest // step * step)
    return Schedule(topo, coll, schedule_transfers(topo, plan), name="hier")


def _plan(what: str, topo: Topology, coll: Collective, members: list[list[int]], gates: Gateways,
          node: list[int]) -> Plan:
    plan = Plan()
    loads = Loads(topo)
    n, c = len(members), coll.chunk_factor
    if what == "allgather":
        for a in coll.addresses:
            _allgather_address(plan, loads, topo, members, gates, node, a, a // c, a)
        return plan
    if what == "allreduce":
        groups = [list(range(x, min(c, x + n))) for x in range(0, c, n)]  # address a's sum completes at node a mod n
    else:
        groups = _groups(coll.addresses, c, members, node)
    for x, group in enumerate(groups):
        # shortest trees at both ends of the pipeline (its ramp), balanced ones in between
        slack = 0 if x < EDGE_GROUPS or x >= len(groups) - EDGE_GROUPS else 2
        if what == "allreduce":
            _allreduce_ring(plan, loads, topo, members, gates, group, slack)
        else:
            _reducescatter_ring(plan, loads, topo, members, gates, node, group, c, slack)
    return plan


def _groups(addresses, c: int, members: list[list[int]], node: list[int]) -> list[list[int]]:
    """The addresses in groups of one per owner's node (the i-th address of every node): along the ring of
    the nodes every NIC then carries one transfer per address of a group."""
    groups: dict[int, list[int]] = {}
    for a in addresses:
        owner = a // c
        groups.setdefault(members[node[owner]].index(owner) * c + a % c, []).append(a)
    return [groups[i] for i in sorted(groups)]


def _allgather_address(plan: Plan, loads: Loads, topo: Topology, members: list[list[int]], gates: Gateways,
                       node: list[int], a: int, owner: int, k: int, slack: int = 2) -> None:
    i = node[owner]
    arrival = plan.broadcast(a, spanning_tree(topo, owner, loads, False, members[i], slack=slack), owner)
    for j in range(len(members)):
        if j == i:
            continue
        s, g = gates.pick(i, j, k)
        into_g = plan.add(a, s, g, [arrival[s]] if s in arrival else [])
        plan.broadcast(a, spanning_tree(topo, g, loads, False, members[j], slack=slack), g, [into_g])


def _reducescatter_ring(plan: Plan, loads: Loads, topo: Topology, members: list[list[int]], gates: Gateways,
                        node: list[int], group: list[int], c: int, slack: int = 2) -> None:
    """ReduceScatter of a group of addresses (one per owner's node) along the ring of the nodes: the
    partial sum of the address owned by node j starts at node j + 1 and gathers every node's sum on its
    way to j, one NIC hop at a time, so each NIC only ever sends to the next node."""
    n = len(members)
    by_node = {node[a // c]: a for a in group}
    arrived: dict[int, tuple[int, int]] = {}  # owner node -> (receiving rank, transfer) of the partial so far
    for t in range(1, n):
        for j, a in sorted(by_node.items()):
            x = (j + t) % n
            s, g = gates.pick(x, (x + 1) % n, a)
            after = {arrived[j][0]: [arrived[j][1]]} if j in arrived else None
            into_s = plan.reduce(a, spanning_tree(topo, s, loads, True, members[x], slack=slack), s, after)
            if j in arrived and arrived[j][0] == s:
                into_s = [*into_s, arrived[j][1]]
            arrived[j] = (g, plan.add(a, s, g, into_s))
    for j, a in sorted(by_node.items()):
        owner = a // c
        after = {arrived[j][0]: [arrived[j][1]]} if j in arrived else None
        plan.reduce(a, spanning_tree(topo, owner, loads, True, members[j], slack=slack), owner, after)


def _allreduce_ring(plan: Plan, loads: Loads, topo: Topology, members: list[list[int]], gates: Gateways,
                    group: list[int], slack: int = 2) -> None:
    """Allreduce of a group of addresses (address a's sum completes at node a mod n) along the ring of the
    nodes: the partial sum travels from node j + 1 to j gathering every node's sum, then the whole sum
    travels on from j to j - 1, each node broadcasting it inside: every NIC sends to the next node only."""
    n = len(members)
    arrived: dict[int, tuple[int, int]] = {}  # address -> (receiving rank, transfer) of the value so far
    for t in range(1, n + 1):  # the partial sums: node j + t adds its own (t = n: the root node j)
        for a in group:
            j = a % n
            x = (j + t) % n
            s, g = gates.pick(x, (x + 1) % n, a // n)
            after = {arrived[a][0]: [arrived[a][1]]} if a in arrived else None
            into_s = plan.reduce(a, spanning_tree(topo, s, loads, True, members[x], slack=slack), s, after)
            if a in arrived and arrived[a][0] == s:
                into_s = [*into_s, arrived[a][1]]
            arrived[a] = (g, plan.add(a, s, g, into_s))
            if t == n:  # s holds the whole sum: on around the ring (first: the NIC is the scarce link), and inside
                plan.broadcast(a, spanning_tree(topo, s, loads, False, members[x], slack=slack), s, into_s)
    for t in range(1, n):  # the whole sum: node j + t broadcasts it and passes it on
        for a in group:
            j = a % n
            x = (j + t) % n
            g, into_g = arrived[a]
            at = plan.broadcast(a, spanning_tree(topo, g, loads, False, members[x], slack=slack), g, [into_g])
            if t < n - 1:
                s, g2 = gates.pick(x, (x + 1) % n, a // n)
                arrived[a] = (g2, plan.add(a, s, g2, [at[s]] if s in at else [into_g]))


def hier2d(topo: Topology, base: Collective) -> Schedule:
    """Allreduce in two dimensions: ReduceScatter on rings inside every node (the same rings in every
    node), then the segment owners of equal local rank allreduce across the nodes on their own NICs
    (an exchange for 2 nodes, a ring of the nodes beyond), then Allgather on the rings inside the nodes.
    Inside-node steps carry only fast links and cross-node steps only NICs, so each is charged its own
    speed. Needs a link from local rank b of every node to local rank b of the next (A100, MI250 NICs).
    Allgather: the cross-node ring first, then the rings inside the nodes with n pieces per rank."""
    from smtcoll.model import Send, Step

    what = kind(base)
    node = ringlib.nodes_of(topo)
    n = max(node) + 1
    if n < 2:
        raise NotApplicable("two-dimensional schedules are for several nodes (--nodes N)")
    if what not in ("allreduce", "allgather"):
        raise NotApplicable("two-dimensional schedules cover Allreduce and Allgather")
    members = node_ranks(node)
    p = len(members[0])
    if any(len(m) != p or m != list(range(i * p, i * p + p)) for i, m in enumerate(members)):
        raise NotApplicable("nodes of unequal size")
    for b in range(p):
        for i in range(n):
            if not topo.has_link(i * p + b, (i + 1) % n * p + b):
                raise NotApplicable(f"no link from local rank {b} of node {i} to local rank {b} of node "
                                    f"{(i + 1) % n}")
    sub = 1 if n == 2 or what == "allgather" else n  # pieces per segment for the ring across nodes
    intra_steps = 2 * (p - 1) * sub if what == "allreduce" else (p - 1) * n
    local = ringlib.find_rings(ringlib.node_topology(topo, members[0]), per_link=max(1, 64 // intra_steps))
    if not local:
        raise NotApplicable(f"no ring inside a node of {topo.name}")
    k = len(local)
    rings = [[tuple(i * p + r for r in ring) for ring in local] for i in range(n)]
    steps: list[Step] = []

    def intra(coll_addr, reduce: bool) -> None:
        """Ring ReduceScatter (reduce) or Allgather of segments inside every node, `sub` pieces each;
        coll_addr(i, s, q, node) is the address of piece q of segment s of ring i."""
        for t in range(p - 1):
            sends = []
            for x in range(n):
                for i, ring in enumerate(rings[x]):
                    for pos in range(p):
                        s = (pos - 1 - t) % p if reduce else (pos - t) % p
                        for q in range(sub):
                            sends.append(Send(coll_addr(i, s, q, x), ring[pos], ring[(pos + 1) % p]))
            steps.append(Step(sub, sorted(sends, key=send_key)))

    if what == "allreduce":
        coll = base.with_chunks(k * p * sub)

        def addr(i: int, s: int, q: int, x: int = 0) -> int:
            return (i * p + s) * sub + q

        intra(addr, True)
        # the owner of segment s of ring i is local rank local[i][s], in every node
        owners = [(i, s, local[i][s]) for i in range(k) for s in range(p)]
        if n == 2:
            sends = [Send(addr(i, s, 0), x * p + b, (1 - x) * p + b) for i, s, b in owners for x in range(2)]
            steps.append(Step(_most_per_link(sends, topo), sorted(sends, key=send_key)))
        else:
            for reduce in (True, False):
                for t in range(n - 1):
                    sends = [Send(addr(i, s, (x - 1 - t) % n if reduce else (x - t) % n), x * p + b,
                                  (x + 1) % n * p + b) for i, s, b in owners for x in range(n)]
                    steps.append(Step(_most_per_link(sends, topo), sorted(sends, key=send_key)))
        intra(addr, False)
    else:
        coll = base.with_chunks(k)
        # across nodes: local rank b's k pieces go round the ring of the nodes
        for t in range(n - 1):
            sends = [Send(((x - t) % n * p + b) * k + i, x * p + b, (x + 1) % n * p + b)
                     for b in range(p) for x in range(n) for i in range(k)]
            steps.append(Step(_most_per_link(sends, topo), sorted(sends, key=send_key)))
        # inside: ring i carries piece i of every node's copy of the owner's chunk
        for t in range(p - 1):
            sends = []
            for x in range(n):
                for i, ring in enumerate(rings[x]):
                    for pos in range(p):
                        b = ring[(pos - t) % p] - x * p
                        sends += [Send((y * p + b) * k + i, ring[pos], ring[(pos + 1) % p]) for y in range(n)]
            steps.append(Step(n, sorted(sends, key=send_key)))
    return Schedule(topo, coll, steps, name="hier2d")


def _most_per_link(sends, topo: Topology) -> int:
    """Rounds a step needs: the most chunks on one link or switch group over its bandwidth."""
    load: dict[tuple[int, int], int] = {}
    for x in sends:
        load[(x.src, x.dst)] = load.get((x.src, x.dst), 0) + 1
    need = max(-(-c // topo.bandwidth(u, v)) for (u, v), c in load.items())
    for g in topo.switches:
        used = sum(c for (u, v), c in load.items() if u in g.srcs and v in g.dsts)
        need = max(need, -(-used // g.bandwidth))
    return need
