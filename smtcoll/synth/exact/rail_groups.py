"""One-address Allreduce on switch nodes whose GPUs share NICs in pairs: the rail groups first, then intervals.

Split each node's NICs into m groups of g consecutive NICs (2g GPUs each, the same local ranks in every node):
a *rail group* is those GPUs in all n nodes, linked across the nodes by their NICs' rails and inside a node by
the switch. Every rail group runs one small schedule of s rounds, found by z3 on the group's own machine, after
which one GPU of every NIC (its *active*) holds the group's block, the sum of its 2 g n contributions; the
other GPU of the NIC (its *passive*) holds part of it. In round s + 1 every passive takes the block through its
NIC from the active of the same NIC one node on (a copy: it contains what the passive holds); the blocks of a
node are then m disjoint sums, each held by g actives and g passives. Inside the node (switch links only), the
actives of copy c (c-th NIC of their group) grow intervals of blocks, b..b + 2^i - 1 after i rounds, each
taking the interval of the active of block b + 2^(i - 1) (disjoint mod m while 2^i <= m), for r - 1 rounds,
r = ceil(log2 m); the passives grow intervals of L = m - 2^(r - 1) blocks over the rounds just before the last
(L a power of two, at most 2^(r - 2): they start one round after the actives); in round r the active of block b
and the passive of block b + 2^(r - 1) exchange: complementary intervals, so every GPU ends with the total.
s + r steps.

nvl36 x 3 (36 GPUs on a switch, 18 NICs each shared by a GPU pair, 18 rails): groups of 2 NICs, 9 blocks: the
search finds s = 3 on the group's 12 GPUs (no schedule of 3 rounds completes all 12, z3 proves it; one GPU per
NIC it does), then 4 rounds of intervals (8 blocks, then the passive's 1): **7** steps (the lanes: 9; bound 5).
The checker judges the whole schedule; nothing is kept that it refuses.
"""

from __future__ import annotations

import itertools
import math

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import node_of
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step, Topology

GROUP_ROUNDS = 4  # the group's search tries s = 2..GROUP_ROUNDS rounds
GROUP_RANKS = 12  # and is built only for groups of at most this many GPUs (n nodes x 2 g): z3 answers those
RLIMIT = 30_000_000  # z3 resource units per attempt: deterministic, about 5 CPU s at most


