"""One-address Allreduce on machines of any number of nodes: node sums, then windows of consecutive nodes
grown across the NICs by every receiving GPU at once, then copies inside.

`nodes_allreduce` sends each node's sum to every other node one at a time (n - 1 turns: dgx2 x 7 11 steps)
or folds the nodes beyond a power of two in and out through one NIC pair. Here, after the node sums
(recursive doubling over xor partners, or a reduce to a centre and a broadcast back where a node has none:
every GPU holds its node's sum S_a), a GPU of node a holds a *window* W_w(a) = S_a + S_{a-1} + ... +
S_{a-w+1} (nodes mod n). A GPU holding W_w(a) that receives W_v(a - w) from node a - w holds W_{w+v}(a):
the two windows are disjoint, so no node's sum is counted twice, for any n. Two plans, the shorter kept:

- **direct** (every receiver also sends, over links that reach the same GPUs of the other nodes: a100,
  mi250): W_t at a group of receivers is W_{t/2} doubled (each GPU adds its own index's window from node
  a - t/2), or, for odd t = x + r (x the largest power of two below t), half the group builds W_x and the
  other half W_r, and the halves exchange across: x's holder adds W_r from node a - x, r's holder W_x from
  node a - r. ceil(log2 n) NIC steps (a100 x 7: 3 + 3 = 6 steps, x 12: 3 + 4 = 7).
- **relays** (the GPU that receives is not the one that sends: dgx2's NIC k joins GPU 2k+1 to GPU 2k of
  the other nodes): every receiver follows one sequence s_0 = 1, s_j = s_{j-1} + s_i, adding W_{s_i}
  from its relay in node a - s_{j-1}; the relay took a copy of W_{s_i} from a receiver of its node at step
  i + 1, so i <= j - 2 (a Fibonacci-like chain, the shortest found by a search: dgx2 x 7: 1, 2, 3, 5, 7,
  4 + 4 + 1 = 9 steps).

- **blocks** (a node without xor partners whose NICs join every GPU to every GPU of the other nodes:
  mi250): the GPUs pair into blocks of 4 joined like a square (two packages crosswise) or of 2, which sum
  by recursive doubling in 2 or 1 steps; then the direct plan over the n * m blocks of the machine as
  windows, in a cyclic order of the blocks (a depth-first search) in which the plan's offsets never join
  two blocks of one node (those are not NIC links). mi250 x 3 / x 4: 2 + 4 = 6 steps (reduce + broadcast: 8).
- **half-nodes** (`_halves_plan`, xor partners inside and every GPU on a NIC: a100): the NICs already
  carry half-nodes in the last step of the node sums, and intervals of half-nodes double from there
  (a100 x 10: 6 steps, 7 by whole nodes).

The total then spreads as copies along a breadth-first tree from the receivers. The plan is scheduled as
soon as possible (`allreduce._asap`); the engine checks the schedule like any other.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from smtcoll.bounds.entry import node_of
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.scale.allreduce import _asap, _every_rank_all, _Plan, _schedule
from smtcoll.synth.scale.nodes_allreduce import _named_nodes, _node_sums, _path, _tree

Round = list[tuple[int, int, int]]  # (receiving GPU g, GPU h whose window it adds, from node a - offset)
MAX_CHAIN = 12  # NIC steps of the relay sequence searched (2^12 nodes would need fewer)


def windows_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """The shorter of the direct and the relay plan (module docstring), or None where neither applies."""
    shape = _shape(topo, coll)
    if shape is None:
        return None
    _, p, linked, _ = shape
    whole = all((u, v) in linked for u in range(p) for v in range(p) if u != v)  # node sums in one step
    plans = [_direct(topo, *shape), _relayed(topo, *shape), _blocks(topo, *shape), _halves_plan(topo, *shape),
             _block_halves(topo, *shape), _relayed(topo, *shape, linear=True)]
    if whole:
        plans += [_direct(topo, *shape, at_once=True), _relayed(topo, *shape, at_once=True)]
    found = [(len(steps), i, steps) for i, plan in enumerate(plans)
             if plan is not None and (steps := _asap(topo, plan)) is not None]
    for _, _, steps in sorted(found, key=lambda x: x[:2]):
        # the shortest the checker accepts: where a shared NIC delays a send past a later one into its
        # sender (pairs8: two GPUs behind one NIC), it would carry more than the plan gave it
        s = _schedule(topo, coll, steps)
        if check_schedule(s).verdict == "ok":
            return s
    return None


Shape = tuple[int, int, set[tuple[int, int]], dict[int, list[int]]]


def _shape(topo: Topology, coll: Collective, least: int = 3) -> Shape | None:
    """(nodes, GPUs per node, links, receiver -> the local GPUs that reach it from every other node) for a
    one-address Allreduce on at least `least` identical nodes of consecutive ranks; None otherwise."""
    nodes = node_of(topo) or _named_nodes(topo)
    if nodes is None or len(coll.addresses) != 1 or len(coll.pre) != coll.chunks or not _every_rank_all(coll):
        return None
    n = max(nodes) + 1
    p = topo.ranks // n
    if n < least or nodes != [r // p for r in range(topo.ranks)]:
        return None
    linked = {(l.src, l.dst) for l in topo.links if l.bandwidth > 0}
    inside = {(u, v) for u, v in linked if u < p and v < p}
    if any((b * p + u, b * p + v) not in linked for b in range(1, n) for u, v in inside):
        return None
    into: dict[int, list[int]] = {}
    for h, g in sorted({(u, v - p) for u, v in linked if u < p <= v < 2 * p}):
        if all((b * p + h, a * p + g) in linked for a in range(n) for b in range(n) if a != b):
            into.setdefault(g, []).append(h)
    return (n, p, linked, into) if into else None


def _summed(topo: Topology, n: int, p: int, linked: set[tuple[int, int]], at_once: bool = False) -> _Plan | None:
    """A plan in which every GPU gets its node's sum, its next phase started (or None): `at_once`, every GPU
    sends its own value to every other of its node in one step (a node whose GPUs are all linked, no port
    limit: pairs8's 8 GPUs in 1 step where recursive doubling takes 3; where switch ports allow one chunk a
    round, the schedule spreads it over many and the other plan wins); else recursive doubling where the xor
    partners are links, else a reduce to the node's most central GPU along a breadth-first tree and the sum
    back as copies."""
    plan = _Plan(topo.ranks)
    if at_once:
        for b in range(0, n * p, p):
            plan.everyone(list(range(b, b + p)))
        plan.start_phase()
        return plan
    bit = 1
    while bit < p and all((r, r ^ bit) in linked for r in range(p)):
        bit <<= 1
    if bit >= p and p & (p - 1) == 0:
        _node_sums(plan, topo.ranks, p)
        plan.start_phase()
        return plan
    local = {(u, v) for u, v in linked if u < p and v < p}  # node 0's links: the NIC links are many
    trees = [t for t in (_tree(local, p, [c]) for c in range(p)) if t is not None]
    if not trees:
        return None
    tree = min(trees, key=_depth)  # the first of the shallowest
    for b in range(0, n * p, p):
        for child, par in reversed(tree):  # children before parents: each sends its subtree's sum
            plan.send(b + child, b + par, together=True)
    plan.start_phase()
    for b in range(0, n * p, p):
        for child, par in tree:
            plan.send(b + par, b + child, copy=True)
    plan.start_phase()
    return plan


def _depth(tree: list[tuple[int, int]]) -> int:
    level: dict[int, int] = {}
    for child, par in tree:
        level[child] = level.get(par, 0) + 1
    return max(level.values(), default=0)


def _direct(topo: Topology, n: int, p: int, linked: set[tuple[int, int]], into: dict[int, list[int]],
            at_once: bool = False) -> _Plan | None:
    """The direct plan: windows doubled or split in halves over the receivers that reach each other."""
    group = sorted(g for g in into if g in into.get(g, []))
    if not group:
        return None
    rounds = _build(n, group, into)
    if rounds is None:
        return None
    plan = _summed(topo, n, p, linked, at_once)
    if plan is None:
        return None
    for rnd in rounds:
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}  # every send of a round: the values before it
        for a in range(n):
            for g, h, w in rnd:
                src, dst = ((a - w) % n) * p + h, a * p + g
                _raw(plan, src, dst, held[src], held[dst])
    return _spread(plan, n, p, linked, group)


def _build(t: int, group: list[int], into: dict[int, list[int]], halve: bool = True,
           memo: dict[tuple[int, tuple[int, ...]], list[Round] | None] | None = None) -> list[Round] | None:
    """Rounds after which every GPU of `group` holds W_t (module docstring), or None. `halve`: an even t
    that is not a power of two is W_(t/2) doubled (else split like an odd one: other offsets). `memo`: the
    plans already built in this call, by (t, group)."""
    memo = {} if memo is None else memo
    key = (t, tuple(group))
    if key not in memo:
        memo[key] = _built(t, group, into, halve, memo)
    return memo[key]


def _built(t: int, group: list[int], into: dict[int, list[int]], halve: bool,
           memo: dict[tuple[int, tuple[int, ...]], list[Round] | None]) -> list[Round] | None:
    if t == 1:
        return []
    if t % 2 == 0 and (halve or t & (t - 1) == 0):
        half = _build(t // 2, group, into, halve, memo)
        return None if half is None else [*half, [(g, g, t // 2) for g in group]]
    x = 1 << ((t - 1).bit_length() - 1)  # the largest power of two below t
    pairs = _halves(group, into)
    if pairs is None:
        return None
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    big, small = _build(x, first, into, halve, memo), _build(t - x, second, into, halve, memo)
    if big is None or small is None:
        # too few receivers for t - x (each split halves them: 15 = 8 + 4 + 2 + 1 needs 8): any other split, the
        # fewest rounds (mi250 x 15, 15 groups of 4 receivers: 10 + 5 in 5 rounds, where there was no plan)
        found = [(max(len(u), len(v)), y, u, v) for y in range(t - 1, t // 2 - 1, -1) if y != x
                 and (u := _build(y, first, into, halve, memo)) is not None
                 and (v := _build(t - y, second, into, halve, memo)) is not None]
        if not found:
            return None
        _, x, big, small = min(found, key=lambda f: f[:2])
    empty: Round = []
    merged: list[Round] = [[*u, *v] for u, v in itertools.zip_longest(big, small, fillvalue=empty)]
    return [*merged, [(a, b, x) for a, b in pairs] + [(b, a, t - x) for a, b in pairs]]


def _halves(group: list[int], into: dict[int, list[int]]) -> list[tuple[int, int]] | None:
    """The group paired into two halves whose GPUs reach each other both ways (first fit in GPU order)."""
    if len(group) % 2:
        return None
    free = list(group)
    pairs = []
    while free:
        a = free.pop(0)
        b = next((b for b in reversed(free) if a in into.get(b, []) and b in into.get(a, [])), None)
        if b is None:
            return None
        free.remove(b)
        pairs.append((a, b))
    return pairs


def _relayed(topo: Topology, n: int, p: int, linked: set[tuple[int, int]], into: dict[int, list[int]],
             at_once: bool = False, linear: bool = False) -> _Plan | None:
    """The relay plan: one chain of window sizes for every receiver, the added windows sent by relays that
    took copies of them, over a link or, where the receiver and its relay are not linked (a torus node whose
    NIC GPUs are far apart), along a shortest path inside the node. `linear`: the chain 1, 2, ..., n, every
    step adding the relay's own node sum, so no relay waits for a copy (where the copies walk several hops
    either can be shorter: torus2x2x4z x 5 15 / 16 steps, x 8 18 / 17); None where the path is one hop."""
    relay: dict[int, int] = {}
    path: dict[int, list[int]] = {}  # receiver -> the GPUs its copies go through to its relay, the relay last
    for g in sorted(into):  # each receiver its own relay, not itself a receiver of this plan
        if g in relay.values():
            continue
        h = next((h for h in into[g] if h != g and h not in relay and h not in relay.values()), None)
        if h is not None and (g, h) in linked:
            relay[g], path[g] = h, [h]
    if not relay:  # no relay one hop away: one receiver, its copies along a path (several paths could cross)
        g = min(into)
        way = next((w for h in into[g] if h != g and (w := _path(linked, p, g, h)) is not None), None)
        if way is None:
            return None
        relay[g], path[g] = way[-1], way[1:]
    if linear and max(len(w) for w in path.values()) == 1:
        return None
    chain = [(0, s) for s in range(2, n + 1)] if linear else _chain(n)
    if chain is None:
        return None
    plan = _summed(topo, n, p, linked, at_once)
    if plan is None:
        return None
    sizes = [1]
    needed = {i for i, _ in chain}
    for j, (i, _) in enumerate(chain, start=1):
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}  # the values as step j begins
        for a in range(n):
            for g, h in relay.items():
                plan.send(((a - sizes[-1]) % n) * p + h, a * p + g)
        if j - 1 in needed and j > 1:  # relays copy W_(s_(j-1)), the value their receiver starts step j with
            for b in range(0, n * p, p):
                for g in relay:
                    src, deps = b + g, held[b + g]
                    for x in path[g]:
                        _copy(plan, src, b + x, deps)
                        src, deps = b + x, tuple(plan.into[b + x])
        sizes.append(sizes[-1] + sizes[i])
    return _spread(plan, n, p, linked, sorted(relay))


def _copy(plan: _Plan, src: int, dst: int, deps: tuple[int, ...]) -> None:
    """A copy src -> dst of src's value as it was when `deps` were the sends into it (planned after the
    sends of the same step out of dst, so that those carry dst's value before the copy)."""
    plan.copies.add(len(plan.sends))
    _raw(plan, src, dst, deps, tuple(plan.into[dst]))


