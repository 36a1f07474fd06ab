"""The ports bound: one-address Allreduce on nodes whose GPUs sit on switch ports of one value a round, where
only some GPUs take values from other nodes: those few cannot feed every other GPU's last two rounds.

The reach bound (`reach.py`) proves rounds >= t: some rank v cannot hold all N contributions after t - 1 rounds.
Where every rank may after t, this asks how. v's set after round T is a tree of (rank, round) values: v's own
earlier value and, at most one a round here, the value of the node's GPU y that sent to v in round T (and
values from other nodes); below them v's sender y_v and y's sender s in round T - 1. The reach recursion,
with y, y_v and s each restricted to the *rich* GPUs (those with a link from another node, R_z > 0) or to the
others (or none), bounds L_v(T | pattern): the A_k(v) of the docstring of `reach.py` become

    A_0 = R_v,  A_1 = R_v + R_y,  A_k = A_(k-2)(v) + A_(k-2)(y_v) + A_(k-2)(y) + A_(k-2)(s)  (k >= 2),

each the largest over the GPUs of its class (one class at a time: an upper bound). A rank v *needs the rich*
where only the pattern with all three rich reaches N. In round T each rich GPU sends to one GPU of its node (a
port of one value), so the y of the ranks that need the rich are distinct; in round T - 1 each of those ranks
and each of their y must take a value from a rich GPU, at most one each: R = need + y receivers, at least
2 |need| - |need and rich| of them, while the rich GPUs send at most |rich| values a round inside the node. If
R > |rich| in some node, no schedule finishes in T rounds (nor fewer: a rank that takes nothing counts as a
sender of the other class), so rounds >= T + 1.

dgx2 x 9 (144 contributions; a port of one value a round, NICs from the odd GPUs into the even ones): by the
reach bound an odd GPU holds at most 148 after 6 rounds, with all three senders even; with one of y_v and s
odd at most 130, with y odd 96. So all 8 odd GPUs need the rich: in round 5 the 8 even GPUs must send to the
8 odd ones and to the 8 even ones that send to them in round 6: 16 values, 8 ports: **7** rounds (reach: 6).

A step of k rounds is k rounds in which a send may carry an older value of its sender (what it held when the
step began, a subset of its value in each later round): every switch group is one GPU's port or one NIC (a
single source or a single destination), so the step's sends split into k rounds within every port and NIC
(a bipartite graph of degree k per port; König). The recursion bounds older values too (L only grows), and an
older value in a pattern's place is a value without that sender: the argument holds for the total rounds.
Plain integers, no solver: `proof check` recomputes it with this same function.
"""

from __future__ import annotations

from typing import Any

from smtcoll.bounds.entry import _capacity
from smtcoll.bounds.reach import Tables, reach_tables
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology


def ports_bound(topo: Topology, coll: Collective, tables: Tables | str | None = None) -> Bound:
    """The ports bound (module docstring), in rounds; value None where it does not apply or proves no more
    than the reach bound. `tables`: the reach bound's (`reach_tables`), where the caller has them."""
    if any(len(set(g.srcs)) != 1 and len(set(g.dsts)) != 1 for g in topo.switches):
        return Bound("ports", None, "rounds", {}, "a switch group with several sources and several destinations")
    if tables is None:
        tables = reach_tables(topo, coll)
    if isinstance(tables, str):
        return Bound("ports", None, "rounds", {}, tables)
    why = _scope(topo, tables)
    if why:
        return Bound("ports", None, "rounds", {}, why)
    n, t = topo.ranks, tables.t
    if t < 2:
        return Bound("ports", None, "rounds", {}, "the reach bound is below 2 rounds")
    for a in sorted(set(tables.nodes)):
        ranks = [v for v in range(n) if tables.nodes[v] == a]
        rich = [v for v in ranks if tables.cap[v] > 0]
        need = [v for v in ranks if _needs_rich(tables, v, t, n)]
        receivers = 2 * len(need) - len(set(need) & set(rich))
        if receivers > len(rich):
            w: dict[str, Any] = {"node": a, "rounds": t, "must_hold": n, "rich": rich, "need": need,
                                 "receivers": receivers, "patterns": {str(v): _patterns(tables, v, t)
                                                                      for v in need[:1]},
                                 "chunks": coll.chunk_factor}
            return Bound("ports", t + 1, "rounds", w,
                         "rounds: the GPUs that take values from other nodes cannot feed the others' last two rounds")
    return Bound("ports", None, "rounds", {}, "every node's rich GPUs can feed the ranks that need them")


