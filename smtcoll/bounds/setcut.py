"""Rank-set cuts: what a set of ranks must receive (or send) in all, over everything that can deliver into
(or carry out of) its members per round, each shared port, NIC or socket link counted once.

For a rank set S, four families, each R >= a count over a capacity per round:

- `arrivals`: every rank v must receive each address it needs and does not start with (`must_receive`), so
  the members of S receive at least A = sum over v in S of those in all; at most b arrive at members of S per
  round, over the links into them from anywhere (inside S too): R >= A / b. Per-rank ingress is the case
  |S| = 1; where a port or NIC is shared by the ranks of S it counts once. shared2nic8 x 2 Allgather: the 4
  GPUs behind one NIC lack 4 x 15 = 60 chunks, and 4 switch in-ports + 1 NIC bring at most 5 a round: 12
  rounds, where each GPU alone (15 through 2) proves 8.
- `departures`: a rank that alone holds a contribution (a chunk) some other rank needs sends that address
  at least once; the members of S send at least that sum, over the links out of them: the dual
  (ReduceScatter, Alltoall).
- `entry`: D addresses must cross into S from outside (`must_enter`, the cut bound) over the links into S
  from outside, b per round; and an address crossing for the first time in the last step reaches only the
  ranks it enters (none inside held it when the step began), so it crosses there once for each of its k
  needers inside S: D <= b (R - 1) + floor(b / k) (a last step of m rounds gives b (R - m) + floor(b m / k),
  no more). pcie2s8 x 2 Allgather: 12 chunks cross into a socket over one socket link, each needed by 4
  GPUs: 13 rounds, where 12 / 1 is 12. For a copy collective the spread after the last first crossing too
  (`spread_rounds`, session 22): a chunk is at most at b ranks of S after the round it first crosses, and each
  round after at most h (1 + f) + b, f the most ranks of S one rank of S reaches in a round (its links, its
  switch groups); the last chunk to cross first must still reach k: R >= ceil(D / b) + s (steps of several
  rounds: `spread_rounds`). pcie4slow x 4 (4 GPUs on a switch, one NIC): 12 chunks enter a node, 1 a round,
  the last at 1 GPU, then 3, then 4: 14 rounds, where the tail above gives 13.
- `exit`: E addresses must leave S (some rank outside needs a contribution only S holds) over the links out
  of S; for a combining collective, a value leaving in the first step carries only its sender's own
  contributions, so an address whose contributions sit at k ranks of S crosses k times if it crosses only
  then: E <= b (R - 1) + floor(b / k) (ReduceScatter on pcie2s8 x 2: 13, the dual of the above).

Capacities are covers: groups and links such that every link of the family is a member of a chosen group
(its bandwidth bounds them together) or chosen itself; the rounds' traffic over those links is at most the
sum of their bandwidths (a step of k rounds: k times). The cover is a minimum cut of the flow network in
which each link runs through the groups that bound it (`network`'s chains), so it is the least such cover
the network finds. The witness is the set, the counts and the cover; `check_setcut` recomputes the counts
from the collective and checks that the cover covers every link, in plain integers.

Candidate sets come from the structure, so the bound stays cheap: single ranks, the destinations (and the
sources) of every switch group (the ranks behind a NIC, a socket link, a port), the nodes of a machine,
blocks of consecutive ranks, every rank, and every set up to 10 ranks; screened with a cheap cover (each
link charged to one of its groups), the best few get the exact cover.
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from smtcoll.bounds.demand import must_enter
from smtcoll.bounds.results import Bound
from smtcoll.errors import ModelError
from smtcoll.model import Collective, Topology

FAMILIES = ("arrivals", "departures", "entry", "exit")
EXHAUSTIVE_UP_TO = 10  # ranks: every subset is screened (1023 sets at 10)
EXACT_PER_FAMILY = 6  # the best screened sets of each family whose exact cover is computed
# Without switch groups a set's capacity is the sum of its members' links, so the sum families are at most the
# per-rank (receive) bounds and the entry / exit families add only their tail to the cut bound: beyond this
# many ranks (numpy's dense range) such topologies are left to the cut bound (1024-rank tori: 1 s, not 7)
PLAIN_UP_TO = 64


# --- counts ------------------------------------------------------------------------------------------

def must_send_all(coll: Collective) -> list[list[int]]:
    """Per rank, the addresses it must send at least once: it alone starts with a contribution (a chunk)
    that another rank needs (no one else can deliver it)."""
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    out: list[set[int]] = [set() for _ in range(coll.ranks)]
    for r, c in coll.post:
        h = holders.get(c, set())
        if len(h) == 1 and r not in h:
            out[next(iter(h))].add(coll.address[c])
    return [sorted(s) for s in out]


def _no_links(ranks: int) -> Topology:
    """A topology of the ranks without links: `Arrays` of a collective's counts alone (no distances needed)."""
    return Topology("counts", ranks, ())


