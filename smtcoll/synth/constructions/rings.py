"""Edge-disjoint directed Hamiltonian rings, found the way NCCL finds its rings, and the ring schedules.

NCCL (src/graph/search.cc, `ncclTopoSearchRec`) builds its channels by a depth-first search for
Hamiltonian rings over the GPUs, each ring taking bandwidth from every link it uses, and keeps searching
for more rings while bandwidth is left; across nodes a ring enters a node through its NIC, visits all its
GPUs and leaves through the NIC (the GPUs of a node are contiguous in the ring). Here a link of bandwidth
`b` has `b` lanes and a switch group of bandwidth `b` admits `b` rings through it (NVSwitch ports,
NICs); a ring takes one lane of every link and one unit of every group it crosses. The search is a plain
depth-first search with a node budget (no library finds several disjoint Hamiltonian cycles), trying
links in rank order: deterministic.

The schedules (Allgather, ReduceScatter, Allreduce = ReduceScatter then Allgather, Broadcast and Reduce
as pipelined chains) give every ring one chunk per link per step, so steps have one round and the link
loads stay within the lanes by construction; the checker still judges the result.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

import attrs

from smtcoll.model import Collective, Send, Step, SwitchGroup, Topology
from smtcoll.synth.constructions.common import send_key

Ring = tuple[int, ...]
SEARCH_BUDGET = 400_000  # search nodes (rank extensions, packing choices); the built-ins need far fewer
MAX_CYCLES = 5000  # Hamiltonian cycles enumerated for the exact packing
JOIN_BUDGET = 100_000  # packing choices for the rings joined through the nodes


def nodes_of(topo: Topology) -> list[int]:
    """Node index of every rank (`Topology.node_count`: node i holds ranks i*P .. i*P + P - 1)."""
    per = topo.ranks // topo.node_count
    return [r // per for r in range(topo.ranks)]


def uplinks(topo: Topology, node: Sequence[int]) -> dict[int, set[int]]:
    """Per switch group that bounds links between nodes with senders in more than one node and receivers in
    more than one (a leaf switch's uplinks, shared by the NICs of its nodes; a NIC's own group has one of the
    two in one node), the nodes that send through it."""
    out: dict[int, set[int]] = {}
    for i, g in enumerate(topo.switches):
        across = [(u, v) for u in g.srcs for v in g.dsts if node[u] != node[v] and topo.has_link(u, v)]
        if len({node[u] for u, _ in across}) > 1 and len({node[v] for _, v in across}) > 1:
            out[i] = {node[u] for u, _ in across}
    return out


def node_order(topo: Topology, node: Sequence[int]) -> list[int]:
    """The nodes in the order a ring of them takes: those behind the same shared uplinks (`uplinks`)
    together, the groups by their least node, else by index. A ring in that order crosses each leaf's uplinks
    once each way; in index order a machine whose leaves hold nodes 0, 2 and 1, 3 crosses them twice."""
    n = max(node) + 1
    behind: list[set[int]] = [set() for _ in range(n)]
    for i, senders in uplinks(topo, node).items():
        for b in senders:
            behind[b].add(i)
    first: dict[frozenset[int], int] = {}
    for b in range(n):
        first.setdefault(frozenset(behind[b]), b)
    return sorted(range(n), key=lambda b: (first[frozenset(behind[b])], b))


class _Residual:
    """Lanes left on links and units left in switch groups."""

    def __init__(self, topo: Topology, per_link: int | None = None) -> None:
        self.topo = topo
        cap = per_link if per_link is not None else max((l.bandwidth for l in topo.links), default=0)
        self.lanes = {(l.src, l.dst): min(l.bandwidth, cap) for l in topo.links}
        self.groups = [g.bandwidth for g in topo.switches]
        self.groups_of = {key: topo.switches_of(*key) for key in self.lanes}
        self.out = {r: topo.out_neighbors(r) for r in range(topo.ranks)}

    def free(self, u: int, v: int) -> bool:
        return self.lanes.get((u, v), 0) > 0 and all(self.groups[g] > 0 for g in self.groups_of[(u, v)])

    def fits(self, pairs: Sequence[tuple[int, int]]) -> bool:
        """Whether one more ring over `pairs` fits: a lane on each, a unit of each group per pair through it."""
        if not all(self.lanes.get(e, 0) > 0 for e in pairs):
            return False
        need: dict[int, int] = {}
        for e in pairs:
            for g in self.groups_of[e]:
                need[g] = need.get(g, 0) + 1
        return all(self.groups[g] >= k for g, k in need.items())

    def take(self, u: int, v: int, amount: int) -> None:
        self.lanes[(u, v)] -= amount
        for g in self.groups_of[(u, v)]:
            self.groups[g] -= amount

    def capacity(self, r: int, outgoing: bool) -> int:
        """Rings that can still leave (enter) rank r: its lanes, at most its groups' units."""
        keys = [(r, v) for v in self.out[r]] if outgoing else [(u, r) for u in self.topo.in_neighbors(r)]
        total = sum(self.lanes[k] for k in keys)
        groups = {g for k in keys for g in self.groups_of[k]}
        for g in groups:
            if all(g in self.groups_of[k] for k in keys):  # every way out (in) goes through this group
                total = min(total, self.groups[g])
        return max(0, total)