def _raw(plan: _Plan, src: int, dst: int, deps: tuple[int, ...], after: tuple[int, ...]) -> None:
    """A send of src's value as it was when `deps` were the sends into it, after `after` into dst."""
    plan.deps.append(deps)
    plan.after.append(after)
    plan.into[dst].append(len(plan.sends))
    plan.sends.append((src, dst))


def _chain(n: int) -> list[tuple[int, int]] | None:
    """The shortest sequence s_0 = 1, s_j = s_(j-1) + s_(i_j) with i_j <= j - 2 non-decreasing (a relay's
    copies only grow) that reaches n, as (i_j, s_j); the first found by iterative deepening."""
    for depth in range(1, MAX_CHAIN + 1):
        found = _deepen([1], [], n, depth)
        if found is not None:
            return found
    return None


def _deepen(sizes: list[int], picks: list[tuple[int, int]], n: int, depth: int) -> list[tuple[int, int]] | None:
    s = sizes[-1]
    if s == n:
        return picks
    if len(picks) == depth or s << (depth - len(picks)) < n:
        return None
    j = len(sizes)
    low = picks[-1][0] if picks else 0
    for i in range(j - 1, low - 1, -1):  # the largest addend first; relays hold s_0 from the start
        # s_i reaches the relays at step i + 1 and replaces what they held: the steps from i + 2 on add it
        if (i == 0 or i <= j - 2) and all(picks[k - 1][0] == i for k in range(i + 2, j)):
            nxt = s + sizes[i]
            if nxt <= n:
                found = _deepen([*sizes, nxt], [*picks, (i, nxt)], n, depth)
                if found is not None:
                    return found
    return None