def family_links(topo: Topology, inside: set[int], family: str) -> list[int]:
    """Indices of the links whose traffic the family counts."""
    if family == "arrivals":
        return [e for e, l in enumerate(topo.links) if l.dst in inside]
    if family == "departures":
        return [e for e, l in enumerate(topo.links) if l.src in inside]
    if family == "entry":
        return [e for e, l in enumerate(topo.links) if l.dst in inside and l.src not in inside]
    if family == "exit":
        return [e for e, l in enumerate(topo.links) if l.src in inside and l.dst not in inside]
    raise ModelError("witness", f"unknown set-cut family {family!r} (expected {', '.join(FAMILIES)})")


@functools.lru_cache(maxsize=2)  # the instance at hand (bounds, then the gap): large collectives are large
def per_rank_counts(coll: Collective, family: str) -> tuple[int, ...]:
    """Per rank, how many addresses it must receive (arrivals) or send (departures): once per collective,
    not once per candidate set (240 ranks: 57,600 pairs)."""
    if family == "arrivals":  # the receive bound's vectorized count (1M pairs at 1024 ranks)
        from smtcoll.bounds.arrays import Arrays
        from smtcoll.bounds.receive import _receive_counts

        return tuple(_receive_counts(coll, Arrays(_no_links(coll.ranks), coll)))
    return tuple(len(v) for v in must_send_all(coll))


def demand(coll: Collective, inside: Sequence[int], family: str) -> tuple[int, int, list[int]]:
    """(the count that must cross, k: the copies a last-step (entry) or first-step (exit) crossing needs,
    the per-rank counts of a sum family, else [])."""
    s = set(inside)
    if family in ("arrivals", "departures"):
        per = per_rank_counts(coll, family)
        counts = [per[v] for v in sorted(s)]
        return sum(counts), 1, counts
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    if family == "entry":
        addrs = must_enter(coll, s)
        # per address, the ranks inside that need a contribution only ranks outside hold
        needers: dict[int, set[int]] = {}
        for r, c in coll.post:
            if r in s and not holders.get(c, set()) & s:
                needers.setdefault(coll.address[c], set()).add(r)
        return len(addrs), min((len(needers[a]) for a in addrs), default=1), []
    if family == "exit":
        outside = set(range(coll.ranks)) - s
        addrs = must_enter(coll, outside)
        if not coll.is_combining:
            return len(addrs), 1, []
        # per address and needer outside: the ranks of S holding (alone) the contributions it needs from S;
        # a contribution held by several ranks of S could come from any: k = 1 there (no claim)
        k_of: dict[int, int] = {}
        want: dict[tuple[int, int], set[int]] = {}
        shared: set[tuple[int, int]] = set()
        for r, c in coll.post:
            h = holders.get(c, set())
            if r in outside and h and h <= s:
                key = (coll.address[c], r)
                if len(h) > 1:
                    shared.add(key)
                want.setdefault(key, set()).update(h)
        for (a, r), hs in want.items():
            k = 1 if (a, r) in shared else len(hs)
            k_of[a] = min(k_of.get(a, k), k)
        return len(addrs), min((k_of.get(a, 1) for a in addrs), default=1), []
    raise ModelError("witness", f"unknown set-cut family {family!r} (expected {', '.join(FAMILIES)})")


