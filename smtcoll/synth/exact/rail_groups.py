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

The group's search: the same sends in every node, shifted by one node (n times fewer choices), written as
propositional SMT-LIB text (what each GPU holds, contribution by contribution; an arrival disjoint from what its
receiver holds and from the other arrivals, two links of one port or NIC never both) and answered by z3's SAT
core within a budget of resource units (deterministic); the sizes g tried by the fewest steps s + r first (a
GPU holds at most 3^s), groups of at most GROUP_RANKS GPUs. The checker judges the whole schedule; nothing is
kept that it refuses.

nvl36 (36 GPUs on a switch, 18 NICs each shared by a GPU pair, 18 rails) x 3: groups of 2 NICs, 9 blocks: s = 3
on the group's 12 GPUs (no 3 rounds complete all 12, z3 proves it; one GPU per NIC they do), then 4 rounds of
intervals (8 blocks, then the passive's 1): **7** steps (the lanes: 9; bound 5). x 5 and x 6: s = 4 on 20 and
24 GPUs, **8** (10; bound 5); x 8 9 (10). Not found at 7, 9-12 nodes (groups of 1 NIC: none in 4 rounds within
the budget), nor tried from 13 (no group of at most GROUP_RANKS GPUs).
"""

from __future__ import annotations

import itertools
import math

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import node_of
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step, Topology

GROUP_ROUNDS = 4  # the group's search tries s = 2..GROUP_ROUNDS rounds
GROUP_RANKS = 24  # and is built only for groups of at most this many GPUs (n nodes x 2 g): z3 answers those
RLIMIT = 6_000_000  # z3 resource units per attempt (deterministic; nvl36 x 6 finds with 5.4 M, about 1 CPU s)
WORK = 8_000_000  # and in all: where nothing is found (nvl36 x 7, x 9 and up) about 1.5 CPU s are lost


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
    spent = 0
    for _, g, s in sorted(tries, key=lambda x: (x[0], -x[1])):  # the larger group first: it finds sooner
        if spent >= WORK:
            break
        found, used = _group_search(topo, n, p, nics[:g], s, min(RLIMIT, WORK - spent))
        spent += used
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
    blocks = one_address_nodes(topo, coll)
    if blocks is None or blocks[0] < 2:
        return None
    n, p = blocks
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


def one_address_nodes(topo: Topology, coll: Collective) -> tuple[int, int] | None:
    """(nodes n, ranks per node p) where the collective is one-address Allreduce and the machine's nodes are blocks
    of p consecutive ranks; None otherwise."""
    if topo.ranks != coll.ranks or not _one_address_sum(coll):
        return None
    nodes = node_of(topo)
    if nodes is None:
        return None
    n = max(nodes) + 1
    p = topo.ranks // n
    return (n, p) if nodes == [x // p for x in range(topo.ranks)] else None


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


def _group_search(topo: Topology, n: int, p: int, nics: list[tuple[int, int]], s: int, units: int,
                  symmetric: bool = True) -> tuple[tuple[list[list[tuple[int, int]]], list[int]] | None, int]:
    """A schedule of s rounds on the rail group of `nics` (local rank pairs), over the machine's own links and
    switch groups among its GPUs, after which one GPU of every NIC of every node holds the group's block: its
    sends per round and the actives (ranks of the machine), or None where z3 finds none within `units`; and the
    units spent."""
    import z3

    local = sorted(x for nic in nics for x in nic)
    w = len(local)
    ranks = [a * p + x for a in range(n) for x in local]
    index = {v: i for i, v in enumerate(ranks)}
    k = len(ranks)
    links = sorted((index[l.src], index[l.dst]) for l in topo.links
                   if l.bandwidth > 0 and l.src in index and l.dst in index)
    linked = set(links)
    groups = [(g.bandwidth, [(index[u], index[v]) for u in g.srcs if u in index for v in g.dsts
                             if v in index and (index[u], index[v]) in linked]) for g in topo.switches]
    groups = [(bw, ls) for bw, ls in groups if len(ls) > bw]
    # link -> the groups of bandwidth 1 it is in: two links of one such group never both carry a value
    one: dict[tuple[int, int], set[int]] = {}
    for gi, (bw, ls) in enumerate(groups):
        if bw == 1:
            for l in ls:
                one.setdefault(l, set()).add(gi)

    def shift(i: int) -> tuple[int, int]:
        """(the node-0 rank of i's orbit, the shift a that maps it to i) under the node rotation."""
        return i % w, i // w

    def e(t: int, l: tuple[int, int]) -> str:
        if not symmetric:  # the same sends in every node, shifted: n times fewer choices
            return f"e{t}_{l[0]}_{l[1]}"
        u0, a = shift(l[0])
        return f"e{t}_{u0}_{(l[1] - a * w) % k}"

    def h(t: int, i: int, c: int) -> str:
        if t == 0:
            return "true" if i == c else "false"
        if not symmetric:
            return f"h{t}_{i}_{c}"
        i0, a = shift(i)
        return f"h{t}_{i0}_{(c - a * w) % k}"

    names: set[str] = set()
    lines = []
    for t in range(1, s + 1):
        for bw, ls in groups:
            lines.append(f"((_ at-most {bw}) {' '.join(e(t, l) for l in ls)})")
        for v in range(k if not symmetric else w):
            into = [l for l in links if l[1] == v]
            names.update(e(t, l) for l in into)
            for c in range(k):
                for l in into:  # an arrival is disjoint from what v holds, and from the others (never a copy)
                    lines.append(f"(or (not {e(t, l)}) (not {h(t - 1, v, c)}) (not {h(t - 1, l[0], c)}))")
                for l1, l2 in itertools.combinations(into, 2):
                    if not one.get(l1, set()) & one.get(l2, set()):
                        lines.append(f"(or (not {e(t, l1)}) (not {e(t, l2)}) (not {h(t - 1, l1[0], c)}) "
                                     f"(not {h(t - 1, l2[0], c)}))")
                parts = " ".join(f"(and {e(t, l)} {h(t - 1, l[0], c)})" for l in into)
                names.add(h(t, v, c))
                lines.append(f"(= {h(t, v, c)} (or {h(t - 1, v, c)} {parts}))")
        names.update(e(t, l) for l in links)
    for a in range(n if not symmetric else 1):
        for u, v in nics:
            both = [" ".join(h(s, index[a * p + x], c) for c in range(k)) for x in (u, v)]
            lines.append(f"(or (and {both[0]}) (and {both[1]}))")
    text = "".join(f"(declare-const {x} Bool)\n" for x in sorted(names))
    text += "".join(f"(assert {x})\n" for x in lines)
    ctx = z3.Context()  # a fresh context: the terms' order, and so the model, do not depend on earlier searches
    solver = z3.SolverFor("QF_FD", ctx=ctx)  # propositional: z3's SAT core (bit-vector sets: n = 5 unknown)
    solver.set("rlimit", units)
    solver.from_string(text)
    verdict = solver.check()
    spent = int(solver.statistics().get_key_value("rlimit count"))
    if verdict != z3.sat:
        return None, spent
    model = solver.model()
    value = {str(d): z3.is_true(model[d]) for d in model.decls()}
    rounds = [[(ranks[u], ranks[v]) for u, v in links if value.get(e(t, (u, v)), False)] for t in range(1, s + 1)]

    def full(i: int) -> bool:
        return all(value.get(h(s, i, c), False) for c in range(k))

    active = [a * p + (u if full(index[a * p + u]) else v) for a in range(n) for u, v in nics]
    return (rounds, active), spent


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