def _spread(plan: _Plan, n: int, p: int, linked: set[tuple[int, int]], holders: list[int]) -> _Plan | None:
    """The total, as copies along a breadth-first tree from the GPUs that hold it."""
    plan.start_phase()
    tree = _tree(linked, p, holders)
    if tree is None:
        return None
    for b in range(0, n * p, p):
        for child, par in tree:
            plan.send(b + par, b + child, copy=True)
    return plan


def _blocks(topo: Topology, n: int, p: int, linked: set[tuple[int, int]], into: dict[int, list[int]]) -> _Plan | None:
    """Windows over blocks instead of nodes, where a node has no xor partners but its GPUs pair up into
    blocks of 2 or 4 that do (mi250: the GCD pairs of one package, two packages joined crosswise): block
    sums in 1 or 2 steps, then the direct plan over the n * m blocks of the machine in a cyclic order whose
    offsets the plan uses never join two blocks of one node (those may have no link: the NICs join only
    other nodes). Every GPU receives over its NIC, so no copies follow."""
    if set(into) != set(range(p)) or any(set(v) != set(range(p)) for v in into.values()):
        return None  # every GPU must reach every GPU of the other nodes: the blocks' labels do not line up
    blocks = _xor_blocks(topo, p, linked)
    if blocks is None:
        return None
    size, m = len(blocks[0]), len(blocks)
    labels = list(range(size))
    full = dict.fromkeys(labels, labels)
    for halve in (True, False):  # the second's offsets are powers of two and their sums: other orders
        rounds = _build(n * m, labels, full, halve)
        if rounds is None:
            continue
        order = _order(n, m, sorted({w % (n * m) for rnd in rounds for _, _, w in rnd}))
        if order is not None:
            break
    else:
        return None
    assert rounds is not None
    at = [a * p + b for a, q in order for b in blocks[q]]  # position i, label g -> rank at[i * size + g]
    plan = _Plan(topo.ranks)
    bit = 1
    while bit < size:  # block sums by recursive doubling over the labels
        for i in range(n * m):
            for g in labels:
                if g < g ^ bit:
                    plan.exchange(at[i * size + g], at[i * size + (g ^ bit)])
        bit <<= 1
    plan.start_phase()
    for rnd in rounds:
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}
        for i in range(n * m):
            for g, h, w in rnd:
                src, dst = at[((i - w) % (n * m)) * size + h], at[i * size + g]
                _raw(plan, src, dst, held[src], held[dst])
    return plan