def last_hops(topo: Topology, coll: Collective, inside: Sequence[int]) -> tuple[int, int]:
    """For the entry family of a copy collective: (h, the rank): the chunks that must enter S, the last of
    them to enter first crosses in round ceil(D / b) or later at an entry rank (a destination of a link into
    S), and a rank of S that needs every one of them is h hops from the nearest entry rank (any path: one
    that leaves S enters again at an entry rank). (0, -1) where it does not apply: combining collectives
    (their partial sums may be combined before they enter, `entry`), or no rank needs every import."""
    if coll.is_combining:
        return 0, -1
    from smtcoll.bounds.entry import _from

    s = set(inside)
    held = {c for r, c in coll.pre if r in s}
    imports = {c for r, c in coll.post if r in s} - held
    entries = sorted({l.dst for l in topo.links if l.dst in s and l.src not in s})
    dist = _from(topo, entries)
    needers = [r for r in sorted(s) if imports and imports <= coll.post_sets[r]]
    return max(((dist.get(r, 0), r) for r in needers), default=(0, -1))


def first_hops(topo: Topology, coll: Collective, inside: Sequence[int]) -> tuple[int, int]:
    """For the exit family, the dual of `last_hops`: (h, the rank): a rank s of S that alone holds, for every
    address that must leave S, a contribution some rank outside needs; every such address crosses out
    carrying s's share, which reaches an exit rank (a source of a link out of S) h hops from s no sooner than
    round h + 1, so all of them cross in the last R - h rounds: R >= h + ceil(D / b). (0, -1) where no rank
    of S holds one for every address."""
    s = set(inside)
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    sole: dict[int, set[int]] = {}  # rank of S -> the exported addresses it alone carries a needed share of
    exported: set[int] = set()
    for r, c in coll.post:
        h = holders.get(c, set())
        if r not in s and h and h <= s:
            exported.add(coll.address[c])
            if len(h) == 1:
                sole.setdefault(next(iter(h)), set()).add(coll.address[c])
    owners = [v for v in sorted(sole) if exported and sole[v] == exported]
    if not owners:
        return 0, -1
    from smtcoll.bounds.entry import _from

    exits = sorted({l.src for l in topo.links if l.src in s and l.dst not in s})
    dist = _from(topo, exits, reverse=True)
    return max((dist.get(v, 0), v) for v in owners)


