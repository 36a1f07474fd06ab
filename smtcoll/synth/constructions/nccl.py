"""NCCL's own algorithms in the step model: the baselines the sweep compares against, built as NCCL
builds them (src/graph/search.cc for the rings, src/device/*.h for the per-step data movement).

- `ring`: every ring NCCL's search finds (one channel each): Allgather and ReduceScatter around each
  ring, Allreduce as ReduceScatter then Allgather on each ring, Broadcast and Reduce as pipelined chains.
- `direct`: Alltoall as NCCL's p2p sends, every pair at once (src/device/sendrecv.h); where two ranks
  have no link, along a shortest path, the pairs spread over the links least loaded so far.
"""

from __future__ import annotations

import itertools

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.pipeline import Plan, busiest_link, schedule_transfers

CHAIN_PIECES = 8  # Broadcast/Reduce pieces per ring: NCCL pipelines a chain over slices of the buffer


def ring_steps(what: str, ranks: int) -> int:
    """Steps of the ring algorithm for `what` on `ranks` ranks (every ring runs them in parallel)."""
    return {"allgather": ranks - 1, "reducescatter": ranks - 1, "allreduce": 2 * (ranks - 1),
            "broadcast": CHAIN_PIECES + ranks - 2, "reduce": CHAIN_PIECES + ranks - 2}.get(what, 0)


