"""Hierarchical collectives across nodes: inside each node along trees that balance the links' loads
(`treepack.spanning_tree`, at most 2 hops deeper than the shortest path), across the nodes
through their NICs, pipelined address by address (the list scheduler of `pipeline.py`), so that the NIC
carries one address per step while the NVLink trees of the next addresses run beside it.

Allreduce, per address (root node R rotating over the nodes, NIC rotating over a node's NICs): every
other node reduces the address to its NIC and sends its partial sum to R; R reduces its own ranks and
the arrived partials to one rank, broadcasts the sum inside R and sends it to every other node's NIC,
which broadcasts it inside its node. Each address crosses into every node twice over a cycle of n
roots: 2(n - 1)/n of the buffer per node, the NIC cut bound (2 nodes: the buffer once each way: ndv2 x2
23.4 GB/s bus bandwidth). Allgather: the owner's node broadcasts the address and sends it to every other
node once. ReduceScatter: every other node reduces its partial to its NIC, sends it to the owner's node,
which reduces it into the owner. Blue Connect (Cho et al., 2019) and NCCL's hierarchical (CollNet-less)
two-level algorithms follow the same idea.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.pipeline import Plan, busiest_link, schedule_transfers
from smtcoll.synth.constructions.treepack import Loads, spanning_tree
from smtcoll.synth.constructions.trees import Gateways, node_ranks

# addresses at each end of an Allreduce pipeline that take shortest-path trees: the NICs wait for the first
# addresses' reductions and the last broadcasts wait for the NICs, so the ends want the shallowest trees. 4,
# not 2: in the sweep's model ndv2 x2 goes from 0.948 to 0.958 of the bound at 256 MiB and x4 from 0.76 to
# 0.79; 8 loses on x4 (0.70), where the balanced trees' spread of the NVLink load matters more
# (docs/benchmarks.md, "ndv2 re-run (session 5)")
EDGE = 4
TARGET_ADDRESSES = 64  # addresses per buffer: enough to pipeline trees a few steps deep
# transfers on one link at most: its thread block (one per peer and channel) holds MAX_STEPS["executor"]
# operations (lower/fusion.py keeps a fused pair of connections within it too)
OPS_PER_LINK = MAX_STEPS["executor"]


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
    c = step * max(1, -(-TARGET_ADDRESSES // (step * per_buffer)))
    while True:
        coll = base.with_chunks(c)
        plan = _plan(what, topo, coll, members, gates, node)
        busiest = busiest_link(plan)
        if busiest <= OPS_PER_LINK or c <= step:
            break
        # the same trees per address: the busiest link's load scales with C
        c = max(step, c * OPS_PER_LINK // busiest // step * step)
    return Schedule(topo, coll, schedule_transfers(topo, plan), name="hier")


def _plan(what: str, topo: Topology, coll: Collective, members: list[list[int]], gates: Gateways,
          node: list[int]) -> Plan:
    plan = Plan()
    loads = Loads(topo)
    n, c = len(members), coll.chunk_factor
    if what == "allreduce":
        for a in range(c):
            # shortest trees at both ends of the pipeline (its ramp), balanced ones in between
            edge = a < EDGE or a >= c - EDGE
            _allreduce_address(plan, loads, topo, members, gates, a, a % n, a // n, 0 if edge else 2)
        return plan
    for a in coll.addresses:
        owner = a // c
        if what == "allgather":
            _allgather_address(plan, loads, topo, members, gates, node, a, owner, a)
        else:
            _reducescatter_address(plan, loads, topo, members, gates, node, a, owner, a)
    return plan


def _allreduce_address(plan: Plan, loads: Loads, topo: Topology, members: list[list[int]], gates: Gateways, a: int,
                       root_node: int, k: int, slack: int = 2) -> None:
    n = len(members)
    foreign: dict[int, list[int]] = {}
    for j in range(n):
        if j == root_node:
            continue
        s, g = gates.pick(j, root_node, k)
        into_s = plan.reduce(a, spanning_tree(topo, s, loads, True, members[j], slack=slack), s)
        foreign.setdefault(g, []).append(plan.add(a, s, g, into_s))
    r = min(foreign) if foreign else members[root_node][0]
    into_r = plan.reduce(a, spanning_tree(topo, r, loads, True, members[root_node], slack=slack), r, foreign)
    done = [*into_r, *foreign.get(r, [])]
    arrival = plan.broadcast(a, spanning_tree(topo, r, loads, False, members[root_node], slack=slack), r, done)
    for j in range(n):
        if j == root_node:
            continue
        s, g = gates.pick(root_node, j, k)
        deps = [arrival[s]] if s in arrival else done
        into_g = plan.add(a, s, g, deps)
        plan.broadcast(a, spanning_tree(topo, g, loads, False, members[j], slack=slack), g, [into_g])


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


def _reducescatter_address(plan: Plan, loads: Loads, topo: Topology, members: list[list[int]], gates: Gateways,
                           node: list[int], a: int, owner: int, k: int, slack: int = 2) -> None:
    i = node[owner]
    foreign: dict[int, list[int]] = {}
    for j in range(len(members)):
        if j == i:
            continue
        s, g = gates.pick(j, i, k)
        into_s = plan.reduce(a, spanning_tree(topo, s, loads, True, members[j], slack=slack), s)
        foreign.setdefault(g, []).append(plan.add(a, s, g, into_s))
    plan.reduce(a, spanning_tree(topo, owner, loads, True, members[i], slack=slack), owner, foreign)


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