def _xor_blocks(topo: Topology, p: int, linked: set[tuple[int, int]]) -> list[list[int]] | None:
    """Node 0's GPUs as blocks of 4 [a, b, c, d] with a-b, c-d, a-c, b-d links both ways (a square),
    else of 2, from maximum matchings (networkx; pairs of the widest links first, edges in sorted order:
    the same blocks every run); None if no perfect matching of links exists."""
    import networkx as nx

    both: nx.Graph = nx.Graph()
    both.add_nodes_from(range(p))
    inside = sorted((u, v) for u, v in linked if u < v < p)  # filtered first: the NIC links are many
    both.add_weighted_edges_from((u, v, topo.bandwidth(u, v)) for u, v in inside if (v, u) in linked)
    pairs = sorted(tuple(sorted(e)) for e in nx.max_weight_matching(both, maxcardinality=True))
    if 2 * len(pairs) != p:
        return None

    def square(x: tuple[int, int], y: tuple[int, int]) -> list[int] | None:
        for c, d in (y, y[::-1]):
            if both.has_edge(x[0], c) and both.has_edge(x[1], d):
                return [x[0], x[1], c, d]
        return None

    quads: nx.Graph = nx.Graph()
    quads.add_nodes_from(range(len(pairs)))
    quads.add_edges_from((i, j) for i, j in itertools.combinations(range(len(pairs)), 2)
                         if square(pairs[i], pairs[j]) is not None)
    match = sorted(tuple(sorted(e)) for e in nx.max_weight_matching(quads, maxcardinality=True))
    if 2 * len(match) == len(pairs):
        return [sq for i, j in match if (sq := square(pairs[i], pairs[j])) is not None]
    return [list(x) for x in pairs]