def lowerable_rings(topo: Topology, base: Collective) -> tuple[ringlib.Ring, ...]:
    """The rings, at most as many through one link as keep a thread block within the executor's steps:
    the lowering gives each peer one sending thread block per channel, which runs every ring's sends to
    that peer in turn (NCCL itself gives each ring its own channel)."""
    steps = ring_steps(kind(base), topo.ranks)
    if not steps:
        raise NotApplicable(f"no ring algorithm for {kind(base)}")
    return ringlib.find_rings(topo, per_link=max(1, MAX_STEPS["executor"] // steps))


def ring_schedule(topo: Topology, base: Collective, rings: tuple[ringlib.Ring, ...], name: str) -> Schedule:
    if not rings:
        raise NotApplicable(f"{topo.name} has no directed Hamiltonian ring")
    what, k, n = kind(base), len(rings), topo.ranks
    if what == "allgather":
        coll = base.with_chunks(k)
        steps = ringlib.allgather_steps(rings, coll)
    elif what == "reducescatter":
        coll = base.with_chunks(k)
        steps = ringlib.reducescatter_steps(rings, coll)
    elif what == "allreduce":
        coll = base.with_chunks(n * k)
        steps = ringlib.allreduce_steps(rings, coll)
    elif what in ("broadcast", "reduce"):
        root = base.root or 0
        coll = base.with_chunks(k * CHAIN_PIECES)
        steps = ringlib.chain_steps(rings, coll, root, CHAIN_PIECES, toward_root=what == "reduce")
    else:
        raise NotApplicable(f"no ring algorithm for {what}")
    # rings through the nodes may share a switch inside a node (NCCL's channels do): a step then takes the
    # rounds its busiest group needs
    steps = [Step(max(s.rounds, _rounds(topo, list(s.sends))), s.sends) for s in steps]
    return Schedule(topo, coll, steps, name=name)


def ring(topo: Topology, base: Collective) -> Schedule:
    """NCCL's ring algorithm over the rings its search finds."""
    return ring_schedule(topo, base, lowerable_rings(topo, base), "nccl_ring")


def direct(topo: Topology, base: Collective) -> Schedule:
    """Alltoall as direct sends: hop h of every pair's shortest path in step h; a step's rounds are the
    most chunks any link or switch group carries in it, divided by its bandwidth (rounded up)."""
    if kind(base) != "alltoall":
        raise NotApplicable("direct sends are NCCL's Alltoall (p2p)")
    n = topo.ranks
    dist = topo.distances
    if any(len(dist[s]) < n for s in range(n)):
        raise NotApplicable(f"{topo.name} is not strongly connected")
    load: dict[tuple[int, int], int] = {}
    hops: dict[int, list[Send]] = {}
    # longest paths first, each hop onto the least loaded link that stays on a shortest path
    pairs = sorted(((s, d) for s in range(n) for d in range(n) if s != d), key=lambda p: (-dist[p[0]][p[1]], p))
    for s, d in pairs:
        u, h = s, 0
        while u != d:
            nxt = [v for v in topo.out_neighbors(u) if dist[v].get(d, n + 1) == dist[u][d] - 1]
            v = min(nxt, key=lambda v: (load.get((u, v), 0) / topo.bandwidth(u, v), v))
            load[(u, v)] = load.get((u, v), 0) + 1
            hops.setdefault(h, []).append(Send(s * n + d, u, v))
            u, h = v, h + 1
    coll = base.with_chunks(1)
    steps = [Step(_rounds(topo, sends), sorted(sends, key=send_key)) for _, sends in sorted(hops.items())]
    return Schedule(topo, coll, steps, name="nccl_direct")


def _rounds(topo: Topology, sends: list[Send]) -> int:
    """The fewest rounds in which the links and switch groups carry `sends`."""
    per_link: dict[tuple[int, int], int] = {}
    for x in sends:
        per_link[(x.src, x.dst)] = per_link.get((x.src, x.dst), 0) + 1
    need = max(-(-c // topo.bandwidth(u, v)) for (u, v), c in per_link.items())
    for g in topo.switches:
        used = sum(c for (u, v), c in per_link.items() if u in g.srcs and v in g.dsts)
        need = max(need, -(-used // g.bandwidth))
    return max(1, need)


def btree_parent(n: int, rank: int) -> int | None:
    """NCCL's binary tree over n ranks (src/graph/trees.cc, ncclGetBtree): the parent of `rank`, None
    for the root 0. The parent clears the rank's lowest set bit and sets the next one up when that
    stays below n."""
    if rank == 0:
        return None
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    up = (rank ^ bit) | (bit << 1)
    return up if up < n else rank ^ bit


def dtree_parents(n: int) -> tuple[list[int | None], list[int | None]]:
    """NCCL's double binary tree (ncclGetDtree): the second tree mirrors the first (n even) or shifts it
    by one (n odd), so that a rank that is a leaf in one tree is inside the other."""
    first = [btree_parent(n, r) for r in range(n)]
    second: list[int | None] = []
    for r in range(n):
        if n % 2:
            p = btree_parent(n, (r - 1) % n)
            second.append(None if p is None else (p + 1) % n)
        else:
            p = btree_parent(n, n - 1 - r)
            second.append(None if p is None else n - 1 - p)
    return first, second


TREE_ADDRESSES = 64  # addresses: the pipeline's depth is paid once; a link carries at most 64 operations


def tree(topo: Topology, base: Collective) -> Schedule:
    """NCCL's tree Allreduce: across nodes the double binary tree (half of the addresses on each tree),
    inside each node a chain from the rank the parent's NIC reaches to the rank whose NIC reaches the
    parent; reduce up (each rank adds and forwards once its children's partial sums arrived), broadcast
    down the same way. On one node: chains along the rings, reduced to the chain's end and broadcast
    back along the reversed chain (src/device/all_reduce.h, runTreeUpDown)."""
    from smtcoll.msccl.runtime import MAX_STEPS

    if kind(base) != "allreduce":
        raise NotApplicable("NCCL's tree algorithm is for Allreduce")
    node = ringlib.nodes_of(topo)
    n = max(node) + 1
    if n == 1:
        chains = [list(r) for r in ringlib.find_rings(topo, per_link=1)]
        if not chains:
            raise NotApplicable(f"{topo.name} has no Hamiltonian ring to chain along")
        trees: list[list[int | None]] = [[None]]
    else:
        rings = ringlib.find_rings(topo)
        if not rings:
            raise NotApplicable(f"{topo.name} has no ring through the nodes to chain along")
        ring = rings[0]
        chain_of = [[r for r in ring if node[r] == j] for j in range(n)]
        chains = [[x for j in range(n) for x in chain_of[j]]]
        trees = list(dtree_parents(n))
        for parents in trees:
            for j, p in enumerate(parents):
                if p is not None and not (topo.has_link(chain_of[j][-1], chain_of[p][0])
                                          and topo.has_link(chain_of[p][-1], chain_of[j][0])):
                    raise NotApplicable(f"no NIC link between the chains of nodes {j} and {p}")
    c = TREE_ADDRESSES - TREE_ADDRESSES % (len(trees) * len(chains))
    while True:
        coll = base.with_chunks(c)
        plan = Plan()
        for a in range(c):
            _tree_address(plan, topo, a, chains[a % len(chains)], trees[a % len(trees)], node, n)
        busiest = busiest_link(plan)
        if busiest <= MAX_STEPS["executor"] or c <= len(trees) * len(chains):
            break
        c = max(1, c * MAX_STEPS["executor"] // busiest // (len(trees) * len(chains))) * len(trees) * len(chains)
    return Schedule(topo, coll, schedule_transfers(topo, plan), name="nccl_tree")


def _tree_address(plan: Plan, topo: Topology, a: int, chain: list[int], parents: list[int | None], node: list[int],
                  n: int) -> None:
    """One address: chain j of the nodes (in `chain`, node by node) reduced into its last rank after the
    child nodes' partial sums arrived at its first; the root node's last rank holds the sum, which goes
    back along its chain reversed (or a shortest-path tree where a reverse link is missing), and down the
    tree to each child node's first rank, then along that node's chain."""
    from smtcoll.synth.constructions.trees import bfs_tree

    blocks = [[r for r in chain if node[r] == j] for j in range(n)]
    children: dict[int, list[int]] = {}
    for j, p in enumerate(parents):
        if p is not None:
            children.setdefault(p, []).append(j)
    root = parents.index(None)
    up: dict[int, int] = {}  # node -> the transfer bringing its partial sum to the parent

    def reduce(j: int) -> None:
        for ch in sorted(children.get(j, [])):
            reduce(ch)
        block = blocks[j]
        arrived = [up[ch] for ch in sorted(children.get(j, []))]
        last = None
        for u, v in itertools.pairwise(block):
            last = plan.add(a, u, v, arrived if last is None else [last])
        deps = arrived if last is None else [last]
        parent = parents[j]
        if parent is not None:
            up[j] = plan.add(a, block[-1], blocks[parent][0], deps)
        else:
            up[j] = -1
            reduce_done[:] = deps

    reduce_done: list[int] = []
    reduce(root)
    # the sum is at the root node's last rank: back along its chain
    top = blocks[root]
    if all(topo.has_link(v, u) for u, v in itertools.pairwise(top)):
        arrival: dict[int, int] = {}
        prev = reduce_done
        for u, v in zip(reversed(top), list(reversed(top))[1:]):
            arrival[v] = plan.add(a, u, v, prev)
            prev = [arrival[v]]
    else:
        arrival = plan.broadcast(a, bfs_tree(topo, top, top[-1], a, inward=False), top[-1], reduce_done)

    def down(j: int, got: list[int]) -> None:
        for ch in sorted(children.get(j, [])):
            block = blocks[ch]
            t = plan.add(a, blocks[j][-1], block[0], got)
            prev = [t]
            for u, v in itertools.pairwise(block):
                prev = [plan.add(a, u, v, prev)]
            down(ch, prev)

    down(root, [arrival[top[-1]]] if top[-1] in arrival else reduce_done)
