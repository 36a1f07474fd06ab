"""Lower bounds on steps, rounds, rounds per chunk, throughput and time, each with a witness.

Every bound is a `Bound` whose `witness` holds what a reader needs to check it by hand: the chunk and
rank farthest apart, the rank and the capacity into it, the cut (set of ranks, chunks that must cross,
the links and switch groups crossing it). `check_witness` recomputes a bound from its witness alone,
so a certificate (`smtcoll.proofs`) never trusts the numbers its writer recorded.

Capacities respect switch groups: the topology becomes a flow network where each switch group is an
edge `group.in -> group.out` of its capacity, and each link `s -> d` runs
`s -> group1 -> group2 -> ... -> d` through the groups that bound it (a relaxation when a group has
several sources and several destinations, so every capacity here is an upper bound, every bound a
valid lower bound). Pure Python + networkx (+ scipy's linprog for the flow LP); never z3.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from smtcoll.errors import ModelError
from smtcoll.model import Collective, Link, SwitchGroup, Topology

if TYPE_CHECKING:
    import networkx as nx

# Every rank subset is tried up to this many ranks (up to the second with switch groups, whose cuts each
# need a max-flow); beyond, the cut search is heuristic (every bound found is still valid).
EXHAUSTIVE_CUTS_UP_TO = 12
EXHAUSTIVE_SWITCHED_CUTS_UP_TO = 8
LP_MAX_VARIABLES = 300_000
THROUGHPUT_REFINED_UP_TO = 64
THROUGHPUT_REFINED_SWITCHED_UP_TO = 16  # with switch groups every max-flow runs on the group network
SMALL_RANKS = 64  # up to here the bounds use dense numpy arrays and the model's distances
_SOURCE, _SINK = ("source",), ("sink",)


@attrs.frozen
class Bound:
    """A lower bound (or, for throughput, an upper bound on algorithmic bandwidth) and its witness.
    `value` is None when the bound does not apply (`note` says why)."""

    name: str
    value: int | float | None
    unit: str
    witness: dict[str, Any] = attrs.field(factory=dict)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "unit": self.unit, "witness": self.witness}
        if self.note:
            out["note"] = self.note
        return out


@attrs.frozen
class Bounds:
    """All bounds for one (topology, collective): `steps` (S), `rounds` (R, for the collective's C),
    and the individual bounds they come from."""

    topology: str
    collective: str
    ranks: int
    chunks: int
    steps: Bound
    receive: Bound
    cut: Bound
    lp: Bound
    hops: Bound
    rounds: Bound
    rounds_per_chunk: Bound
    throughput: Bound
    time: Bound

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topology": self.topology, "collective": self.collective, "ranks": self.ranks,
                               "chunks": self.chunks}
        for name in ("steps", "rounds", "receive", "cut", "lp", "hops", "rounds_per_chunk", "throughput", "time"):
            out[name] = getattr(self, name).to_json()
        return out


# --- capacities ----------------------------------------------------------------------------------

def _fraction_json(x: Fraction) -> float:
    return round(float(x), 6)


def flow_network(topo: Topology, link_cap: Callable[[Link], float] | None = None,
                 group_cap: Callable[[SwitchGroup], float] | None = None) -> nx.DiGraph:
    """Ranks are nodes `0..P-1`; switch group i adds nodes ("group", i, "in"/"out")."""
    link_cap = link_cap or (lambda l: l.bandwidth)
    group_cap = group_cap or (lambda g: g.bandwidth)
    import networkx as nx  # 0.4 s to import: only topologies with switch groups need max-flows

    g = nx.DiGraph()
    g.add_nodes_from(range(topo.ranks))
    for i, grp in enumerate(topo.switches):
        g.add_edge(("group", i, "in"), ("group", i, "out"), capacity=group_cap(grp), group=i)
    for link in topo.links:
        chain: list[Any] = [link.src]
        for i in topo.switches_of(link.src, link.dst):
            chain += [("group", i, "in"), ("group", i, "out")]
        chain.append(link.dst)
        cap = link_cap(link)
        for a, b in zip(chain[0::2], chain[1::2], strict=True):
            if g.has_edge(a, b):
                g[a][b]["capacity"] += cap
                g[a][b].setdefault("links", []).append((link.src, link.dst))
            else:
                g.add_edge(a, b, capacity=cap, links=[(link.src, link.dst)])
    return g


def cut_capacity(topo: Topology, inside: Iterable[int], net: nx.DiGraph | None = None) -> tuple[Any, dict]:
    """The most that can enter the rank set `inside` per round from the other ranks, and the crossing
    links and switch groups (whose capacities sum to it) as a witness."""
    inside = set(inside)
    if not topo.switches:  # no switch groups: the capacity is the sum over the links that enter
        crossing = [l for l in topo.links if l.dst in inside and l.src not in inside]
        return sum(l.bandwidth for l in crossing), {
            "links": [{"src": l.src, "dst": l.dst, "capacity": l.bandwidth} for l in crossing], "switch_groups": []}
    net = (net or flow_network(topo)).copy()
    for r in range(topo.ranks):
        if r in inside:
            net.add_edge(r, _SINK)
        else:
            net.add_edge(_SOURCE, r)
    import networkx as nx

    value, (src_side, _) = nx.minimum_cut(net, _SOURCE, _SINK)
    links, groups = [], []
    for a in src_side:
        for b, data in net[a].items():
            if b in src_side or "capacity" not in data:
                continue
            if "group" in data:
                grp = topo.switches[data["group"]]
                groups.append({"group": grp.name or f"switches[{data['group']}]", "capacity": data["capacity"]})
            else:
                for s, d in data["links"]:
                    links.append({"src": s, "dst": d, "capacity": _link_part(topo, net, a, b, s, d)})
    links.sort(key=lambda x: (x["src"], x["dst"]))
    groups.sort(key=lambda x: x["group"])
    return value, {"links": links, "switch_groups": groups}


def _link_part(topo: Topology, net: nx.DiGraph, a: Any, b: Any, s: int, d: int) -> Any:
    # the capacity of one link's share of a network edge (edges shared by several links sum them)
    total = net[a][b]["capacity"]
    if len(net[a][b]["links"]) == 1:
        return total
    return total * topo.bandwidth(s, d) / sum(topo.bandwidth(x, y) for x, y in net[a][b]["links"])


# --- what each rank must receive ---------------------------------------------------------------

def _need(coll: Collective) -> dict[tuple[int, int], frozenset[int]]:
    """(rank, address) -> the contributions the rank must end with there."""
    need: dict[tuple[int, int], set[int]] = {}
    for r, c in coll.post:
        need.setdefault((r, coll.address[c]), set()).add(c)
    return {k: frozenset(v) for k, v in need.items()}


def _start(coll: Collective) -> dict[tuple[int, int], frozenset[int]]:
    start: dict[tuple[int, int], set[int]] = {}
    for r, c in coll.pre:
        start.setdefault((r, coll.address[c]), set()).add(c)
    return {k: frozenset(v) for k, v in start.items()}


def must_receive_all(coll: Collective) -> list[list[int]]:
    """Per rank, the addresses it must receive at least once: it needs a value there that it does
    not start with."""
    start = _start(coll)
    out: list[list[int]] = [[] for _ in range(coll.ranks)]
    for (r, a), need in sorted(_need(coll).items()):
        if start.get((r, a), frozenset()) != need:
            out[r].append(a)
    return out


def must_receive(coll: Collective, rank: int) -> list[int]:
    """The addresses one rank must receive at least once (see `must_receive_all`)."""
    start: dict[int, set[int]] = {}
    need: dict[int, set[int]] = {}
    for c in coll.pre_sets[rank]:
        start.setdefault(coll.address[c], set()).add(c)
    for c in coll.post_sets[rank]:
        need.setdefault(coll.address[c], set()).add(c)
    return sorted(a for a, cs in need.items() if start.get(a, set()) != cs)


def must_enter(coll: Collective, inside: Iterable[int]) -> list[int]:
    """Addresses that must cross into the rank set at least once: some rank inside needs a
    contribution that only ranks outside hold at the start."""
    inside = set(inside)
    held_inside = {c for r, c in coll.pre if r in inside}
    return sorted({coll.address[c] for r, c in coll.post if r in inside and c not in held_inside})


# --- arrays shared by the bounds (numpy/scipy: the bounds must scale to 1024 ranks) --------------

def _pairs(rel: tuple[tuple[int, int], ...]) -> Any:
    import numpy as np

    return np.fromiter(itertools.chain.from_iterable(rel), dtype=np.int64, count=2 * len(rel)).reshape(-1, 2)


def _distinct(keys: Any, space: int) -> Any:
    """The distinct values of an array of integers in range(space), sorted (a bitmap when the space is
    small: numpy's hashing unique is slow on a million keys)."""
    import numpy as np

    if space <= 1 << 26:
        seen = np.zeros(space, dtype=bool)
        seen[keys] = True
        return np.nonzero(seen)[0]
    return np.unique(keys)


class _Arrays:
    """The collective and topology as arrays: all-pairs hop distances (scipy's breadth-first search in
    C), per chunk its holders and needers (sparse chunk x rank matrices), per link its ends."""

    def __init__(self, topo: Topology, coll: Collective) -> None:
        import numpy as np

        p, k = coll.ranks, coll.chunks
        self.p, self.k = p, k
        src = np.array([l.src for l in topo.links], dtype=np.int64)
        dst = np.array([l.dst for l in topo.links], dtype=np.int64)
        self.src, self.dst = src, dst
        self.bw = np.array([l.bandwidth for l in topo.links], dtype=np.int64)
        self.unreachable = 1 << 30
        self.small = p <= SMALL_RANKS and k * p <= 1 << 22
        if self.small:  # the model's breadth-first search: no scipy import (0.4 s) for small instances
            self.dist = np.full((p, p), self.unreachable, dtype=np.int64)
            for r, row in topo.distances.items():
                self.dist[r, list(row)] = list(row.values())
        else:
            from scipy.sparse import csr_matrix
            from scipy.sparse.csgraph import shortest_path

            adj = csr_matrix((np.ones(len(src)), (src, dst)), shape=(p, p))
            d = shortest_path(adj, method="D", unweighted=True)
            self.dist = np.where(np.isinf(d), self.unreachable, d).astype(np.int64)
        pre, post = _pairs(coll.pre), _pairs(coll.post)
        self.pre, self.post = pre, post
        pre_keys, post_keys = pre[:, 0] * k + pre[:, 1], post[:, 0] * k + post[:, 1]
        self.post_lacking = ~np.isin(post_keys, pre_keys)  # post pairs not held at the start
        self.pre_unneeded = ~np.isin(pre_keys, post_keys)
        self.hold = self._matrix(pre[:, 1], pre[:, 0])
        self.need = self._matrix(post[:, 1], post[:, 0])
        order = np.argsort(pre[:, 1], kind="stable")
        bounds_ = np.searchsorted(pre[order, 1], np.arange(k + 1))
        self.holders_of = [pre[order[bounds_[c]:bounds_[c + 1]], 0] for c in range(k)]
        self.address = np.array(coll.address, dtype=np.int64)
        self.combining = coll.is_combining

    def _matrix(self, rows: Any, cols: Any, shape: tuple[int, int] | None = None) -> Any:
        """A 0/1 float32 matrix: dense for small instances, scipy's sparse beyond."""
        import numpy as np

        shape = shape or (self.k, self.p)
        if self.small:
            m = np.zeros(shape, dtype=np.float32)
            m[rows, cols] = 1.0
            return m
        from scipy.sparse import csr_matrix

        return csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=shape)

    def nearest_holder_distance(self) -> Any:
        """For each post pair (r, c): hops from c's nearest holder to r."""
        import numpy as np

        holders_of = self.holders_of
        single = np.array([len(h) == 1 for h in holders_of])
        out = np.empty(len(self.post), dtype=np.int64)
        r, c = self.post[:, 0], self.post[:, 1]
        first = np.array([h[0] if len(h) else 0 for h in holders_of], dtype=np.int64)
        mask = single[c]
        out[mask] = self.dist[first[c[mask]], r[mask]]
        for i in np.nonzero(~mask)[0]:
            hs = holders_of[c[i]]
            out[i] = self.dist[hs, r[i]].min() if len(hs) else self.unreachable
        return out

    def enter_counts(self, cuts: Any) -> Any:
        """For each cut (a column of the ranks x cuts 0/1 matrix), the addresses that must enter it:
        needed inside by a chunk whose holders are all outside (`must_enter`, vectorized)."""
        import numpy as np

        x = np.asarray(cuts, dtype=np.float32)
        enter = (self.need @ x > 0) & (self.hold @ x == 0)  # chunks x cuts
        if not self.combining:
            return enter.sum(axis=0).astype(np.int64)
        _, idx = np.unique(self.address, return_inverse=True)
        group = self._matrix(idx, np.arange(self.k), (int(idx.max()) + 1, self.k))
        return (group @ enter.astype(np.float32) > 0).sum(axis=0).astype(np.int64)

    def plain_capacity(self, cuts: Any) -> Any:
        """Link capacity into each cut, ignoring switch groups (an upper bound on the true capacity)."""
        import numpy as np

        x = np.asarray(cuts, dtype=bool)
        crossing = x[self.dst] & ~x[self.src]  # links x cuts
        return (self.bw[:, None] * crossing).sum(axis=0)


# --- steps: distance ---------------------------------------------------------------------------

def _bfs(topo: Topology, sources: Iterable[int]) -> tuple[dict[int, int], dict[int, int]]:
    out_of: dict[int, list[int]] = {r: [] for r in range(topo.ranks)}
    for link in sorted(topo.links, key=lambda l: (l.src, l.dst)):
        out_of[link.src].append(link.dst)
    dist = {s: 0 for s in sources}
    parent: dict[int, int] = {}
    queue = deque(sorted(dist))
    while queue:
        u = queue.popleft()
        for v in out_of[u]:
            if v not in dist:
                dist[v], parent[v] = dist[u] + 1, u
                queue.append(v)
    return dist, parent


def distance_bound(topo: Topology, coll: Collective, arrays: _Arrays | None = None) -> Bound:
    """Steps >= the hops from the nearest initial holder of a chunk to a rank that needs it."""
    import numpy as np

    a = arrays or _Arrays(topo, coll)
    if not len(a.post):
        return Bound("steps", 0, "steps", {}, "nothing to move")
    d = a.nearest_holder_distance()
    r, c = a.post[:, 0], a.post[:, 1]
    # the largest distance; ties: the smallest chunk, then the smallest rank
    i = int(np.lexsort((r, c, -d))[0])
    dd, cc, rr = int(d[i]), int(c[i]), int(r[i])
    holders = {cc: sorted(h for h, y in coll.pre if y == cc)}
    if dd >= a.unreachable:
        w = {"chunk": cc, "rank": rr, "holders": holders[cc], "distance": None}
        return Bound("steps", None, "steps", w, f"rank {rr} cannot be reached from the holders of chunk {cc}: "
                                                "no schedule exists")
    return Bound("steps", dd, "steps", _distance_witness(topo, holders[cc], cc, rr, dd))


def _distance_witness(topo: Topology, holders: list[int], c: int, r: int, d: int) -> dict[str, Any]:
    _, parent = _bfs(topo, holders)
    path = [r]
    while path[-1] not in holders:
        path.append(parent[path[-1]])
    return {"chunk": c, "rank": r, "holders": sorted(holders), "distance": d, "shortest_path": path[::-1]}


# --- rounds: receive capacity, cuts and chunk-hops ----------------------------------------------

# With switch groups, capacities are first over-estimated by summing links (cheap, so every candidate
# gets one: a valid bound); this many best candidates then get the exact max-flow capacity.
REFINED_CUTS = 8


def _receive_counts(coll: Collective, a: _Arrays) -> list[int]:
    """len(must_receive_all(coll)[r]) per rank, without building the per-rank lists (1M pairs at 1024)."""
    import numpy as np

    n_addr = int(a.address.max()) + 1 if len(a.address) else 1
    space = a.p * n_addr
    # a needed (rank, address) counts when a needed contribution is not there at the start ...
    missing = a.post[a.post_lacking]
    marked = missing[:, 0] * n_addr + a.address[missing[:, 1]]
    # ... or the start holds a contribution there that the rank must not end with
    extra = a.pre[a.pre_unneeded]
    if len(extra):
        extra_ra = extra[:, 0] * n_addr + a.address[extra[:, 1]]
        needed_ra = a.post[:, 0] * n_addr + a.address[a.post[:, 1]]
        marked = np.concatenate([marked, extra_ra[np.isin(extra_ra, needed_ra)]])
    marked = _distinct(marked, space)
    return np.bincount(marked // n_addr, minlength=a.p).tolist()


def _in_capacity_fast(topo: Topology, arrays: _Arrays) -> list[int]:
    """An upper bound on the chunks per round that can enter each rank: its in-links, where a switch
    group into the rank counts at most its own bandwidth for the links it bounds."""
    import numpy as np

    plain = np.bincount(arrays.dst, weights=arrays.bw, minlength=arrays.p).astype(np.int64)
    if not topo.switches:
        return plain.tolist()
    best = plain.copy()
    for g in topo.switches:
        srcs = np.zeros(arrays.p, dtype=bool)
        srcs[list(g.srcs)] = True
        bounded = np.bincount(arrays.dst, weights=arrays.bw * srcs[arrays.src], minlength=arrays.p).astype(np.int64)
        for v in g.dsts:
            best[v] = min(best[v], plain[v] - bounded[v] + g.bandwidth)
    return best.tolist()


def receive_bound(topo: Topology, coll: Collective, net: nx.DiGraph | None = None,
                  arrays: _Arrays | None = None) -> Bound:
    """Rounds >= ceil(k / b) for the rank that must receive k chunks through in-links and switch
    in-ports of total capacity b chunks per round (= steps when each step has one round)."""
    a = arrays or _Arrays(topo, coll)
    counts = _receive_counts(coll, a)
    caps = _in_capacity_fast(topo, a)
    cands = [(Fraction(k, b) if b else Fraction(10**18), r) for r, (k, b) in enumerate(zip(counts, caps)) if k]
    if not cands:
        return Bound("receive", 0, "rounds", {}, "no rank must receive anything")
    # the best ratio, ties to the smallest rank; with switch groups the exact capacity of the best few
    cands.sort(key=lambda x: (-x[0], x[1]))
    if topo.switches:
        net = net or flow_network(topo)
        refined = []
        for _, r in cands[:REFINED_CUTS]:
            b, _ = cut_capacity(topo, [r], net)
            refined.append((Fraction(counts[r], b) if b else Fraction(10**18), r))
        cands = sorted(refined + cands, key=lambda x: (-x[0], x[1]))
    _, r = cands[0]
    w = _receive_witness(topo, coll, r, net)
    if w["capacity"] == 0:
        return Bound("receive", None, "rounds", w, f"rank {r} must receive but has no way in: no schedule exists")
    return Bound("receive", math.ceil(Fraction(w["must_receive"], w["capacity"])), "rounds", w)


def _receive_witness(topo: Topology, coll: Collective, r: int, net: nx.DiGraph | None = None) -> dict[str, Any]:
    need = must_receive(coll, r)
    b, crossing = cut_capacity(topo, [r], net)
    return {"rank": r, "must_receive": len(need), "addresses": need, "capacity": b, **crossing}


def candidate_cuts(topo: Topology, dist: Any = None) -> list[frozenset[int]]:
    """All proper rank subsets of small topologies; beyond, balls of every radius around a spread of
    centers (every rank up to 64 ranks), blocks of consecutive ids (halves, quarters, eighths: the
    nodes of a machine, the slabs of a torus), and their complements."""
    p = topo.ranks
    everyone = frozenset(range(p))
    if p <= (EXHAUSTIVE_SWITCHED_CUTS_UP_TO if topo.switches else EXHAUSTIVE_CUTS_UP_TO):
        return [frozenset(s) for k in range(1, p) for s in itertools.combinations(range(p), k)]
    cuts: set[frozenset[int]] = set()
    n_centers = max(1, min(p, 4096 // p))
    rows = topo.distances if dist is None else {r: {v: int(d) for v, d in enumerate(dist[r]) if d < 1 << 30}
                                                 for r in range(0, p, max(1, p // n_centers))}
    for r in range(0, p, max(1, p // n_centers)):
        by_radius: dict[int, list[int]] = {}
        for v, d in rows[r].items():
            by_radius.setdefault(d, []).append(v)
        ball: set[int] = set()
        for radius in sorted(by_radius):
            ball |= set(by_radius[radius])
            if len(ball) < p:
                cuts.add(frozenset(ball))
                cuts.add(everyone - ball)
    for m in (2, 4, 8):
        if p % m == 0:
            for i in range(m):
                block = frozenset(range(i * p // m, (i + 1) * p // m))
                cuts.add(block)
                cuts.add(everyone - block)
    cuts |= {frozenset([r]) for r in range(p)}
    return sorted(cuts, key=lambda s: (len(s), sorted(s)))


def cut_bound(topo: Topology, coll: Collective, net: nx.DiGraph | None = None,
              arrays: _Arrays | None = None) -> Bound:
    """Rounds >= ceil(d / b) for the rank set into which d chunks must cross through capacity b per
    round. The witness is the set, the chunks (addresses) and the crossing links and groups."""
    import numpy as np

    a = arrays or _Arrays(topo, coll)
    cuts = candidate_cuts(topo, a.dist)
    x = np.zeros((a.p, len(cuts)), dtype=bool)
    for j, inside in enumerate(cuts):
        x[list(inside), j] = True
    d = np.zeros(len(cuts), dtype=np.int64)
    for lo in range(0, len(cuts), 512):  # columns in blocks: bounded memory on large collectives
        d[lo:lo + 512] = a.enter_counts(x[:, lo:lo + 512])
    b = a.plain_capacity(x)
    exact = bool(topo.switches) and topo.ranks <= EXHAUSTIVE_SWITCHED_CUTS_UP_TO
    net = net or (flow_network(topo) if topo.switches else None)
    if exact:
        b = np.array([cut_capacity(topo, inside, net)[0] if d[j] else 0 for j, inside in enumerate(cuts)])
    if (d > 0).any() and (b[d > 0] == 0).any():
        j = int(np.nonzero((d > 0) & (b == 0))[0][0])
        return Bound("cut", None, "rounds", cut_witness(topo, coll, cuts[j], net),
                     "data must enter a set of ranks that no link enters: no schedule exists")
    order = [j for j in range(len(cuts)) if d[j]]
    if not order:
        return Bound("cut", 0, "rounds", {}, "no data must cross any cut")
    order.sort(key=lambda j: (-Fraction(int(d[j]), int(b[j])), j))
    best = (Fraction(int(d[order[0]]), int(b[order[0]])), order[0])
    if topo.switches and not exact:
        for j in order[:REFINED_CUTS]:
            bj, _ = cut_capacity(topo, cuts[j], net)
            q = Fraction(int(d[j]), bj) if bj else Fraction(10**18)
            if q > best[0] or (q == best[0] and j < best[1]):
                best = (q, j)
    w = cut_witness(topo, coll, cuts[best[1]], net)
    return Bound("cut", math.ceil(Fraction(w["must_enter"], w["capacity"])), "rounds", w)


def cut_witness(topo: Topology, coll: Collective, inside: Iterable[int], net: nx.DiGraph | None = None) -> dict:
    inside = sorted(set(inside))
    addrs = must_enter(coll, inside)
    b, crossing = cut_capacity(topo, inside, net)
    ratio = Fraction(len(addrs), b) if b else None
    return {"inside": inside, "must_enter": len(addrs), "addresses": addrs, "capacity": b,
            "rounds_per_chunk": None if ratio is None else str(ratio / coll.chunk_factor), **crossing}


def _chunk_hops(coll: Collective, arrays: _Arrays) -> int:
    """Link uses every schedule makes: a chunk needed at n ranks that lack it arrives n times, and the
    farthest of them (d hops from the nearest holder) needs d arrivals along its path."""
    import numpy as np

    a = arrays
    lacking = a.post_lacking
    d = a.nearest_holder_distance()[lacking]
    c = a.post[lacking, 1]
    far = np.zeros(a.k, dtype=np.int64)
    np.maximum.at(far, c, d)
    n = np.bincount(c, minlength=a.k)
    return int(np.maximum(far, n).sum())


def hops_bound(topo: Topology, coll: Collective, arrays: _Arrays | None = None) -> Bound:
    """Rounds >= ceil(H / B): the chunk-hops H every schedule makes over the capacity B of all links
    per round (Ring(8) Alltoall: 128 hops over 16 links; an 8x8 torus Alltoall: 16384 over 256).
    Non-combining collectives only (a partial sum carries several contributions in one send)."""
    if coll.is_combining:
        return Bound("hops", None, "rounds", {}, "not computed for combining collectives")
    a = arrays or _Arrays(topo, coll)
    hops, cap = _chunk_hops(coll, a), int(a.bw.sum())
    if not hops:
        return Bound("hops", 0, "rounds", {}, "nothing to move")
    if not cap:
        return Bound("hops", None, "rounds", {}, "no links: no schedule exists")
    w = {"chunk_hops": hops, "capacity": cap, "rounds_per_chunk": str(Fraction(hops, cap) / coll.chunk_factor)}
    return Bound("hops", math.ceil(Fraction(hops, cap)), "rounds", w)


# --- rounds: multi-commodity flow LP -----------------------------------------------------------

def lp_bound(topo: Topology, coll: Collective) -> Bound:
    """Rounds >= the optimum T of the multicast multi-commodity flow LP: for every chunk c and rank r
    that needs it, one unit of flow from c's holders to r; link e carries y[c,e] >= every such flow of c;
    sum_c y[c,e] <= bandwidth(e) * T, and likewise per switch group. (Non-combining collectives only.)"""
    if coll.is_combining:
        return Bound("lp", None, "rounds", {}, "not computed for combining collectives")
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    demands = [(c, r) for r, c in coll.post if r not in holders[c]]
    if not demands:
        return Bound("lp", 0, "rounds", {"lp_optimum": 0.0}, "nothing to move")
    links = list(topo.links)
    used = sorted({c for c, _ in demands})
    n_f = len(demands) * len(links)
    n_y = len(used) * len(links)
    if n_f + n_y > LP_MAX_VARIABLES:
        return Bound("lp", None, "rounds", {}, f"not computed: {n_f + n_y} variables (limit {LP_MAX_VARIABLES})")
    yi = {c: i for i, c in enumerate(used)}
    t_var = n_f + n_y
    f = lambda k, e: k * len(links) + e  # noqa: E731
    y = lambda c, e: n_f + yi[c] * len(links) + e  # noqa: E731
    eq_rows, eq_cols, eq_vals, b_eq = [], [], [], []
    row = 0
    for k, (c, r) in enumerate(demands):
        for v in range(topo.ranks):
            if v in holders[c]:
                continue
            for e, l in enumerate(links):
                if l.dst == v:
                    eq_rows.append(row), eq_cols.append(f(k, e)), eq_vals.append(1.0)
                if l.src == v:
                    eq_rows.append(row), eq_cols.append(f(k, e)), eq_vals.append(-1.0)
            b_eq.append(1.0 if v == r else 0.0)
            row += 1
    ub_rows, ub_cols, ub_vals, b_ub = [], [], [], []
    row = 0
    for k, (c, _) in enumerate(demands):
        for e in range(len(links)):
            ub_rows += [row, row]
            ub_cols += [f(k, e), y(c, e)]
            ub_vals += [1.0, -1.0]
            b_ub.append(0.0)
            row += 1
    for e, l in enumerate(links):
        for c in used:
            ub_rows.append(row), ub_cols.append(y(c, e)), ub_vals.append(1.0)
        ub_rows.append(row), ub_cols.append(t_var), ub_vals.append(-float(l.bandwidth))
        b_ub.append(0.0)
        row += 1
    for grp in topo.switches:
        members = [e for e, l in enumerate(links) if l.src in grp.srcs and l.dst in grp.dsts]
        for e in members:
            for c in used:
                ub_rows.append(row), ub_cols.append(y(c, e)), ub_vals.append(1.0)
        ub_rows.append(row), ub_cols.append(t_var), ub_vals.append(-float(grp.bandwidth))
        b_ub.append(0.0)
        row += 1
    n = t_var + 1
    cost = np.zeros(n)
    cost[t_var] = 1.0
    a_eq = coo_matrix((eq_vals, (eq_rows, eq_cols)), shape=(len(b_eq), n)).tocsr()
    a_ub = coo_matrix((ub_vals, (ub_rows, ub_cols)), shape=(len(b_ub), n)).tocsr()
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 2:
        return Bound("lp", None, "rounds", {}, "the flow LP is infeasible: some rank cannot be reached")
    if res.status != 0:
        return Bound("lp", None, "rounds", {}, f"LP solver gave no answer: {res.message}")
    t = float(res.fun)
    w = {"lp_optimum": round(t, 6), "demands": len(demands), "variables": n, "solver": "scipy HiGHS",
         "rounds_per_chunk": round(t / coll.chunk_factor, 6)}
    return Bound("lp", math.ceil(t - 1e-6), "rounds", w, "re-solve the LP to check (no hand witness)")


# --- throughput: ForestColl's cut formula -------------------------------------------------------

def unit_speed(topo: Topology, gbps_per_unit: float | None = None) -> float | None:
    """GB/s of one unit of bandwidth: the override, else the fastest link's gbps / bandwidth."""
    if gbps_per_unit is not None:
        return gbps_per_unit
    speeds = [l.gbps / l.bandwidth for l in topo.links if l.gbps]
    return max(speeds) if speeds else None


def gb_capacities(topo: Topology, gbps_per_unit: float | None) -> tuple[Callable, Callable, str]:
    """Link and switch-group capacities in GB/s: `bandwidth * gbps_per_unit` when overridden, else the
    link's own gbps; a switch group gets bandwidth times the per-unit speed of the links it bounds.
    Without any speed the unit is "chunks per round"."""
    if gbps_per_unit is None and not any(l.gbps for l in topo.links):
        return (lambda l: l.bandwidth), (lambda g: g.bandwidth), "chunks/round"
    if gbps_per_unit is not None:
        return (lambda l: l.bandwidth * gbps_per_unit), (lambda g: g.bandwidth * gbps_per_unit), "GB/s"
    fallback = unit_speed(topo)

    def link_cap(l: Link) -> float:
        return l.gbps if l.gbps else l.bandwidth * fallback

    def group_cap(g: SwitchGroup) -> float:
        speeds = [link_cap(l) / l.bandwidth for l in topo.links if l.src in g.srcs and l.dst in g.dsts]
        return g.bandwidth * (max(speeds) if speeds else fallback)

    return link_cap, group_cap, "GB/s"


def _allgather_like(coll: Collective) -> str | None:
    """'allgather' when every rank starts with an equal share of distinct chunks and ends with all;
    'reducescatter' for its dual. Otherwise None (the cut formula is for these two)."""
    n = coll.ranks
    if not coll.is_combining:
        shares = [len(s) for s in coll.pre_sets]
        if (len(coll.pre) == coll.chunks and len(set(shares)) == 1 and shares[0] > 0
                and len(coll.post) == n * coll.chunks):
            return "allgather"
        return None
    if coll.name == "reducescatter":
        return "reducescatter"
    return None


def throughput_bound(topo: Topology, coll: Collective, gbps_per_unit: float | None = None) -> Bound:
    """Allgather algorithmic bandwidth (output bytes / time) <= min over rank sets A that lack some
    rank of N * B+(A) / |A|, B+(A) the capacity out of A (every chunk of A must leave A); found with
    max-flow and Dinkelbach's iteration as in ForestColl. ReduceScatter: the same on the reversed
    topology."""
    kind = _allgather_like(coll)
    if kind is None:
        return Bound("throughput", None, "GB/s", {}, "the cut formula applies to Allgather and ReduceScatter")
    net_topo = topo if kind == "allgather" else topo.reversed()
    link_cap, group_cap, unit = gb_capacities(net_topo, gbps_per_unit)
    net = flow_network(net_topo, link_cap, group_cap)
    n = topo.ranks
    # start from the best single-rank-complement cut: A = all ranks but v (v must receive N-1 shares)
    x, witness_set = None, None
    refine = n <= (THROUGHPUT_REFINED_SWITCHED_UP_TO if topo.switches else THROUGHPUT_REFINED_UP_TO)
    spread = range(n) if refine else range(0, n, max(1, n // 16))  # max-flows are slow
    for v in spread:
        inside = [u for u in range(n) if u != v]
        b = _out_capacity(net, inside)
        cand = b / (n - 1)
        if x is None or cand < x - 1e-12:
            x, witness_set = cand, inside
    # Dinkelbach's refinement needs a max-flow per rank per iteration: beyond THROUGHPUT_REFINED_UP_TO
    # ranks the best single-rank complement stands (still an upper bound; exact on vertex-transitive
    # topologies, where every rank's complement is the same cut)
    for _ in range(100 if refine else 0):
        improved = False
        for v in range(n):
            g = net.copy()
            for u in range(n):
                g.add_edge(_SOURCE, u, capacity=x)
            import networkx as nx

            value, (side, _) = nx.minimum_cut(g, _SOURCE, v)
            if value < n * x * (1 - 1e-9):
                inside = sorted(u for u in side if isinstance(u, int))
                b = _out_capacity(net, inside)
                x, witness_set, improved = b / len(inside), inside, True
                break
        if not improved:
            break
    b = _out_capacity(net, witness_set)
    crossing = _crossing(net_topo, net, witness_set)
    w = {"collective": kind, "ranks": n, "sending_side": witness_set, "shares_that_must_leave": len(witness_set),
         "capacity_out": round(b, 6), "unit": unit, "formula": "N * capacity_out / shares_that_must_leave",
         **crossing}
    if kind == "reducescatter":
        w["note"] = "computed on the reversed topology (ReduceScatter is the dual of Allgather)"
    return Bound("throughput", round(n * b / len(witness_set), 6), f"{unit} algorithmic bandwidth", w,
                 "an upper bound: no algorithm beats it")


def _out_capacity(net: nx.DiGraph, inside: Iterable[int]) -> float:
    inside = set(inside)
    if all(isinstance(v, int) for v in net.nodes):  # no switch groups: sum the links that leave
        return sum(d["capacity"] for a, b, d in net.edges(data=True) if a in inside and b not in inside)
    g = net.copy()
    for u in [v for v in g.nodes if isinstance(v, int)]:
        g.add_edge(_SOURCE, u) if u in inside else g.add_edge(u, _SINK)
    import networkx as nx

    return nx.maximum_flow_value(g, _SOURCE, _SINK)


def _crossing(topo: Topology, net: nx.DiGraph, inside: list[int]) -> dict:
    g = net.copy()
    for u in range(topo.ranks):
        g.add_edge(_SOURCE, u) if u in inside else g.add_edge(u, _SINK)
    import networkx as nx

    _, (side, _) = nx.minimum_cut(g, _SOURCE, _SINK)
    links, groups = [], []
    for a in side:
        for b, data in g[a].items():
            if b in side or "capacity" not in data:
                continue
            if "group" in data:
                grp = topo.switches[data["group"]]
                groups.append({"group": grp.name or f"switches[{data['group']}]", "capacity": round(data["capacity"], 6)})
            else:
                links += [{"src": s, "dst": d, "capacity": round(_link_part(topo, g, a, b, s, d), 6)}
                          for s, d in data["links"]]
    links.sort(key=lambda x: (x["src"], x["dst"]))
    groups.sort(key=lambda x: x["group"])
    return {"links": links, "switch_groups": groups}


# --- time ----------------------------------------------------------------------------------------

def time_bound(topo: Topology, coll: Collective, steps: Bound, rounds: Bound, size: int | None,
               gbps_per_unit: float | None = None, alpha_us: float | None = None) -> Bound:
    """k-synchronous alpha-beta time >= S_min * alpha + R_min * chunk_bytes / unit_speed, with the
    smallest link alpha, the fastest per-unit link speed, and chunk_bytes = size / (addresses in the
    largest per-rank output)."""
    if size is None:
        return Bound("time", None, "us", {}, "give --size BYTES")
    speed = unit_speed(topo, gbps_per_unit)
    alphas = [l.alpha_us for l in topo.links if l.alpha_us is not None]
    alpha = alpha_us if alpha_us is not None else (min(alphas) if alphas else None)
    if speed is None or alpha is None or steps.value is None or rounds.value is None:
        return Bound("time", None, "us", {}, "the topology has no timing (give --gbps-per-unit and --alpha-us)"
                     if speed is None or alpha is None else "no schedule exists")
    out_addrs = max(len({coll.address[c] for c in s}) for s in coll.post_sets)
    chunk_bytes = size / max(1, out_addrs)
    beta_us = chunk_bytes / (speed * 1e3)  # GB/s = 1e3 bytes per microsecond
    value = steps.value * alpha + rounds.value * beta_us
    w = {"steps": steps.value, "alpha_us": alpha, "rounds": rounds.value, "chunk_bytes": round(chunk_bytes, 6),
         "gbps_per_unit": round(speed, 6), "round_us": round(beta_us, 6),
         "formula": "steps * alpha_us + rounds * chunk_bytes / (gbps_per_unit * 1e3)"}
    return Bound("time", round(value, 6), "us", w)


# --- all together --------------------------------------------------------------------------------

def lower_bounds(topo: Topology, coll: Collective, size: int | None = None, gbps_per_unit: float | None = None,
                 alpha_us: float | None = None, lp: bool = True) -> Bounds:
    """Every bound for the collective as given (its chunk factor C is the instance's C)."""
    if topo.ranks != coll.ranks:
        raise ModelError("collective", f"has {coll.ranks} ranks but the topology has {topo.ranks}")
    net = flow_network(topo)
    arrays = _Arrays(topo, coll)
    steps = distance_bound(topo, coll, arrays)
    receive = receive_bound(topo, coll, net, arrays)
    cut = cut_bound(topo, coll, net, arrays)
    lpb = lp_bound(topo, coll) if lp else Bound("lp", None, "rounds", {}, "not computed (--no-lp)")
    hops = hops_bound(topo, coll, arrays)
    rounds = best_rounds(steps, receive, cut, lpb, hops)
    rpc = _rounds_per_chunk(cut, lpb, coll, hops)
    thr = throughput_bound(topo, coll, gbps_per_unit)
    t = time_bound(topo, coll, steps, rounds, size, gbps_per_unit, alpha_us)
    return Bounds(topo.name, coll.name, coll.ranks, coll.chunk_factor, steps, receive, cut, lpb, hops, rounds, rpc,
                  thr, t)


def best_rounds(steps: Bound, *others: Bound) -> Bound:
    """Rounds >= steps (every step has a round) and >= each rounds bound; the witness names the best."""
    if any(b.value is None and b.note.endswith("no schedule exists") for b in (steps, *others)):
        return Bound("rounds", None, "rounds", {}, "no schedule exists")
    cands = [(b.value, b.name) for b in (steps, *others) if b.value is not None]
    value, name = max(cands, key=lambda x: (x[0], x[1] != "steps"))
    return Bound("rounds", value, "rounds", {"from": name},
                 "total rounds for this chunk count; also the steps when each step has one round")


def _lp_per_chunk(lpb: Bound, coll: Collective) -> Fraction | None:
    """The LP optimum (a float) as a fraction no larger than it beyond the solver's tolerance."""
    if not lpb.value:
        return None
    return Fraction(lpb.witness["lp_optimum"] - 1e-7).limit_denominator(10**4) / coll.chunk_factor


def _rounds_per_chunk(cut: Bound, lpb: Bound, coll: Collective, hops: Bound | None = None) -> Bound:
    cands: list[tuple[Fraction, str]] = []
    if cut.value:
        cands.append((Fraction(cut.witness["must_enter"], 1) / Fraction(cut.witness["capacity"]) / coll.chunk_factor,
                      "cut"))
    if hops is not None and hops.value:
        cands.append((Fraction(hops.witness["chunk_hops"], hops.witness["capacity"]) / coll.chunk_factor, "hops"))
    lpq = _lp_per_chunk(lpb, coll)
    if lpq is not None:
        cands.append((lpq, "lp"))
    if not cands:
        return Bound("rounds_per_chunk", None, "rounds per chunk", {}, "no bound applies")
    value, name = max(cands, key=lambda x: x[0])  # max is stable: the cut, then the hops, on ties
    return Bound("rounds_per_chunk", _fraction_json(value), "rounds per chunk", {"from": name, "exact": str(value)},
                 "R/C of any schedule, for any C")


@attrs.frozen
class SearchBounds:
    """What the synthesizer prunes with, for a base collective (C = 1): `steps` (any rounds, from the
    distances) and `rounds_per_chunk` (R/C for every C, from cuts, chunk-hops and the flow LP), each
    with its reason. The same bounds as `lower_bounds`, from the same functions."""

    steps: Bound
    rounds_per_chunk: Fraction
    rounds_why: str

    @property
    def steps_value(self) -> int:
        """The fewest steps with any rounds (10**9 when some rank cannot be reached: no schedule)."""
        return 10**9 if self.steps.value is None else int(self.steps.value)

    def rounds(self, chunks: int) -> int:
        """The fewest rounds in all with the collective split in `chunks`."""
        return max(math.ceil(self.rounds_per_chunk * chunks), self.steps_value)

    def least_steps(self, one_round_per_step: bool = True, chunks: int = 1) -> int:
        """The fewest steps; with one round per step every step is a round, so the rounds bound holds too."""
        return max(self.steps_value, self.rounds(chunks)) if one_round_per_step else self.steps_value

    def steps_why(self, one_round_per_step: bool = True, chunks: int = 1) -> str:
        if one_round_per_step and self.rounds(chunks) > self.steps_value:
            return self.rounds_why
        return explain(self.steps)

    def to_json(self, one_round_per_step: bool = True, chunks: int = 1) -> dict[str, Any]:
        """The keys mean what they mean in `smtcoll bounds`: `steps` with any rounds, `rounds` in all for
        `chunks`; `least_steps` is the steps when each step has one round."""
        q = self.rounds_per_chunk
        return {"steps": self.steps_value, "steps_why": explain(self.steps),
                "rounds": self.rounds(chunks), "rounds_why": self.rounds_why,
                "least_steps": self.least_steps(one_round_per_step, chunks),
                "least_steps_why": self.steps_why(one_round_per_step, chunks),
                "rounds_per_chunk": _fraction_json(q), "rounds_per_chunk_exact": str(q)}


# Above this many LP variables the synthesizer does without the LP (cuts and chunk-hops are instant).
SEARCH_LP_MAX_VARIABLES = 20_000


def search_bounds(topo: Topology, coll: Collective) -> SearchBounds:
    """The bounds the search starts from, for the collective as given (C = its chunk factor): raises
    no error for unreachable ranks; the steps bound is then None and the rounds 10**9."""
    net = flow_network(topo) if topo.switches else None
    arrays = _Arrays(topo, coll)
    steps = distance_bound(topo, coll, arrays)
    if steps.value is None:
        return SearchBounds(steps, Fraction(10**9), steps.note)
    cut = cut_bound(topo, coll, net, arrays)
    receive = receive_bound(topo, coll, net, arrays)
    hops = hops_bound(topo, coll, arrays)
    import numpy as np

    demands = int(arrays.post_lacking.sum())
    small = (demands + coll.chunks) * len(topo.links) <= SEARCH_LP_MAX_VARIABLES
    # the LP beats cuts and chunk-hops where chunks go to one rank each (Alltoall on machines); where a
    # chunk goes to many, the receive bound is the one that binds, and the LP's import costs 0.2 s
    one_needer = bool(len(demands_per := np.bincount(arrays.post[arrays.post_lacking, 1], minlength=coll.chunks))
                      and demands_per.max() <= 1)
    lpb = (lp_bound(topo, coll) if small and one_needer and not coll.is_combining
           else Bound("lp", None, "rounds", {}, "not computed"))
    cands: list[tuple[Fraction, str]] = []
    for b in (cut, receive):
        if b.value and b.witness.get("capacity"):
            k = b.witness["must_enter"] if b.name == "cut" else b.witness["must_receive"]
            cands.append((Fraction(k, b.witness["capacity"]) / coll.chunk_factor, explain(b)))
    if hops.value:
        cands.append((Fraction(hops.witness["chunk_hops"], hops.witness["capacity"]) / coll.chunk_factor,
                      explain(hops)))
    lpq = _lp_per_chunk(lpb, coll)
    if lpq is not None:
        cands.append((lpq, explain(lpb)))
    if not cands:
        return SearchBounds(steps, Fraction(0), "nothing must cross any cut")
    q, why = max(cands, key=lambda x: x[0])
    return SearchBounds(steps, q, why)


def explain(b: Bound) -> str:
    """One line saying why a bound holds, from its witness."""
    w = b.witness
    if b.value is None:
        return b.note
    if b.name == "steps" and w:
        return f"distance: chunk {w['chunk']} is {w['distance']} hop(s) from rank {w['rank']}"
    if b.name == "receive" and w:
        return f"receive: rank {w['rank']} must receive {w['must_receive']} chunk(s), at most {w['capacity']} per round"
    if b.name == "cut" and w:
        return (f"cut: {w['must_enter']} chunk(s) must enter {len(w['inside'])} rank(s), at most {w['capacity']} "
                "per round")
    if b.name == "hops" and w:
        return f"hops: {w['chunk_hops']} chunk-hops over links carrying {w['capacity']} per round"
    if b.name == "lp" and w:
        return f"flow LP optimum {w['lp_optimum']}"
    return b.note or b.name


def min_steps(topo: Topology, coll: Collective) -> int | None:
    """The least steps any schedule needs (None: no schedule exists). Cheap: one BFS per chunk."""
    return distance_bound(topo, coll).value


def min_rounds(topo: Topology, coll: Collective) -> int | None:
    """The least total rounds for the collective's chunk count (receive, cut and distance bounds)."""
    net = flow_network(topo)
    steps = distance_bound(topo, coll)
    return best_rounds(steps, receive_bound(topo, coll, net), cut_bound(topo, coll, net)).value


# --- witnesses re-checked from scratch (used by `smtcoll proof check`) ---------------------------

def check_witness(kind: str, witness: dict[str, Any], topo: Topology, coll: Collective) -> int | None:
    """Recompute the bound a witness proves, from the topology, the collective and the witness's
    choice only (its chunk and rank, its rank, or its set of ranks); its recorded numbers are ignored.
    Returns the proved lower bound (steps for 'steps', rounds otherwise), or raises ModelError."""
    try:
        if kind == "steps":
            c, r = int(witness["chunk"]), int(witness["rank"])
            if (r, c) not in set(coll.post):
                raise ModelError("witness", f"rank {r} does not need chunk {c}")
            holders = [h for h, x in coll.pre if x == c]
            dist, _ = _bfs(topo, holders)
            return dist.get(r, 10**9)
        if kind == "receive":
            r = int(witness["rank"])
            if not 0 <= r < topo.ranks:
                raise ModelError("witness", f"rank {r} out of range")
            k = len(must_receive(coll, r))
            b, _ = cut_capacity(topo, [r])
            return 10**9 if b == 0 and k else (math.ceil(Fraction(k, b)) if k else 0)
        if kind == "cut":
            inside = sorted({int(x) for x in witness["inside"]})
            if not inside or len(inside) >= topo.ranks or not all(0 <= x < topo.ranks for x in inside):
                raise ModelError("witness", "the cut must be a non-empty proper subset of the ranks")
            d = len(must_enter(coll, inside))
            b, _ = cut_capacity(topo, inside)
            return 10**9 if b == 0 and d else (math.ceil(Fraction(d, b)) if d else 0)
        if kind == "hops":  # no choice in the witness: recomputed from the topology and collective
            b = hops_bound(topo, coll)
            return 10**9 if b.value is None else int(b.value)
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError("witness", f"malformed {kind} witness: {e}") from None
    raise ModelError("witness", f"unknown bound kind {kind!r} (expected steps, receive, cut or hops)")
