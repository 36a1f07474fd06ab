"""The rails bound: one-address Allreduce on a machine of nodes where a rank reaches few ranks over NIC links
alone (a rail): the paths of its tree that never take a link inside a node end at those few ranks.

The model is the checker's (check/arrival.py), as in `reach.py`: the set v holds after round t is the disjoint
union of a base (v's own earlier value, or a copy that contains it) and of the values that arrived at v in
round t, each a set its sender held after round t - 1; unfolded, a tree whose leaves are the contributions v
holds, each once (the arrivals of a round are disjoint, and disjoint from what the receiver keeps). Label each
edge of the tree: *stay* (a rank's earlier value), *local* (a link inside a node) or *remote* (a link between
nodes). A leaf whose path from the root has no local edge is a rank from which v is reached over remote links
alone, within t of them: one of the few ranks of v's rail (an h100 GPU: the same GPU of the other nodes).
Every other leaf lies below a local edge. So

    L_v(t) <= G_v(t) + min(|rail_t(v)|, Q_v(t)),

G_v(t) the most leaves below a local edge, Q_v(t) the most leaves with none, by the recursion over v's
children (at most c_v local arrivals a round from distinct ranks of its node, a port's switch group counting
once, and R_v remote ones, a NIC's group once; one value per link: one address):

    A_v(t) = min(N, A_v(t-1) + the c_v largest A_u(t-1) of v's local in-neighbours + the R_v largest of its remote ones)
    G_v(t) = min(N, G_v(t-1) + the c_v largest A_u(t-1) (local)                    + the R_v largest G_w(t-1) (remote))
    Q_v(t) = Q_v(t-1) + the R_v largest Q_w(t-1) (remote),      A_v(0) = Q_v(0) = 1, G_v(0) = 0,

A_v(t) bounding all of v's leaves: every leaf of a local child is below a local edge, a remote child's are
so exactly where they are for that child. v must hold all N contributions: rounds >= the least t with
L_v(t) >= N for every v. Where 3^t barely exceeds N this binds: h100 x 3 (24 GPUs, a port of one value a
round, a NIC per GPU on 8 rails of 3): G = 0, 1, 5, 19 and a rail of 3, so at most 22 of 24 after 3 rounds:
**4** rounds (reach and holdings: 3, since 27 >= 24; 19 = 27 - 8: of the 27 paths of three rounds, the 8
that take only stay and remote edges end at 3 GPUs).

A step of k rounds is one tree node with at most k c_v local and k R_v remote children (one value per link
and step: distinct neighbours), all values held when the step began; the recursion run k rounds bounds that
(every term only grows with t, and the k c largest of distinct neighbours are at most k times the c
largest), so the bound holds for the total rounds. Plain integers, no solver: `proof check` recomputes it
with this same function.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import attrs

from smtcoll.bounds.cycle import _one_address_sum
from smtcoll.bounds.entry import greedy_cover, node_of
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

MAX_ROUNDS = 64  # A grows by at least one a round until every rank may hold N, or the ramp stalls


def rails_bound(topo: Topology, coll: Collective) -> Bound:
    """The rails bound (module docstring), in rounds; value None where it does not apply."""
    if topo.ranks != coll.ranks:
        return Bound("rails", None, "rounds", {}, "the topology and collective differ in ranks")
    nodes = node_of(topo)
    if nodes is None:
        return Bound("rails", None, "rounds", {}, "one node")
    if not _one_address_sum(coll):
        return Bound("rails", None, "rounds", {}, "not a sum of one contribution per rank at one address, needed "
                                                  "everywhere")
    n = topo.ranks
    local: dict[int, set[int]] = {}
    remote: dict[int, set[int]] = {}
    local_links: dict[int, list] = {}
    remote_links: dict[int, list] = {}
    for l in topo.links:
        if l.bandwidth <= 0 or l.src == l.dst:
            continue
        one = attrs.evolve(l, bandwidth=1)  # one address: one value per link
        if nodes[l.src] == nodes[l.dst]:
            local.setdefault(l.dst, set()).add(l.src)
            local_links.setdefault(l.dst, []).append(one)
        else:
            remote.setdefault(l.dst, set()).add(l.src)
            remote_links.setdefault(l.dst, []).append(one)
    into: dict[int, list] = {}  # rank -> the switch groups with it among their destinations
    for grp in topo.switches:
        for x in set(grp.dsts):
            into.setdefault(x, []).append(grp)
    c = [_into(into.get(v, []), local_links.get(v, [])) for v in range(n)]
    r = [_into(into.get(v, []), remote_links.get(v, [])) for v in range(n)]
    loc = [sorted(local.get(v, ())) for v in range(n)]
    rem = [sorted(remote.get(v, ())) for v in range(n)]
    rails = [_rail_sizes(v, rem, MAX_ROUNDS) for v in range(n)]
    a, g, q = [1] * n, [0] * n, [1] * n
    rows: list[list[int]] = [[1] * n]  # L_v(0) = 1: its own contribution
    mixed = [g[:]]
    for t in range(1, MAX_ROUNDS + 1):
        near = [_top(a, loc[v], c[v]) for v in range(n)]  # the local children: every leaf below a local edge
        a2 = [min(n, a[v] + near[v] + _top(a, rem[v], r[v])) for v in range(n)]
        g2 = [min(n, g[v] + near[v] + _top(g, rem[v], r[v])) for v in range(n)]
        q2 = [min(n, q[v] + _top(q, rem[v], r[v])) for v in range(n)]
        a, g, q = a2, g2, q2
        row = [min(n, g[v] + min(_at(rails[v], t), q[v])) for v in range(n)]
        if row == rows[-1]:
            return Bound("rails", None, "rounds", {}, "the ramp stops growing short of every contribution")
        rows.append(row)
        mixed.append(g[:])
        if min(row) >= n:
            break
    else:
        return Bound("rails", None, "rounds", {}, "the recursion did not converge")
    t = len(rows) - 1
    v = next(x for x in range(n) if rows[t - 1][x] < n)
    w: dict[str, Any] = {"rank": v, "must_hold": n, "rail": [_at(rails[v], s) for s in range(t + 1)],
                         "mixed": [m[v] for m in mixed], "reach": [row[v] for row in rows],
                         "chunks": coll.chunk_factor}
    return Bound("rails", t, "rounds", w,
                 "rounds: a rank's tree reaches over NIC links alone only its rail; every other leaf lies below a "
                 "link inside a node")


def _into(groups: list, links: list) -> int:
    """Values the links (into one rank, one value each) carry in one round: every switch group bounds the
    links it covers together (a port, a NIC shared by a pair: one value for all), so a cover of them by
    groups, each counted at its bandwidth, and the links no chosen group covers, one each (`greedy_cover`)."""
    if not links:
        return 0
    one = {(l.src, l.dst): 1 for l in links}
    cover = []
    for g in groups:  # every destination of these links is the one rank, a destination of each group
        srcs = set(g.srcs)
        mine = frozenset(k for k in one if k[0] in srcs)
        if mine:
            cover.append((g.bandwidth, mine))
    return greedy_cover(one, cover)


def _top(values: list[int], among: list[int], k: int) -> int:
    """The sum of the k largest values over the ranks `among` (distinct neighbours: one value per link)."""
    if k <= 0 or not among:
        return 0
    if k == 1:
        return max(values[u] for u in among)
    return sum(heapq.nlargest(k, (values[u] for u in among)))


def _rail_sizes(v: int, rem: list[list[int]], limit: int) -> list[int]:
    """|rail_d(v)| for d = 0, 1, ...: the ranks from which v is reached over at most d remote links (a
    breadth-first search backwards over the links between nodes), up to the whole rail."""
    dist = {v: 0}
    queue = deque([v])
    while queue:
        x = queue.popleft()
        if dist[x] >= limit:
            continue
        for y in rem[x]:
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    far = max(dist.values())
    sizes = [0] * (far + 1)
    for d in dist.values():
        sizes[d] += 1
    out, total = [], 0
    for s in sizes:
        total += s
        out.append(total)
    return out


def _at(sizes: list[int], d: int) -> int:
    return sizes[min(d, len(sizes) - 1)]