def _cycles(res: _Residual, node: list[int], start: int, budget: list[int]) -> Iterator[Ring]:
    """Hamiltonian cycles from `start` in the residual graph, in lexicographic order, a node's ranks
    contiguous (a ring leaves a node only once it visited all of the node's ranks)."""
    n = res.topo.ranks
    path, seen = [start], [False] * n
    seen[start] = True
    left_in_node = [node.count(k) for k in range(max(node) + 1)]
    left_in_node[node[start]] -= 1
    exits = {l.src for l in res.topo.links if node[l.src] != node[l.dst]}

    def rec() -> Iterator[Ring]:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        u = path[-1]
        if len(path) == n:
            if res.free(u, start):
                yield tuple(path)
            return
        # across nodes, ranks that can leave the node come last, and one must stay for the exit
        for v in sorted(res.out[u], key=lambda v: (v in exits, v)) if exits else res.out[u]:
            if seen[v] or not res.free(u, v) or (node[v] != node[u] and left_in_node[node[u]]):
                continue
            if (exits and node[v] == node[u] and left_in_node[node[u]] > 1
                    and not any(not seen[w] and w != v for w in exits if node[w] == node[u])):
                continue
            seen[v] = True
            left_in_node[node[v]] -= 1
            path.append(v)
            res.take(u, v, 1)
            try:  # undone also when the caller closes the generator after the first cycle
                yield from rec()
            finally:
                res.take(u, v, -1)
                path.pop()
                left_in_node[node[v]] += 1
                seen[v] = False

    yield from rec()


def _starts(topo: Topology, node: list[int]) -> list[int]:
    """Where a ring may start: rank 0 on one node; across nodes the ranks of node 0 that a link from
    another node enters (where NCCL's ring enters the node from its NIC), then the others."""
    first = [r for r in range(topo.ranks) if node[r] == 0]
    entered = {l.dst for l in topo.links if node[l.src] != node[l.dst] and node[l.dst] == 0}
    return sorted(first, key=lambda r: (r not in entered, r)) if max(node) else [0]


def _pack(res: _Residual, cycles: list[Ring], most: int, budget: list[int]) -> list[Ring]:
    """The most cycles (repeats allowed where lanes are left) that fit the lanes and groups: a depth-first
    search over the cycles in order (non-decreasing index, so each multiset is met once)."""
    best: list[Ring] = []
    chosen: list[Ring] = []

    def rec(first: int) -> bool:
        if len(chosen) > len(best):
            best[:] = chosen
        if len(best) >= most or budget[0] <= 0:
            return True
        for i in range(first, len(cycles)):
            budget[0] -= 1
            pairs = edges(cycles[i])
            if not res.fits(pairs):
                continue
            for u, v in pairs:
                res.take(u, v, 1)
            chosen.append(cycles[i])
            done = rec(i)
            chosen.pop()
            for u, v in pairs:
                res.take(u, v, -1)
            if done:
                return True
        return False

    rec(0)
    return best