def _ports_only(topo: Topology) -> str:
    """Why a step of k rounds may not split into k rounds within every group ("" if it may): every switch
    group has one source or one destination, and no link lies in two groups of one source or of one
    destination (then a step's sends are a bipartite graph of ports, of degree k x bandwidth)."""
    seen: set[tuple[str, int, int]] = set()
    for g in topo.switches:
        src, dst = set(g.srcs), set(g.dsts)
        for u in src:
            for v in dst:
                if u == v or not topo.has_link(u, v):
                    continue
                for side in (("src",) if len(src) == 1 else ()) + (("dst",) if len(dst) == 1 and len(src) != 1 else ()):
                    if (side, u, v) in seen:
                        return "a link in two groups of one source or of one destination"
                    seen.add((side, u, v))
    return ""


def _scope(topo: Topology, tables: Tables) -> str:
    """Why the bound does not apply ("" if it does): every switch group a port (one source or one destination)
    and every rank taking at most one value a round from its node; the rich ranks sending at most one."""
    if any(c != 1 for c in tables.local_in):
        return "a rank takes more than one value a round from its node"
    why = _ports_only(topo)
    if why:
        return why
    for z in range(topo.ranks):
        if tables.cap[z] > 0:
            out = [l for l in topo.links if l.src == z and tables.nodes[l.dst] == tables.nodes[z] and l.bandwidth > 0]
            if _capacity(topo, [_one(l) for l in out], {z}, out=True) > 1:
                return "a rank with links from other nodes sends more than one value a round inside its node"
    return ""


def _one(link: Any) -> Any:
    import attrs

    return attrs.evolve(link, bandwidth=1)  # one address: one value per link


PATTERNS = ((1, 1, 1), (1, 1, 0), (1, 0, 1), (1, 0, 0), (0, 1, 1), (0, 1, 0), (0, 0, 1), (0, 0, 0))


def _patterns(tables: Tables, v: int, t: int) -> list[int]:
    """L_v(t | pattern) for the patterns (y, y_v, s) rich or not, in the order of PATTERNS (1: rich)."""
    n = len(tables.cap)
    return [_bound(tables, v, t, n, p) for p in PATTERNS]


def _needs_rich(tables: Tables, v: int, t: int, n: int) -> bool:
    """Only the pattern with y, y_v and s all rich lets v hold all n after round t."""
    if _bound(tables, v, t, n, PATTERNS[0]) < n:
        return False
    return all(_bound(tables, v, t, n, p) < n for p in PATTERNS[1:])


def _bound(tables: Tables, v: int, t: int, n: int, pattern: tuple[int, int, int]) -> int:
    """L_v(t | pattern) (module docstring): the reach bound's sum with the A_k of the pattern."""
    p1, p2, p3 = pattern
    inner = sorted(set(tables.inner.get(v, [])))

    def best(cands: list[int], rich: int, k: int) -> int:
        """The most A_k over the candidates of the class (0: none, which every class allows)."""
        return max((tables.fan[k][u] for u in cands if (tables.cap[u] > 0) == bool(rich)), default=0)

    fan = [tables.cap[v], tables.cap[v] + best(inner, p1, 0)]
    for k in range(2, t):
        j = k - 2
        # y and its sender s chosen together: the most A_j(y) + A_j(s) over y of class p1, s of class p3
        ys = max((tables.fan[j][y] + best(sorted(set(tables.inner.get(y, []))), p3, j)
                  for y in inner if (tables.cap[y] > 0) == bool(p1)), default=0)
        fan.append(tables.fan[j][v] + best(inner, p2, j) + ys)
    ring = tables.rings[v]
    within = min(tables.width[t][v], sum(cnt for d, (cnt, _) in enumerate(ring) if d <= t))
    cum = []
    total = 0
    for _, r in ring:
        total += r
        cum.append(total)
    far = len(cum) - 1
    return min(n, within + sum(min(cum[min(k, far)], fan[k]) * tables.ramp[t - 1 - k] for k in range(t)))
