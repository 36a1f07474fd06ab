"""The reach bound: one-address Allreduce on a machine of nodes whose ranks have few links inside the node.

The model is the checker's (check/arrival.py): a rank holds one set of contributions; a send carries the
sender's set as the step begins; the receiver adds it (disjoint from what it holds) or takes it (it contains
what it holds). So a rank's set only grows and always holds its own contribution, and the set v holds after
round t is the disjoint union of a base (what v held, or a copy that contains it) and of what arrived at v in
round t, each the set of a sender after round t - 1: a tree of (rank, round) values. Two values of one rank
z in that tree overlap (both hold z's own contribution), so every occurrence of z lies on one path to the
root, at rounds that differ: z's occurrences are a chain, the top one at round t - d(z, v) at the latest,
where d is the hops from z to v over the links inside their node (a value moves one hop per round).

An occurrence of z at round s + 1 takes at most R_z values from other nodes (R_z: what the links into z
from other nodes carry in one round, a NIC's switch group counting once for all its links, one value per
link), each a set some rank held after round s, at most L(s) contributions. What arrives only over links
inside the node holds only contributions of ranks within reach, each at most once. So

    L_v(t) <= sum over ranks z of v's node with d(z, v) <= t of (1 + R_z * (L(0) + ... + L(t - d(z, v) - 1))),

L(t) the most of these over all ranks (at most N), L(0) = 1. Gathered by round, the same sum is
sum over z within t hops (1) + sum over s < t of L(s) C_v(t - s - 1), with C_v(k) = the R_z of the ranks
within k hops summed; but the occurrences of v's tree at one round are sends of that one round, so C_v(k) is
also at most what crosses into the set Z of those ranks in one round: a NIC shared by several GPUs (its
switch group covering links into several ranks of Z) counts once for all of them, one value per link
otherwise; the least of the two is taken (pairs8 x 3: 4 NICs, each shared by a pair of GPUs, bring 4 values
a round into a node where the ranks' R_z sum to 32; 2 rounds reach at most 21 of 24 contributions: 3).

The tree is also narrow where a rank takes few values a round from its own node (an NVSwitch port: one). A
value of v's tree at round r has at most c_z + 1 local children (its own earlier value or a copy, and at most c_z
arrivals over the links inside the node from distinct ranks, c_z what they carry into z in one round, a port's
group counting once): so at most B_k(v) values lie k rounds below v (B_0 = 1, B_k(v) = B_(k-1)(v) + the c_v
largest B_(k-1)(u) of v's in-neighbours u), the local contributions are among the B_t(v) leaves, and the values
k rounds below take at most A_k(v) NIC values (the same recursion from A_0(v) = R_v), each held by a rank with
a link out of its node after round t - k - 1: at most M(t - k - 1), M the most over those ranks. In all

    L_v(t) <= min(ranks within t hops, B_t(v)) + sum over k < t of min(C_v(k), A_k(v)) M(t - k - 1).

dgx2 (an NVSwitch port of one value a round, NICs from the odd GPUs into the even ones): an odd GPU holds at
most 1, 2, 5, 13, 34, 66, 148 after rounds 0..6, so dgx2 x 10-12 (160-192 contributions) need 7 rounds, where
the holdings bound gives 6. A rank needs all N contributions: rounds >= the least t with L_v(t) >= N, for
every v. Like the holdings bound it bounds the total rounds (a step of k rounds moves a value one hop and
takes k R_z values held when it began, k C_v into a set, k c_z local ones, which k one-round steps exceed).

It binds where the links inside a node are few: MI250 (16 GCDs, 3 or 4 xGMI links each, one NIC each), GCD
4 after rounds 0..3 at most 1, 5, 18, 68 where the holdings bound allows 1, 5, 28, 158: mi250 x 5 (80
contributions) needs 4 rounds, where the holdings bound gives 3. On a switch (every rank one hop from every
other) it proves little. Plain integers, no solver: `proof check` recomputes it with this same function.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import attrs

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import _capacity, greedy_cover, node_of
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

MAX_ROUNDS = 1 << 12  # the ramp stops earlier: it grows by at least one contribution a round or not at all


@attrs.frozen
class Tables:
    """The reach bound's recursion up to its value t, for the bounds that refine it (`bounds/ports.py`):
    `nodes` (node of each rank), `inner` (rank -> ranks of its node with a link into it), `cap` (R_z),
    `local_in` (c_z), `rings` (per rank, (ranks d hops away, C_v(d) - C_v(d - 1))), `fan` (A_k(v), k <= t),
    `width` (B_k(v)), `ramp` (M(0..t)) and `t`, the least round by which every rank may hold every contribution."""

    nodes: list[int]
    inner: dict[int, list[int]]
    cap: list[int]
    local_in: list[int]
    rings: list[list[tuple[int, int]]]
    fan: list[list[int]]
    width: list[list[int]]
    ramp: list[int]
    t: int

    def at(self, v: int, t: int) -> int:
        """L_v(t) (module docstring)."""
        return _at(self.rings[v], self.fan, self.width, v, self.ramp, t, len(self.cap))

    def gathered(self, v: int) -> int:
        """The fewest rounds after which rank v may hold every contribution (at most t): a lower bound on any
        one-address sum that ends with every contribution at v (a Reduce to v, the first half of an
        Allreduce's reduce + broadcast)."""
        return next(s for s in range(self.t + 1) if self.at(v, s) >= len(self.cap))


def reach_tables(topo: Topology, coll: Collective) -> Tables | str:
    """The recursion of the module docstring up to the reach bound's value, or why it does not apply."""
    if topo.ranks != coll.ranks:
        return "the topology and collective differ in ranks"
    nodes = node_of(topo)
    if nodes is None:
        return "one node"
    if not _one_address_sum(coll):
        return "not a sum of one contribution per rank at one address, needed everywhere"
    n = topo.ranks
    inner: dict[int, list[int]] = {}  # rank -> ranks of its node with a link into it
    local: dict[int, list] = {}  # rank -> those links, one value each
    remote: dict[int, list] = {}
    for l in topo.links:
        if l.bandwidth <= 0 or l.src == l.dst:
            continue
        if nodes[l.src] == nodes[l.dst]:
            inner.setdefault(l.dst, []).append(l.src)
            local.setdefault(l.dst, []).append(attrs.evolve(l, bandwidth=1))
        else:
            remote.setdefault(l.dst, []).append(attrs.evolve(l, bandwidth=1))  # one value per link
    # the groups that can bound what enters one rank: those into it alone (a scan of every group per rank cost
    # mi250 x 16 0.3 CPU s)
    into_one: dict[int, list] = {}
    for g in topo.switches:
        if len(set(g.dsts)) == 1:
            into_one.setdefault(g.dsts[0], []).append(g)
    cap = [_capacity(topo, remote.get(v, []), {v}, groups=into_one.get(v, [])) if remote.get(v) else 0
           for v in range(n)]
    # per rank v: for each hop count d, (ranks z exactly d hops from v, C_v(d) - C_v(d - 1))
    into = _node_groups(topo, nodes)
    memo: dict[frozenset[int], int] = {}
    rings = [_rings(v, inner, cap, partial(_shared, remote=remote, groups=into.get(nodes[v], []), memo=memo))
             for v in range(n)]
    # c_v: values from its node a round
    local_in = [_capacity(topo, local.get(v, []), {v}, groups=into_one.get(v, [])) for v in range(n)]
    senders = sorted({l.src for l in topo.links if l.bandwidth > 0 and nodes[l.src] != nodes[l.dst]})
    fan = [cap[:]]  # fan[k][v] = A_k(v): NIC values the occurrences k rounds below v in its tree can take
    width = [[1] * n]  # width[k][v] = B_k(v): occurrences k rounds below v (B_t(v) leaves: local contributions)
    ramp = [1]  # M(0..t): the most a rank with a link out of its node holds
    last = [1] * n
    while True:
        t = len(ramp)
        if t > MAX_ROUNDS:
            return "the recursion did not converge"
        for grow in (fan, width):
            prev = grow[-1]
            grow.append([prev[v] + sum(sorted((prev[u] for u in set(inner.get(v, []))), reverse=True)[:local_in[v]])
                         for v in range(n)])
        now = [_at(rings[v], fan, width, v, ramp, t, n) for v in range(n)]
        if now == last:
            return "the ramp stops growing short of every contribution"
        ramp.append(max(now[u] for u in senders) if senders else 0)
        last = now
        if min(now) >= n:
            break
    return Tables(nodes, inner, cap, local_in, rings, fan, width, ramp, len(ramp) - 1)


def reach_bound(topo: Topology, coll: Collective, tables: Tables | str | None = None) -> Bound:
    """The reach bound (module docstring), in rounds; value None where it does not apply. `tables`: those of
    `reach_tables`, where the caller has them."""
    if tables is None:
        tables = reach_tables(topo, coll)
    if isinstance(tables, str):
        return Bound("reach", None, "rounds", {}, tables)
    n, t = topo.ranks, tables.t
    short = [v for v in range(n) if tables.at(v, t - 1) < n]
    v = short[0]
    row = [tables.at(v, s) for s in range(t + 1)]
    w: dict[str, Any] = {"rank": v, "must_hold": n, "reach": row, "ramp": tables.ramp[:-1], "chunks": coll.chunk_factor}
    return Bound("reach", t, "rounds", w,
                 "rounds: a rank gathers only what its node's links reach, plus what its NIC brings each round")


def _at(ring: list[tuple[int, int]], fan: list[list[int]], width: list[list[int]], v: int, ramp: list[int], t: int,
        n: int) -> int:
    """L_v(t) (module docstring): the ranks within t hops (at most B_t(v), the leaves of v's tree), plus for each
    round s + 1 <= t the NIC values that the occurrences t - s - 1 rounds below v can take (the least of
    C_v(t - s - 1) and A_(t - s - 1)(v)), each at most M(s)."""
    within = min(width[t][v], sum(cnt for d, (cnt, _) in enumerate(ring) if d <= t))
    cum = list(itertools.accumulate(r for _, r in ring))
    far = len(cum) - 1
    return min(n, within + sum(min(cum[min(k, far)], fan[k][v]) * ramp[t - 1 - k] for k in range(t)))


def _rings(v: int, inner: dict[int, list[int]], cap: list[int], shared: Callable[[frozenset[int]], int],
           ) -> list[tuple[int, int]]:
    """(ranks exactly d hops from v inside its node, C_v(d) - C_v(d - 1)), for d = 0, 1, ...: a breadth-first
    search backwards over the links inside the node; C_v(d) the least of the R_z summed over the ranks within
    d hops and of what crosses into them at once (`_shared`), made non-decreasing from the farthest down
    (what bounds the crossings into a set bounds them into any part of it)."""
    dist = {v: 0}
    queue = deque([v])
    while queue:
        x = queue.popleft()
        for y in inner.get(x, []):
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    far = max(dist.values())
    counts = [0] * (far + 1)
    summed = [0] * (far + 1)
    for z, d in dist.items():
        counts[d] += 1
        summed[d] += cap[z]
    within: set[int] = set()
    cum = []
    total = 0
    for d in range(far + 1):
        within.update(z for z, dz in dist.items() if dz == d)
        total += summed[d]
        cum.append(min(total, shared(frozenset(within))))
    for d in range(far - 1, -1, -1):
        cum[d] = min(cum[d], cum[d + 1])
    return [(counts[d], cum[d] - (cum[d - 1] if d else 0)) for d in range(far + 1)]


def _node_groups(topo: Topology, nodes: list[int]) -> dict[int, list[tuple[int, frozenset[int], frozenset[int]]]]:
    """Per node, its switch groups that only bring values in: (bandwidth, sources, destinations), every
    source in another node, every destination in this one (a NIC's in-group, shared or not)."""
    out: dict[int, list[tuple[int, frozenset[int], frozenset[int]]]] = {}
    for g in topo.switches:
        dsts = frozenset(g.dsts)
        where = {nodes[x] for x in dsts}
        if len(where) != 1 or not dsts:
            continue
        a = next(iter(where))
        if any(nodes[x] == a for x in g.srcs):
            continue
        out.setdefault(a, []).append((g.bandwidth, frozenset(g.srcs), dsts))
    # a node whose in-groups each serve one rank: the ranks' own R_z count them already (mi250: 16 NICs)
    return {a: gs for a, gs in out.items() if any(len(d) > 1 for _, _, d in gs)}


def _shared(inside: frozenset[int], remote: dict[int, list], groups: list[tuple[int, frozenset[int], frozenset[int]]],
            memo: dict[frozenset[int], int]) -> int:
    """Values that can cross into `inside` (ranks of one node) from other nodes in one round: one per link,
    or a chosen in-group's bandwidth for all the links it covers; the groups chosen greedily, the least
    bandwidth per link newly covered first, while that beats counting the links (any choice is an upper bound:
    each covered link's values count in a chosen group)."""
    if not groups:
        return 1 << 62  # no shared in-group: the sum of the R_z is the bound
    if inside in memo:
        return memo[inside]
    one = dict.fromkeys(((l.src, l.dst) for z in inside for l in remote.get(z, [])), 1)  # one value per link
    mine = [(gbw, frozenset(k for k in one if k[0] in srcs and k[1] in dsts)) for gbw, srcs, dsts in groups
            if dsts & inside]
    memo[inside] = greedy_cover(one, mine)
    return memo[inside]