ORDER_BUDGET = 200_000  # placements tried by the order search (a few CPU s at most)
MAX_BLOCKS = 512  # positions of the order: its search recurses once per position


def _order(n: int, m: int, offsets: list[int]) -> list[tuple[int, int]] | None:
    """A cyclic order of the n * m blocks, (node, block) per position, in which positions i and i - w (w an
    offset of the plan) are in different nodes, each node m times; depth first, nodes tried in turn."""
    v = n * m
    if v > MAX_BLOCKS:
        return None
    node = [-1] * v
    left = [m] * n
    tries = 0

    def ok(i: int, a: int) -> bool:
        return all(node[(i - w) % v] != a and node[(i + w) % v] != a for w in offsets)

    def place(i: int) -> bool:
        nonlocal tries
        if i == v:
            return True
        for k in range(n):
            a = (i + k) % n
            tries += 1
            if tries > ORDER_BUDGET:
                return False
            if left[a] and ok(i, a):
                node[i], left[a] = a, left[a] - 1
                if place(i + 1):
                    return True
                node[i], left[a] = -1, left[a] + 1
        return False

    if not place(0):
        return None
    seen = [0] * n
    out = []
    for a in node:
        out.append((a, seen[a]))
        seen[a] += 1
    return out


At = Callable[[int, int], int]  # (node or block a, label g) -> rank