def spread_rounds(topo: Topology, inside: Sequence[int], capacity: int, k: int, total: int) -> tuple[int, int]:
    """For the entry family of a copy collective: (s, f), R >= ceil(total / capacity) + s (module docstring).
    f: the most ranks of S that one rank of S can pass a chunk to in one round (its links to other ranks of S,
    one copy each; a switch group it sends through bounds those into the group's destinations). A chunk that x
    links carry into S for the first time is at x ranks of S when that step ends (it moves one hop a step) and
    each round after, h ranks make at most h (1 + f) + capacity: after(x) rounds before k ranks hold it. Steps
    of several rounds: let the last step in which some chunk first crosses end at round e and take m rounds;
    the q >= max(1, total - capacity (e - m)) chunks first crossing in it share its capacity m crossings, so one
    of them has x <= floor(capacity m / q), and R >= e + after(x). s is the least of that over e and m (for a
    given e, x is largest at the last m with q = 1 or the one after)."""
    s = set(inside)
    dests: dict[int, set[int]] = {v: set() for v in s}
    for l in topo.links:
        if l.src in s and l.dst in s and l.src != l.dst:
            dests[l.src].add(l.dst)
    fan = {v: len(d) for v, d in dests.items()}
    for g in topo.switches:
        for v in set(g.srcs) & s:
            fan[v] = min(fan[v], g.bandwidth + len(dests[v] - set(g.dsts)))
    f = max(fan.values(), default=0)

    def after(x: int) -> int:
        held, rounds = min(len(s), x), 0
        while held < k:  # grows by capacity >= 1 a round at least, up to |S| >= k
            held, rounds = min(len(s), held * (1 + f) + capacity), rounds + 1
        return rounds

    first = -(-total // capacity)
    best, e = first + after(1), first
    while e < best:
        c = total - capacity * e  # <= 0: the chunks crossing first by the end of round e fit
        m = min(e, max(1, (1 - c) // capacity))
        x = capacity * m if c + capacity * m <= 1 else capacity * m // (c + capacity * m)
        if m < e:
            x = max(x, capacity * (m + 1) // max(1, c + capacity * (m + 1)))
        best, e = min(best, e + after(x)), e + 1
    return best - first, f


def rounds_for(total: int, capacity: int, k: int) -> int:
    """The least R with total <= capacity x R and, for k >= 2, total <= capacity (R - 1) + floor(capacity / k)."""
    if total <= 0:
        return 0
    r = -(-total // capacity)
    if k >= 2:
        r = max(r, 1 + max(0, -(-(total - capacity // k) // capacity)))
    return r


# --- covers ------------------------------------------------------------------------------------------

def cover_capacity(topo: Topology, links: Iterable[int], groups: Sequence[int], own: Sequence[int]) -> int:
    """The capacity a cover proves for the links (indices): every link is a member of a chosen group or
    chosen itself (raises ModelError otherwise); the sum of their bandwidths. Plain integers."""
    chosen = sorted(set(groups))
    for g in chosen:
        if not 0 <= g < len(topo.switches):
            raise ModelError("witness", f"switch group {g} does not exist")
    mine = set(own)
    for e in mine:
        if not 0 <= e < len(topo.links):
            raise ModelError("witness", f"link {e} does not exist")
    sets = [(set(topo.switches[g].srcs), set(topo.switches[g].dsts)) for g in chosen]
    for e in links:
        l = topo.links[e]
        if e not in mine and not any(l.src in a and l.dst in b for a, b in sets):
            raise ModelError("witness", f"link {l.src} -> {l.dst} is covered by no group and not counted itself")
    return sum(topo.switches[g].bandwidth for g in chosen) + sum(topo.links[e].bandwidth for e in sorted(mine))


class _Chains:
    """The topology's flow network (each link through the groups that bound it, `network`'s chain order),
    with a sending and a receiving node per rank, as integer arrays for scipy's max-flow."""

    def __init__(self, topo: Topology) -> None:
        from smtcoll.bounds.network import _chain_order

        p, g = topo.ranks, len(topo.switches)
        self.topo = topo
        self.source, self.sink = 2 * p + 2 * g, 2 * p + 2 * g + 1
        self.n = 2 * p + 2 * g + 2
        # per link, its edges (a, b): rank out -> group in, group in -> out, ..., -> rank in
        self.edges_of: list[list[tuple[int, int]]] = []
        for l in topo.links:
            chain = [l.src]
            for i in sorted(topo.switches_of(l.src, l.dst), key=lambda i: _chain_order(topo.switches[i], i)):
                chain += [2 * p + 2 * i, 2 * p + 2 * i + 1]
            chain.append(p + l.dst)
            self.edges_of.append(list(itertools.pairwise(chain)))
        self.p = p

    def group_of_edge(self, a: int, b: int) -> int | None:
        p = self.p
        if a >= 2 * p and b == a + 1 and (a - 2 * p) % 2 == 0:
            return (a - 2 * p) // 2
        return None

    def cover(self, links: Sequence[int]) -> tuple[int, list[int], list[int]]:
        """A minimum cut of the network restricted to the links, as a cover: (capacity, groups, own links)."""
        if not links:
            return 0, [], []
        topo = self.topo
        if not topo.switches:
            # no group can bound two links together: the least cover is every link (and no scipy to load
            # for a plain graph: `synth -t ring:4` starts without it)
            ls = sorted(set(links))
            return cover_capacity(topo, links, [], ls), [], ls
        import numpy as np
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import breadth_first_order, maximum_flow

        cap: dict[tuple[int, int], int] = {}
        carried: dict[tuple[int, int], list[int]] = {}
        for e in links:
            bw = topo.links[e].bandwidth
            for ab in self.edges_of[e]:
                gi = self.group_of_edge(*ab)
                if gi is not None:
                    cap[ab] = topo.switches[gi].bandwidth
                else:
                    cap[ab] = cap.get(ab, 0) + bw
                    carried.setdefault(ab, []).append(e)
        big = sum(cap.values()) + 1
        srcs = sorted({topo.links[e].src for e in links})
        dsts = sorted({self.p + topo.links[e].dst for e in links})
        rows = [a for a, _ in cap] + [self.source] * len(srcs) + dsts
        cols = [b for _, b in cap] + srcs + [self.sink] * len(dsts)
        w = [*cap.values()] + [big] * (len(srcs) + len(dsts))
        m = csr_array((np.array(w, dtype=np.int64), (np.array(rows), np.array(cols))), shape=(self.n, self.n))
        m.sum_duplicates()
        res = maximum_flow(m, self.source, self.sink)
        residual: Any = csr_array(m - res.flow)
        residual.data = np.where(residual.data > 0, residual.data, 0)
        residual.eliminate_zeros()
        reach = set(breadth_first_order(residual, self.source, return_predecessors=False).tolist())
        groups: set[int] = set()
        own: set[int] = set()
        for (a, b), _ in sorted(cap.items()):
            if a in reach and b not in reach:
                gi = self.group_of_edge(a, b)
                if gi is not None:
                    groups.add(gi)
                else:
                    own.update(carried[(a, b)])
        # a link a chosen group already bounds need not count itself
        sets = [(set(topo.switches[g].srcs), set(topo.switches[g].dsts)) for g in sorted(groups)]
        own = {e for e in own
               if not any(topo.links[e].src in a and topo.links[e].dst in b for a, b in sets)}
        gs, ls = sorted(groups), sorted(own)
        return cover_capacity(topo, links, gs, ls), gs, ls


# --- candidates and screening ------------------------------------------------------------------------

def candidate_sets(topo: Topology) -> list[tuple[int, ...]]:
    """Rank sets from the structure: single ranks, every switch group's destinations and sources, the nodes
    of a machine, blocks of consecutive ranks (every count up to 16 that divides the ranks), every rank;
    every proper subset up to EXHAUSTIVE_UP_TO ranks."""
    from smtcoll.bounds.entry import node_of

    p = topo.ranks
    everyone = tuple(range(p))
    out: set[tuple[int, ...]] = {everyone}
    if p <= EXHAUSTIVE_UP_TO:
        out |= {s for k in range(1, p) for s in itertools.combinations(range(p), k)}
        return sorted(out, key=lambda s: (len(s), s))
    out |= {(r,) for r in range(p)}
    for g in topo.switches:
        for side in (g.dsts, g.srcs):
            s = tuple(sorted(set(side)))
            if 1 < len(s) < p:
                out.add(s)
    nodes = node_of(topo)
    if nodes is not None:
        for i in set(nodes):
            out.add(tuple(r for r in range(p) if nodes[r] == i))
    for m in range(2, 17):
        if p % m == 0:
            size = p // m
            out |= {tuple(range(i * size, (i + 1) * size)) for i in range(m)}
    return sorted(out, key=lambda s: (len(s), s))


def _screen(topo: Topology, coll: Collective, sets: Sequence[tuple[int, ...]]) -> dict[str, list[int]]:
    """Per family, the indices of the most promising sets, by count / a cheap cover (each link charged to
    itself or to one of its groups: the narrowest on the receiving side, on the sending side, or the
    smallest; every such charge is a cover, so the estimate only ranks)."""
    import numpy as np

    from smtcoll.bounds.arrays import Arrays

    a = Arrays(topo, coll)
    p = topo.ranks
    x = np.zeros((p, len(sets)), dtype=bool)
    for j, s in enumerate(sets):
        x[list(s), j] = True
    ins = np.array(per_rank_counts(coll, "arrivals"), dtype=np.float64)
    outs = np.array(per_rank_counts(coll, "departures"), dtype=np.float64)
    groups_of = [topo.switches_of(l.src, l.dst) for l in topo.links]
    sw = topo.switches
    gbw = np.array([g.bandwidth for g in sw], dtype=np.float64)
    assigns = []
    for key in (lambda i: (len(sw[i].dsts), i), lambda i: (len(sw[i].srcs), i), lambda i: (sw[i].bandwidth, i)):
        assigns.append(np.array([min(gs, key=key) if gs else -1 for gs in groups_of], dtype=np.int64))
    bw = a.bw.astype(np.float64)
    charges = []  # per assignment: (groups x links) with the link's bandwidth where it is charged; the free links
    if len(sw):
        from scipy.sparse import csr_array

        for assign in assigns:
            on = np.nonzero(assign >= 0)[0]
            charges.append((csr_array((bw[on], (assign[on], on)), shape=(len(sw), len(bw))),
                            np.where(assign < 0, bw, 0.0)))
    scores = {f: np.zeros(len(sets)) for f in FAMILIES}
    for lo in range(0, len(sets), 256):  # columns in blocks: bounded memory (dgx2 x 16: 30,000 links)
        xb = x[:, lo:lo + 256]
        for family in FAMILIES:
            if family == "arrivals":
                count = ins @ xb
            elif family == "departures":
                count = outs @ xb
            elif family == "entry":
                count = a.enter_counts(xb).astype(np.float64)
            else:
                count = a.enter_counts(~xb).astype(np.float64)
            if not charges:  # no switch groups: nothing to charge, and no scipy to load (`synth -t ring:4`)
                cap = bw @ _crossed(a.src, a.dst, xb, family).astype(np.float64)
            else:
                m = _family_mask(a, xb, family)  # links x sets, sparse: most sets are crossed by few links
                mt = m.T.tocsr()
                cap = mt @ bw
                for charged_bw, free_bw in charges:
                    charged = (charged_bw @ m).toarray()  # groups x sets
                    cap = np.minimum(cap, mt @ free_bw + np.minimum(charged, gbw[:, None]).sum(axis=0))
            with np.errstate(divide="ignore", invalid="ignore"):
                scores[family][lo:lo + xb.shape[1]] = np.where((count > 0) & (cap > 0),
                                                               count / np.maximum(cap, 1e-300), 0.0)
    out: dict[str, list[int]] = {}
    for family, score in scores.items():
        order = np.lexsort((np.arange(len(sets)), -score))
        out[family] = [int(j) for j in order[:EXACT_PER_FAMILY] if score[j] > 0]
    return out


def _family_mask(a: Any, xb: Any, family: str) -> Any:
    """The links each set's family counts (links x sets, sparse 0/1): into it, out of it, entering, leaving."""
    import numpy as np
    from scipy.sparse import csc_array

    rows, ptr = [], [0]
    for j in range(xb.shape[1]):
        idx = np.flatnonzero(_crossed(a.src, a.dst, xb[:, j], family))
        rows.append(idx)
        ptr.append(ptr[-1] + len(idx))
    r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return csc_array((np.ones(len(r)), r, np.array(ptr)), shape=(len(a.dst), xb.shape[1]))


def _crossed(src: Any, dst: Any, x: Any, family: str) -> Any:
    """Per link (and set, for a ranks x sets `x`), whether the family counts it: into, out of, entering,
    leaving the set."""
    at_dst, at_src = x[dst], x[src]
    if family == "arrivals":
        return at_dst
    if family == "departures":
        return at_src
    return at_dst & ~at_src if family == "entry" else at_src & ~at_dst


# --- the bound ---------------------------------------------------------------------------------------

def set_witness(topo: Topology, coll: Collective, inside: Sequence[int], family: str,
                chains: _Chains | None = None) -> dict[str, Any] | None:
    """The bound for one set and family, with everything `check_setcut` needs; None when it proves nothing
    (nothing must cross, or nothing can: other bounds say that no schedule exists)."""
    s = sorted(set(inside))
    total, k, per_rank = demand(coll, s, family)
    if not total:
        return None
    links = family_links(topo, set(s), family)
    cap, groups, own = (chains or _Chains(topo)).cover(links)
    if not cap:
        return None
    rounds = rounds_for(total, cap, k)
    w: dict[str, Any] = {
        "family": family, "inside": s, "must": total, "per_rank": per_rank, "copies": k, "capacity": cap,
        "groups": groups, "group_names": [topo.switches[g].name or f"switches[{g}]" for g in groups],
        "links": [[topo.links[e].src, topo.links[e].dst] for e in own], "rounds": rounds,
        "chunks": coll.chunk_factor, "rounds_per_chunk": str(Fraction(total, cap) / coll.chunk_factor)}
    if family in ("entry", "exit"):
        h, far = (last_hops if family == "entry" else first_hops)(topo, coll, s)
        w["hops"], w["farthest"] = h, far
        w["rounds"] = max(rounds, -(-total // cap) + h)
    if family == "entry" and not coll.is_combining:
        w["spread"], w["fanout"] = spread_rounds(topo, s, cap, k, total)
        w["rounds"] = max(w["rounds"], -(-total // cap) + w["spread"])
    return w


def setcut_bound(topo: Topology, coll: Collective) -> Bound:
    """The strongest rank-set cut over the candidate sets (module docstring), in rounds for the collective
    as given; value None when no set proves anything. Computed once per instance (`bounds` and `synth`'s
    gap both ask); the caller gets its own witness, lists included (a caller that edits it, as the tests of
    the certificates do, must not change the cached one)."""
    b = _setcut_bound(topo, coll)
    return Bound(b.name, b.value, b.unit, copy.deepcopy(b.witness), b.note, b.per_chunk)


@functools.lru_cache(maxsize=2)  # the instance at hand (bounds, then the gap): large collectives are large
def _setcut_bound(topo: Topology, coll: Collective) -> Bound:
    if topo.ranks != coll.ranks:
        return Bound("setcut", None, "rounds", {}, "the topology and collective differ in ranks")
    if not coll.post or not topo.links:
        return Bound("setcut", None, "rounds", {}, "nothing to move")
    if not topo.switches and topo.ranks > PLAIN_UP_TO:
        return Bound("setcut", None, "rounds", {}, f"no switch groups and more than {PLAIN_UP_TO} ranks: the cut "
                                                   "and receive bounds cover the set families but for a tail")
    sets = candidate_sets(topo)
    chosen = _screen(topo, coll, sets)
    chains = _Chains(topo)
    best: dict[str, Any] | None = None
    for family in FAMILIES:
        for j in chosen[family]:
            w = set_witness(topo, coll, sets[j], family, chains)
            if w is None:
                continue
            key = (w["rounds"], Fraction(w["must"], w["capacity"]))
            if best is None or key > (best["rounds"], Fraction(best["must"], best["capacity"])):
                best = w
    if best is None:
        return Bound("setcut", None, "rounds", {}, "no rank set must receive or send anything")
    return Bound("setcut", best["rounds"], "rounds", best,
                 "rounds: what a set of ranks must receive or send in all, over what can reach or leave its members",
                 per_chunk=Fraction(best["must"], best["capacity"]) / coll.chunk_factor)


def check_setcut(witness: dict[str, Any], topo: Topology, coll: Collective) -> int:
    """Recompute a set-cut witness from its choice (family, set, cover): the counts from the collective, the
    cover's capacity from the topology (every link of the family covered); every recorded number must
    match. Returns the rounds it proves; raises ModelError."""
    family = str(witness["family"])
    inside = sorted({int(x) for x in witness["inside"]})
    if not inside or not all(0 <= x < topo.ranks for x in inside):
        raise ModelError("witness", "the set must be a non-empty set of ranks")
    if [int(x) for x in witness["inside"]] != inside:
        raise ModelError("witness", "inside: the ranks must be listed once each, in order")
    links = family_links(topo, set(inside), family)
    index = {(l.src, l.dst): e for e, l in enumerate(topo.links)}
    own = []
    for pair in witness["links"]:
        src, dst = (int(x) for x in pair)
        if (src, dst) not in index:
            raise ModelError("witness", f"no link {src} -> {dst}")
        own.append(index[(src, dst)])
    groups = [int(g) for g in witness["groups"]]
    cap = cover_capacity(topo, links, groups, own)
    names = [topo.switches[g].name or f"switches[{g}]" for g in groups]
    if "group_names" in witness and witness["group_names"] != names:
        raise ModelError("witness", f"group_names: the certificate records {witness['group_names']}, the groups are "
                                    f"{names}")
    total, k, per_rank = demand(coll, inside, family)
    for what, recorded, computed in (("must", witness["must"], total), ("copies", witness["copies"], k),
                                     ("per_rank", witness["per_rank"], per_rank),
                                     ("capacity", witness["capacity"], cap)):
        if recorded != computed:
            raise ModelError("witness", f"{what}: the certificate records {recorded}, recomputed {computed}")
    if not cap:
        raise ModelError("witness", "the cover has no capacity")
    rounds = rounds_for(total, cap, k)
    if family in ("entry", "exit") and "hops" in witness:
        h, far = (last_hops if family == "entry" else first_hops)(topo, coll, inside)
        for what, recorded, computed in (("hops", witness["hops"], h), ("farthest", witness.get("farthest"), far)):
            if recorded != computed:
                raise ModelError("witness", f"{what}: the certificate records {recorded}, recomputed {computed}")
        rounds = max(rounds, -(-total // cap) + h)
    if family == "entry" and "spread" in witness:
        spread, fan = spread_rounds(topo, inside, cap, k, total)
        for what, recorded, computed in (("spread", witness["spread"], spread), ("fanout", witness.get("fanout"), fan)):
            if recorded != computed:
                raise ModelError("witness", f"{what}: the certificate records {recorded}, recomputed {computed}")
        rounds = max(rounds, -(-total // cap) + spread)
    if "rounds" in witness and witness["rounds"] != rounds:
        raise ModelError("witness", f"rounds: the certificate records {witness['rounds']}, recomputed {rounds}")
    return rounds


def explain_setcut(w: dict[str, Any]) -> str:
    """One line: why the witness's bound holds."""
    n = len(w["inside"])
    who = f"rank {w['inside'][0]}" if n == 1 else f"{n} ranks ({_short(w['inside'])})"
    through = ", ".join([*w["group_names"], *(f"{a}->{b}" for a, b in w["links"][:4])])
    if len(w["links"]) > 4:
        through += f", ... ({len(w['links'])} links)"
    them = "it" if n == 1 else "them"
    what = {"arrivals": f"{who} must receive {w['must']} in all; at most {w['capacity']} arrive at {them}",
            "departures": f"{who} must send {w['must']} in all; at most {w['capacity']} leave {them}",
            "entry": f"{w['must']} must enter {who}; at most {w['capacity']} cross in",
            "exit": f"{w['must']} must leave {who}; at most {w['capacity']} cross out"}[w["family"]]
    tail = ""
    plain = -(-w["must"] // w["capacity"])
    if w.get("spread") and w["rounds"] == plain + w["spread"] and w["rounds"] > rounds_for(w["must"], w["capacity"],
                                                                                          w["copies"]):
        tail = (f", and the last to enter reaches the {w['copies']} ranks that need it {w['spread']} round(s) later at "
                f"the soonest (one rank passes it to at most {w['fanout']} a round)")
    elif w.get("hops") and w["rounds"] == plain + w["hops"] and w["family"] == "entry":
        tail = f", and the last to enter is still {w['hops']} hop(s) from rank {w['farthest']}"
    elif w.get("hops") and w["rounds"] == plain + w["hops"]:
        tail = f", after rank {w['farthest']}'s share of each has gone {w['hops']} hop(s) to leave"
    elif w["copies"] >= 2 and w["rounds"] > plain:
        tail = (f", and one crossing in the {'last' if w['family'] == 'entry' else 'first'} step serves one of "
                f"the {w['copies']} ranks each needs")
    return f"{what} per round ({through}){tail}"


def _short(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}..{ranks[-1]}"
    if len(ranks) > 8:
        return ",".join(map(str, ranks[:8])) + ",..."
    return ",".join(map(str, ranks))