def node_topology(topo: Topology, ranks: list[int]) -> Topology:
    """The links and switch groups inside one node, renumbered 0..P-1 (for the ring search)."""
    index = {r: i for i, r in enumerate(ranks)}
    links = [attrs.evolve(l, src=index[l.src], dst=index[l.dst]) for l in topo.links
             if l.src in index and l.dst in index]
    groups = []
    for g in topo.switches:
        srcs = [index[r] for r in g.srcs if r in index]
        dsts = [index[r] for r in g.dsts if r in index]
        if srcs and dsts and set(g.srcs) <= set(index) and set(g.dsts) <= set(index):
            groups.append(SwitchGroup(srcs, dsts, g.bandwidth, g.name))
    return Topology(f"{topo.name}-node", len(ranks), links, groups)


def _joined_node_rings(topo: Topology, node: list[int], per_link: int | None, limit: int | None) -> list[Ring]:
    """Rings through the nodes made of the rings inside one node, as NCCL builds its inter-node rings
    (paths inside each node between the NICs, src/graph/search.cc): ring i of a node is cut after some
    local rank x, every node runs the same path from x's successor e to x, and node j's x reaches node
    j + 1's e through a NIC. Cuts are chosen so that the rings stay lane- and NIC-disjoint."""
    n = max(node) + 1
    p = topo.ranks // n
    if topo.ranks % n or any(node[r] != r // p for r in range(topo.ranks)):
        return []
    # NCCL's channels share a node's switch (a port of one unit here carries one ring of the search, but NCCL
    # runs a channel per NIC through it): the rings inside a node need only be link-disjoint, the switch's
    # groups time the sharing; between nodes each ring takes its own NIC lanes
    inner = node_topology(topo, list(range(p)))
    local = find_rings(attrs.evolve(inner, switches=()), None, per_link)
    res = _Residual(attrs.evolve(topo, switches=tuple(g for g in topo.switches
                                                      if {node[r] for r in (*g.srcs, *g.dsts)} != {node[g.srcs[0]]})),
                    per_link)
    cands: dict[Ring, None] = {}
    order = node_order(topo, node)
    # with a NIC per GPU the next node's e must be on x's rail, so e = x and no such cut exists: NCCL's rings then
    # enter and leave every node through the same rails, e ... x in one node and x ... e (the path reversed) in
    # the next; on an odd number of nodes the last two run x ... e f with f = e's successor (its last two
    # swapped), then f ... x e (the ring from f), back to the first node's e
    for alternate in (False, True) if p > 2 else (False,):
        for ring in dict.fromkeys(local):
            for cut in range(p):
                path = ring[cut + 1:] + ring[:cut + 1]  # e ... x
                paths = [path] * n
                if alternate:
                    back = path[::-1]
                    paths = [back if j % 2 else path for j in range(n)]
                    if n % 2:
                        paths[n - 2] = (*back[:-2], back[-1], back[-2])
                        paths[n - 1] = (*path[1:], path[0])
                cands[tuple(order[j] * p + r for j in range(n) for r in paths[j])] = None
    # a packing, not the first cut that fits: cuts taken greedily can leave a NIC out of one rank and a NIC into
    # the same rank, which no path e ... x joins (fattree4x4 at 4 rings a link: 3 rings, where 4 fit)
    most = min(min(res.capacity(r, True), res.capacity(r, False)) for r in range(topo.ranks))
    return _pack(res, list(cands), most if limit is None else min(most, limit), [JOIN_BUDGET])


@functools.lru_cache(maxsize=64)
def find_rings(topo: Topology, limit: int | None = None, per_link: int | None = None) -> tuple[Ring, ...]:
    """As many lane-disjoint directed Hamiltonian rings as the search finds (at most `limit`, at most
    `per_link` through one link); () when there is none (a disconnected topology, a line). Greedy first
    (each ring the first one left in lexicographic order); when that stops short of the capacity bound and
    the topology has at most MAX_CYCLES Hamiltonian cycles, an exact packing of all of them within the
    search budget."""
    if topo.ranks < 2:
        return ()
    res = _Residual(topo, per_link)
    node = nodes_of(topo)
    most = min(min(res.capacity(r, True), res.capacity(r, False)) for r in range(topo.ranks))
    if limit is not None:
        most = min(most, limit)
    if most < 1:
        return ()
    joined = _joined_node_rings(topo, node, per_link, limit) if max(node) else []
    if joined:  # NCCL's own construction across nodes (its own lanes: a switch inside a node is shared)
        return tuple(joined)
    budget = [SEARCH_BUDGET]
    greedy: list[Ring] = []
    for start in _starts(topo, node):
        while len(greedy) < most:
            ring = next(_cycles(res, node, start, budget), None)
            if ring is None:
                break
            greedy.append(ring)
            for u, v in edges(ring):
                res.take(u, v, 1)
        if greedy:
            break
    for ring in greedy:
        for u, v in edges(ring):
            res.take(u, v, -1)
    if max(node):
        return tuple(joined if len(joined) > len(greedy) else greedy)
    if len(greedy) >= most:
        return tuple(greedy)
    every: list[Ring] = []
    for ring in _cycles(res, node, 0, budget):
        every.append(ring)
        if len(every) > MAX_CYCLES:
            return tuple(greedy)
    if budget[0] <= 0:
        return tuple(greedy)
    packed = _pack(res, every, most, budget)
    return tuple(packed if len(packed) > len(greedy) else greedy)


def edges(ring: Sequence[int]) -> list[tuple[int, int]]:
    return list(zip(ring, [*ring[1:], ring[0]]))


# --- schedules on given rings ------------------------------------------------------------------------
# Position p of a ring sends to position p + 1. A "segment" of a ring is owned by one position.

def allgather_steps(rings: Sequence[Ring], coll: Collective) -> list[Step]:
    """Ring i carries piece i of every rank's buffer (chunk factor = len(rings)): in step t position p
    forwards what position p - t started with."""
    k, n = len(rings), coll.ranks
    steps = []
    for t in range(n - 1):
        sends = [Send(ring[(p - t) % n] * k + i, ring[p], ring[(p + 1) % n])
                 for i, ring in enumerate(rings) for p in range(n)]
        steps.append(Step(1, sorted(sends, key=send_key)))
    return steps


def reducescatter_steps(rings: Sequence[Ring], coll: Collective) -> list[Step]:
    """Ring i reduces piece i of every address (chunk factor = len(rings)): the partial sum for the
    rank at position o starts at o + 1 and travels round to o; in step t position p sends o = p - 1 - t."""
    k, n = len(rings), coll.ranks
    steps = []
    for t in range(n - 1):
        sends = [Send(ring[(p - 1 - t) % n] * k + i, ring[p], ring[(p + 1) % n])
                 for i, ring in enumerate(rings) for p in range(n)]
        steps.append(Step(1, sorted(sends, key=send_key)))
    return steps


def allreduce_steps(rings: Sequence[Ring], coll: Collective) -> list[Step]:
    """Chunk factor C = ranks x rings: address i*N + s is segment s of ring i, reduced to position s
    (ReduceScatter, N - 1 steps), then sent round from it (Allgather, N - 1 steps): NCCL's ring Allreduce
    (src/device/all_reduce.h, runRing)."""
    n = coll.ranks
    steps = []
    for phase in (1, 0):  # 1: reduce-scatter (o = p - 1 - t), 0: allgather (o = p - t)
        for t in range(n - 1):
            sends = [Send(i * n + (p - phase - t) % n, ring[p], ring[(p + 1) % n])
                     for i, ring in enumerate(rings) for p in range(n)]
            steps.append(Step(1, sorted(sends, key=send_key)))
    return steps


def chain_steps(rings: Sequence[Ring], coll: Collective, root: int, pieces: int, toward_root: bool) -> list[Step]:
    """Broadcast (from the root) or Reduce (to the root) as chains along the rings, pipelined: ring i
    carries addresses i*pieces .. i*pieces + pieces - 1; piece j crosses hop h of its chain in step j + h
    (NCCL's ring Broadcast/Reduce, src/device/broadcast.h and reduce.h)."""
    n = coll.ranks
    total = pieces + n - 2
    per_step: list[list[Send]] = [[] for _ in range(total)]
    for i, ring in enumerate(rings):
        at = ring.index(root)
        if toward_root:  # root + 1, root + 2, ..., root
            chain = [ring[(at + 1 + h) % n] for h in range(n)]
        else:  # root, root + 1, ..., root - 1
            chain = [ring[(at + h) % n] for h in range(n)]
        for j in range(pieces):
            for h in range(n - 1):
                per_step[j + h].append(Send(i * pieces + j, chain[h], chain[h + 1]))
    return [Step(1, sorted(sends, key=send_key)) for sends in per_step]