def _plain(p: int) -> At:
    return lambda a, g: a * p + g


Slot = tuple[int, int]  # a GPU's interval of half-nodes relative to its node a: (first - 2a, length)


def _halves_plan(topo: Topology, n: int, p: int, linked: set[tuple[int, int]],
                 into: dict[int, list[int]], at: At | None = None) -> _Plan | None:
    """Intervals of half-nodes: the NICs start one step earlier, in the node sums' last step.

    Half-node 2a + h is the sum of node a's GPUs with top bit h, which every GPU of that half holds before
    the last step of recursive doubling. In that step a GPU also adds, over its NIC, the half-node next to
    its node (2a - 1 from node a - 1, or 2a + 2 from node a + 1): 3 half-nodes, an interval [2a - 1, 2a + 1]
    or [2a, 2a + 2]. Then each step a GPU adds the interval of another node's GPU that starts where its own
    ends: 2n half-nodes = 3 x 2^j take L + j steps (a100 x 6: 5, x 12: 6; by whole nodes 6 and 7); or,
    with half of the GPUs adding nothing first and the intervals of 3 and 2 half-nodes joined to 5 in the
    next step, 5 x 2^j take L + 1 + j (a100 x 10: 6, was 7)."""
    if at is None:  # whole nodes; `_block_halves` passes blocks of the nodes instead
        if any((r, r ^ bit) not in linked for bit in _bits(p) for r in range(p)):
            return None
        at = _plain(p)
    if p < 4 or p & (p - 1) or sorted(into) != list(range(p)):
        return None
    u = 2 * n
    base = next((b for b in (3, 5) if u % b == 0 and (u // b) & (u // b - 1) == 0), 0)
    if not base:
        return None
    half = p // 2
    low, high = list(range(half)), list(range(half, p))
    plan = _Plan(topo.ranks)
    bits = _bits(p)
    for bit in bits[:-1]:  # every GPU holds its half-node
        for b in range(n):
            for r in range(p):
                if r < r ^ bit:
                    plan.exchange(at(b, r), at(b, r ^ bit))
    plan.start_phase()
    slot: dict[int, Slot] = dict.fromkeys(range(p), (0, 2))
    # the last step of the node sums, and over the NICs the half-node next to the node: (receiver, sender,
    # the sender's half-node as a slot of its own node, left or right of the receiver's interval)
    pre: list[tuple[int, int, Slot, bool]] = []
    if base == 3:  # all: the low half takes 2a - 1 (a high GPU of a - 1), the high half 2a + 2 (a low GPU of a + 1)
        pre = [(g, g + half, (1, 1), True) for g in low] + [(g, g - half, (0, 1), False) for g in high]
    else:  # a quarter each way; the other half takes nothing now
        q = half // 2
        pre = [(g, g + half, (1, 1), True) for g in low[:q]] + [(g, g - half, (0, 1), False) for g in high[:q]]
    held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}
    for b in range(n):
        for r in range(p):
            _raw(plan, at(b, r ^ half), at(b, r), held[at(b, r ^ half)], held[at(b, r)])
    rnd = [(g, h, left, sent) for g, h, sent, left in pre]
    if not _intervals(plan, at, n, into, slot, rnd, held):
        return None
    if base == 5:  # the intervals of 3 and the node sums of 2 joined: 5 half-nodes everywhere
        q = half // 2
        plain = low[q:] + high[q:]
        takers = low[:q] + high[:q]
        # each 3-interval takes a plain GPU's node sum on its open side, the plain GPU the 3-interval of the
        # node on the other side: [2a - 1, 2a + 3], [2a - 2, 2a + 2], [2a - 3, 2a + 1], [2a, 2a + 4]
        rnd5: list[tuple[int, int, bool, Slot]] = []
        for g, h in zip(takers, plain, strict=True):
            leftward = slot[g][0] == 0  # took 2a + 2: its open side is the left
            rnd5 += [(g, h, leftward, slot[h]), (h, g, not leftward, slot[g])]
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}
        if not _intervals(plan, at, n, into, slot, rnd5, held):
            return None
    while slot[0][1] < u:  # double: each GPU takes the interval that starts where its own ends
        m = slot[0][1]
        if any(v[1] != m for v in slot.values()):
            return None
        pairs = _match(p, into, lambda g, h, m=m: (slot[g][0] + m - slot[h][0]) % 2 == 0)  # type: ignore[misc]
        if pairs is None:
            return None
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}
        if not _intervals(plan, at, n, into, slot, [(g, h, False, slot[h]) for g, h in pairs], held):
            return None
    return plan if all(v[1] == u for v in slot.values()) else None