def rail_groups(topo: Topology, coll: Collective, below: int) -> Schedule | None:
    """The schedule of the module docstring with fewer than `below` steps, checked; None where the machine
    is not of this shape or nothing shorter is found."""
    shape = _shape(topo, coll)
    if shape is None:
        return None
    n, p, nics = shape
    q = len(nics)
    tries = []  # (steps, NICs per group, the group's rounds): a GPU holds at most 3^s after s rounds
    for g in (g for g in range(1, q + 1) if q % g == 0 and 2 * g * n <= GROUP_RANKS):
        r = _interval_rounds(q // g)
        if r is not None:
            least = max(2, math.ceil(math.log(2 * g * n, 3) - 1e-9))
            tries += [(s + r, g, s) for s in range(least, GROUP_ROUNDS + 1) if s + r < below]
    for _, g, s in sorted(tries):
        found = _group_search(topo, n, p, nics[:g], s)
        if found is None:
            continue
        sched = _compose(topo, coll, n, p, nics, g, s, *found)
        if sched is not None and check_schedule(sched).verdict == "ok":
            return sched
    return None


def _shape(topo: Topology, coll: Collective) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(nodes n, GPUs per node p, the NICs of a node as local rank pairs) where the collective is one-address
    Allreduce and the machine is n >= 2 nodes of consecutive ranks, every pair of a node linked, every GPU on
    exactly one NIC shared with one other GPU, and each NIC linked to the same NIC of every other node."""
    if topo.ranks != coll.ranks or not _one_address_sum(coll):
        return None
    nodes = node_of(topo)
    if nodes is None:
        return None
    n = max(nodes) + 1
    p = topo.ranks // n
    if n < 2 or nodes != [x // p for x in range(topo.ranks)]:
        return None
    nics = sorted({tuple(sorted(g.srcs)) for g in topo.switches
                   if len(g.srcs) > 1 and max(g.srcs) < p and min(g.dsts) >= p})
    if not nics or any(len(s) != 2 for s in nics) or sorted(x for s in nics for x in s) != list(range(p)):
        return None
    links = {(l.src, l.dst) for l in topo.links if l.bandwidth > 0}
    if any((a * p + u, a * p + v) not in links for a in range(n) for u in range(p) for v in range(p) if u != v):
        return None
    for (u, v), a, b in itertools.product(nics, range(n), range(n)):
        if a != b and any((a * p + x, b * p + y) not in links for x in (u, v) for y in (u, v)):
            return None
    return n, p, [(u, v) for u, v in nics]


def _interval_rounds(m: int) -> int | None:
    """r = ceil(log2 m) where the intervals of the module docstring work: m >= 3, the passives' L = m - 2^(r - 1)
    a power of two of at most 2^(r - 2)."""
    if m < 3:
        return None
    r = math.ceil(math.log2(m))
    rest = m - 2 ** (r - 1)
    if rest & (rest - 1) or rest > 2 ** (r - 2):
        return None
    return r


def _group_search(topo: Topology, n: int, p: int, nics: list[tuple[int, int]], s: int, symmetric: bool = True,
                  ) -> tuple[list[list[tuple[int, int]]], list[int]] | None:
    """A schedule of s rounds on the rail group of `nics` (local rank pairs), over the machine's own links and
    switch groups among its GPUs, after which one GPU of every NIC of every node holds the group's block: its
    sends per round and the actives (ranks of the machine); None where z3 finds none within RLIMIT."""
    import z3

    local = sorted(x for nic in nics for x in nic)
    ranks = [a * p + x for a in range(n) for x in local]
    index = {v: i for i, v in enumerate(ranks)}
    k = len(ranks)
    links = sorted((l.src, l.dst) for l in topo.links if l.bandwidth > 0 and l.src in index and l.dst in index)
    groups = [(g.bandwidth, [(u, v) for u, v in links if u in g.srcs and v in g.dsts]) for g in topo.switches]
    groups = [(bw, ls) for bw, ls in groups if len(ls) > bw]
    ctx = z3.Context()  # a fresh context: the terms' order, and so the model, do not depend on earlier searches
    solver = z3.Solver(ctx=ctx)
    solver.set("rlimit", RLIMIT)
    held = [z3.BitVecVal(1 << i, k, ctx) for i in range(k)]
    sends: list[dict[tuple[int, int], z3.BoolRef]] = []
    for t in range(1, s + 1):
        e = {l: z3.Bool(f"e{t}_{l[0]}_{l[1]}", ctx) for l in links}
        sends.append(e)
        for bw, ls in groups:
            solver.add(z3.AtMost(*[e[l] for l in ls], bw))
        now = []
        for v in ranks:
            into = [(e[(u, w)], held[index[u]]) for u, w in links if w == v]
            mine = held[index[v]]
            for b, x in into:
                solver.add(z3.Implies(b, mine & x == 0))
            for (b1, x1), (b2, x2) in itertools.combinations(into, 2):
                solver.add(z3.Implies(z3.And(b1, b2), x1 & x2 == 0))
            h = z3.BitVec(f"h{t}_{v}", k, ctx)
            acc = mine
            for b, x in into:
                acc = acc | z3.If(b, x, z3.BitVecVal(0, k, ctx))
            solver.add(h == acc)
            now.append(h)
        held = now
    full = (1 << k) - 1
    for a in range(n):
        for u, v in nics:
            solver.add(z3.Or(held[index[a * p + u]] == full, held[index[a * p + v]] == full))
    if symmetric:  # the same sends in every node, shifted: n times fewer choices (z3 answers n = 5 at all)
        for e in sends:
            for u, v in links:
                solver.add(e[(u, v)] == e[((u + p) % (n * p), (v + p) % (n * p))])
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    rounds = [[l for l in links if z3.is_true(model.eval(e[l], model_completion=True))] for e in sends]
    active = [a * p + (u if model.eval(held[index[a * p + u]]).as_long() == full else v)
              for a in range(n) for u, v in nics]
    return rounds, active


def _compose(topo: Topology, coll: Collective, n: int, p: int, nics: list[tuple[int, int]], g: int, s: int,
             group: list[list[tuple[int, int]]], active: list[int]) -> Schedule | None:
    """The whole schedule from the search on group 0 (its sends per round, its actives): every group runs it
    on its own NICs, the passives' copies, then the intervals."""
    q = len(nics)
    m = q // g
    r = _interval_rounds(m)
    if r is None:
        return None
    # local rank of group 0 -> local rank of group j (the i-th GPU of its i-th NIC)
    base = [x for i in range(g) for x in nics[i]]
    moved = [dict(zip(base, [x for i in range(g) for x in nics[j * g + i]], strict=True)) for j in range(m)]

    def to(j: int, v: int) -> int:
        return (v // p) * p + moved[j][v % p]

    steps: list[list[tuple[int, int]]] = [[] for _ in range(s + r)]
    for j in range(m):
        for t, sends in enumerate(group):
            steps[t].extend((to(j, u), to(j, v)) for u, v in sends)
    is_active = set(active)
    # act[a][c][b]: the active of node a, NIC c of its group, block b; pas likewise
    act = [[[0] * m for _ in range(g)] for _ in range(n)]
    pas = [[[0] * m for _ in range(g)] for _ in range(n)]
    for a in range(n):
        for c in range(g):
            u, v = nics[c]
            x, y = (u, v) if a * p + u in is_active else (v, u)
            for b in range(m):
                act[a][c][b] = to(b, a * p + x)
                pas[a][c][b] = to(b, a * p + y)
    for a, c, b in itertools.product(range(n), range(g), range(m)):
        steps[s].append((act[(a + 1) % n][c][b], pas[a][c][b]))  # the passive's copy of its block, by its NIC
    rest = m - 2 ** (r - 1)
    grow = int(math.log2(rest))
    for i in range(1, r):  # the actives' intervals, AG rounds 1..r-1 (steps s + 1 .. s + r - 1)
        for a, c, b in itertools.product(range(n), range(g), range(m)):
            steps[s + i - 1].append((act[a][c][(b + 2 ** (i - 1)) % m], act[a][c][b]))
    for j in range(1, grow + 1):  # the passives' intervals, in the rounds just before the last
        t = s + r - 1 - grow + j - 1
        for a, c, b in itertools.product(range(n), range(g), range(m)):
            steps[t].append((pas[a][c][(b + 2 ** (j - 1)) % m], pas[a][c][b]))
    half = 2 ** (r - 1)
    for a, c, b in itertools.product(range(n), range(g), range(m)):
        x, y = act[a][c][b], pas[a][c][(b + half) % m]
        steps[s + r - 1] += [(x, y), (y, x)]
    addr = coll.addresses[0]
    return Schedule(topo, coll, [Step(1, [Send(addr, u, v) for u, v in sorted(set(st))]) for st in steps if st])