def _block_halves(topo: Topology, n: int, p: int, linked: set[tuple[int, int]],
                  into: dict[int, list[int]]) -> _Plan | None:
    """The half-node plan over the blocks of `_blocks` (mi250: GCD squares; a half-block is a GCD pair)
    instead of whole nodes: square sums with the NICs carrying pair sums in their last step, then intervals
    of pairs; the blocks in a cyclic order (`_order`) in which the offsets the plan uses never join two
    blocks of one node. 8n pairs = 3 or 5 x 2^j (mi250 x 5 / x 6: 6 steps, 7 by whole blocks)."""
    if set(into) != set(range(p)) or any(set(v) != set(range(p)) for v in into.values()):
        return None
    blocks = _xor_blocks(topo, p, linked)
    if blocks is None or len(blocks[0]) < 4:
        return None
    size, m = len(blocks[0]), len(blocks)
    full = {g: list(range(size)) for g in range(size)}
    v = n * m
    trial = _halves_plan(topo, v, size, linked, full, _plain(size))  # the offsets it uses, on any order
    if trial is None:
        return None
    offsets = sorted({(b // size - a // size) % v for a, b in trial.sends if a // size != b // size})
    order = _order(n, m, offsets)
    if order is None:
        return None
    ranks = [a * p + b for a, q in order for b in blocks[q]]  # position i, label g -> ranks[i * size + g]
    return _halves_plan(topo, v, size, linked, full, lambda i, g: ranks[i * size + g])


def _bits(p: int) -> list[int]:
    return [1 << k for k in range(p.bit_length() - 1)]


def _intervals(plan: _Plan, at: At, n: int, into: dict[int, list[int]], slot: dict[int, Slot],
               rnd: list[tuple[int, int, bool, Slot]], held: dict[int, tuple[int, ...]]) -> bool:
    """One round: receiver g adds sender h's interval `sent` (its slot in its own node c) on the left or
    the right of its own; c follows from where the intervals meet. False where they cannot meet in another
    node, or h does not reach g."""
    new = dict(slot)
    for g, h, left, sent in rnd:
        off, size = slot[g]
        gap = off - sent[0] - sent[1] if left else off + size - sent[0]  # 2 (c - a)
        if gap % 2 or (gap // 2) % n == 0 or h not in into[g] or size + sent[1] > 2 * n:
            return False
        for a in range(n):
            c = (a + gap // 2) % n
            _raw(plan, at(c, h), at(a, g), held[at(c, h)], held[at(a, g)])
        new[g] = (off - sent[1], size + sent[1]) if left else (off, size + sent[1])
    slot.update(new)
    return True


def _match(p: int, into: dict[int, list[int]], fits: Callable[[int, int], bool]) -> list[tuple[int, int]] | None:
    """Each GPU g a distinct sender h (h reaches g, fits(g, h)), first fit with backtracking."""
    used: set[int] = set()
    out: list[tuple[int, int]] = []

    def go(g: int) -> bool:
        if g == p:
            return True
        for h in sorted(into[g], key=lambda x: (x != g, x)):
            if h not in used and fits(g, h):
                used.add(h)
                out.append((g, h))
                if go(g + 1):
                    return True
                used.discard(h)
                out.pop()
        return False

    return out if go(0) else None
