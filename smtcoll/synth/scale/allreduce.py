"""Allreduce whose reduce and broadcast phases overlap: schedules within 1.5x of the distance bound.

One address (C = 1) leaves no room for reduce-scatter + allgather, and "reduce to the centre, then
broadcast" costs twice the radius. Two constructions do better, both as a plan of sends whose order
is data flow only, scheduled as soon as possible (`_asap`):

- **Recursive doubling** on any topology that has the links r <-> r xor 2^i (hypercubes, and machines
  whose ranks pair up that way, like a100 x 2): log2(P) steps, each rank exchanging its partial sum.
- **Four arcs on a cycle**, composed over the dimensions of a torus: cut the cycle into arcs B0..B3;
  B0 reduces towards its end and B1 towards its start, and the two ends exchange (B2, B3 likewise);
  the pair sums travel to the outer ends of the pairs as copies (every rank on the way holds a part of
  them), where B1|B2 and B3|B0 exchange: those four ranks hold the total, which spreads as copies.
  That is the hypercube(2) pattern of recursive doubling on four super-nodes: about 3n/4 steps on a
  ring of n, 1.5x its distance bound n/2. Or **two arcs** that reduce to their centres from both sides,
  send the sums to their ends as copies, exchange across both boundaries and spread (the exact
  search's shape on ring:6); each dimension takes the plan with fewer steps. On a torus every rank runs
  the cycle of its first dimension, then, from its own row total on, the cycle of the next: the phases
  overlap across ranks.
- **Lines help each other** on a torus (a cycle of n = 4k + 3 alone needs 3k + 2 steps, and the odd-cycle
  bound leaves little room): once the earlier dimensions are summed, neighbouring lines of the next hold
  the same values, so a rank can take a total from the next line in one hop. The **two-junction plan**
  (`_two_junctions`) finishes every rank of its line by 3k + 1 but one, which the partner line, rotated
  by 3k + 2, serves (3k + 1 per such dimension: torus2d:5x7 7 steps, was 8); and every other line of the
  last dimension may run its plan rotated, with the total forwarded across as soon as a rank holds it
  (`totals.spread_totals`): torus2d:31x33 43 (was 47).

Every value a send carries is the sender's value when the step begins (the checker's semantics): a
send is scheduled after every send into its sender that the plan created before it, so the plan's
order is the data flow. The engine checks the result like any other schedule.
"""

from __future__ import annotations

import itertools

import attrs

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.scale import totals, translate


@attrs.define
class _Plan:
    """Sends (src, dst) in data-flow order, being built: each waits for every earlier send into its src."""

    ranks: int
    sends: list[tuple[int, int]] = attrs.field(factory=list)
    into: list[list[int]] = attrs.field(factory=list)  # rank -> indices of sends into it, in plan order
    deps: list[tuple[int, ...]] = attrs.field(factory=list)
    after: list[tuple[int, ...]] = attrs.field(factory=list)  # earlier sends into dst: arrive first
    copies: set[int] = attrs.field(factory=set)  # sends whose value contains the receiver's: applied first
    phase: int = 0  # index of the first send of the current phase

    def __attrs_post_init__(self) -> None:
        self.into.extend([] for _ in range(self.ranks))

    def start_phase(self) -> None:
        self.phase = len(self.sends)

    def send(self, src: int, dst: int, together: bool = False, copy: bool = False) -> None:
        """Strictly after the earlier sends into dst (a copy must not overtake what it contains);
        `together`: only after those of earlier phases (the values of this phase's together-sends
        into dst are disjoint: reductions from both sides); `copy`: the value contains dst's, so that in
        a step where dst also adds a disjoint value it must arrive first (the checker's order)."""
        self.deps.append(tuple(self.into[src]))
        first = self.phase
        self.after.append(tuple(i for i in self.into[dst] if i < first) if together else tuple(self.into[dst]))
        if copy:
            self.copies.add(len(self.sends))
        self.into[dst].append(len(self.sends))
        self.sends.append((src, dst))

    def exchange(self, u: int, v: int) -> None:
        """u and v send each other their values as they are now (disjoint: each adds the other's)."""
        self.everyone([u, v])

    def everyone(self, ranks: list[int]) -> None:
        """Every rank of `ranks` sends every other its value as it is now (pairwise disjoint: each adds the
        others'); the ranks of a cycle of 2 or 3, all adjacent."""
        now = {r: tuple(self.into[r]) for r in ranks}
        for a in ranks:
            for b in ranks:
                if a != b:
                    self.deps.append(now[a])
                    self.after.append(now[b])
                    self.into[b].append(len(self.sends))
                    self.sends.append((a, b))

    def chain(self, ranks: list[int], together: bool = False) -> None:
        for a, b in itertools.pairwise(ranks):
            self.send(a, b, together)


def _asap(topo: Topology, plan: _Plan) -> list[list[tuple[int, int]]] | None:
    """Steps of one round: each send at the first step after its dependencies arrived at its source
    (and after the earlier sends into its destination, and not before the earlier sends out of its
    destination: those carry the value the plan gave them) at which its link (and its switch groups) still
    have room; in each step the copies first, then by link. None when a send uses a pair that is not a
    link."""
    step_of: list[int] = []
    last_out = [0] * topo.ranks  # a send into v must not arrive before v sent what the plan had it send
    load: dict[tuple[int, int, int], int] = {}
    gload: dict[tuple[int, int], int] = {}
    out: list[list[tuple[bool, int, int]]] = []
    for i, ((u, v), deps, after) in enumerate(zip(plan.sends, plan.deps, plan.after, strict=True)):
        bw = topo.bandwidth(u, v)
        if bw <= 0:
            return None
        groups = topo.switches_of(u, v)
        s = max((step_of[d] + 1 for d in (*deps, *after)), default=last_out[v])
        s = max(s, last_out[v])
        while load.get((s, u, v), 0) >= bw or any(gload.get((s, g), 0) >= topo.switches[g].bandwidth for g in groups):
            s += 1
        load[(s, u, v)] = load.get((s, u, v), 0) + 1
        for g in groups:
            gload[(s, g)] = gload.get((s, g), 0) + 1
        step_of.append(s)
        last_out[u] = max(last_out[u], s)
        while len(out) <= s:
            out.append([])
        out[s].append((i not in plan.copies, u, v))
    # copies first in each step (they contain the receiver's value; an addition after them adds to it)
    return [[(u, v) for _, u, v in sorted(step)] for step in out]


def _four_arcs(plan: _Plan, cyc: list[int], sizes: tuple[int, int, int, int]) -> None:
    """The four-arc plan on the cycle `cyc` (ranks in cycle order, both directions links)."""
    n = len(cyc)
    a = sizes[0]
    b = a + sizes[1]
    c = b + sizes[2]
    at = lambda i: cyc[i % n]  # noqa: E731
    # level 1: B0 = [0, a) reduces rightwards to a-1, B1 = [a, b) leftwards to a; B2, B3 likewise
    plan.chain([at(i) for i in range(0, a)])
    plan.chain([at(i) for i in range(b - 1, a - 1, -1)])
    plan.chain([at(i) for i in range(b, c)])
    plan.chain([at(i) for i in range(n - 1, c - 1, -1)])
    plan.exchange(at(a - 1), at(a))
    plan.exchange(at(c - 1), at(c))
    # the pair sums travel, as copies, to the outer ends of the pairs
    plan.chain([at(i) for i in range(a - 1, -1, -1)])
    plan.chain([at(i) for i in range(a, b)])
    plan.chain([at(i) for i in range(c - 1, b - 1, -1)])
    plan.chain([at(i) for i in range(c, n)])
    # level 2: B1|B2 at (b-1, b) and B3|B0 at (n-1, 0); those four ranks hold the total
    plan.exchange(at(b - 1), at(b))
    plan.exchange(at(n - 1), at(0))
    # the total spreads as copies from 0 and b-1 over [0, b), from b and n-1 over [b, n)
    for lo, hi in ((0, b - 1), (b, n - 1)):
        mid = (lo + hi) // 2
        plan.chain([at(i) for i in range(lo, mid + 1)])
        plan.chain([at(i) for i in range(hi, mid, -1)])


def _two_arcs(plan: _Plan, cyc: list[int], h: int) -> None:
    """The two-arc plan: arcs [0, h) and [h, n) reduce to their centres from both sides at once, the
    sums travel as copies to both ends of each arc, the ends exchange across (h-1, h) and (n-1, 0),
    and the total spreads inwards: the exact search's shape on ring:6 (4 steps), about 3n/4 steps."""
    n = len(cyc)
    at = lambda i: cyc[i % n]  # noqa: E731
    for lo, hi in ((0, h - 1), (h, n - 1)):
        mid = (lo + hi) // 2
        plan.chain([at(i) for i in range(lo, mid + 1)], together=True)
        plan.chain([at(i) for i in range(hi, mid - 1, -1)], together=True)
    for lo, hi in ((0, h - 1), (h, n - 1)):
        mid = (lo + hi) // 2
        plan.chain([at(i) for i in range(mid, lo - 1, -1)])
        plan.chain([at(i) for i in range(mid, hi + 1)])
    plan.exchange(at(h - 1), at(h))
    plan.exchange(at(n - 1), at(0))
    for lo, hi in ((0, h - 1), (h, n - 1)):
        mid = (lo + hi) // 2
        plan.chain([at(i) for i in range(lo, mid + 1)])
        plan.chain([at(i) for i in range(hi, mid, -1)])


def _junction(plan: _Plan, cyc: list[int], shape: tuple[int, ...]) -> None:
    """The junction plan: rank j = cyc[0] between arc A = cyc[1..m] and arc B = the rest. j adds its value
    into A's first rank; each arc reduces to a centre from both ends (A's at c1, B's at c2) and the arc
    sum travels as copies to both ends of its arc; j takes A's sum (a copy: it contains j's own value)
    and adds B's in the same step, while A's last rank and B's first exchange theirs; the total then
    spreads from j and from that pair. On a ring of n = 4k + 1 this is 3k steps (the two- and four-arc
    plans take 3k + 1), 3k + 2 for 4k + 3: the least possible, found by an exact search of sets of
    arcs (docs/synth.md) for n <= 13."""
    m, c1, c2, s1, s2 = shape
    j, arc_a, arc_b = cyc[0], cyc[1:m + 1], cyc[m + 1:]
    plan.send(j, arc_a[0], together=True)
    for arc, c in ((arc_a, c1), (arc_b, c2)):
        plan.chain(arc[:c + 1], together=True)
        plan.chain(arc[c:][::-1], together=True)
    for arc, c in ((arc_a, c1), (arc_b, c2)):
        plan.chain(arc[c::-1])
        plan.chain(arc[c:])
    plan.start_phase()
    plan.send(arc_a[0], j, together=True, copy=True)
    plan.send(arc_b[-1], j, together=True)
    plan.exchange(arc_a[-1], arc_b[0])
    plan.send(j, arc_a[0])
    plan.send(j, arc_b[-1])
    for arc, split in ((arc_a, s1), (arc_b, s2)):
        plan.chain(arc[:split + 1])
        plan.chain(arc[:split:-1])


def _two_junctions(plan: _Plan, cyc: list[int], across: bool = False) -> int:
    """The two-junction plan on a cycle of n = 4k + 3 (k >= 1), for lines of a torus: arc X = cyc[2k+3..n-1]
    + cyc[0] (2k + 1 ranks) reduces to its centre x[k] from both ends and copies its sum back to both ends
    (time 2k); arc Y = cyc[1..2k+2] (2k + 2 ranks) reduces its halves to their inner ends, which exchange,
    and copies its sum out to its outer ends (time 2k + 1). In step 2k + 1 each end of Y takes Y's sum (a
    copy) and adds X's from its X neighbour: both hold the total, which spreads k ranks into Y from each end
    and into X, every rank of the cycle by 3k + 1 except X's centre, k + 1 from both (3k + 2, as the
    junction plan). On a torus the next line runs the plan rotated by 3k + 2, which puts one of its ends of
    Y beside this line's X centre, and its X centre beside this line's other end: each takes the total
    across in step 2k + 2 (`_two_junction_lines`; `across` leaves the centre's last hop out), so the lines
    finish in 3k + 1, below the 3k + 2 the odd-cycle bound leaves a single cycle (torus2d:5x7 7 steps,
    torus3d:5x5x7 10). Returns X's centre."""
    n = len(cyc)
    k = (n - 3) // 4
    y = cyc[1:2 * k + 3]
    x = cyc[2 * k + 3:] + cyc[:1]  # x[0] is next to y[-1], x[2k] = cyc[0] next to y[0]
    plan.chain(x[:k + 1], together=True)
    plan.chain(x[k:][::-1], together=True)
    plan.chain(y[:k + 1], together=True)
    plan.chain(y[k + 1:][::-1], together=True)
    plan.exchange(y[k], y[k + 1])
    plan.chain(x[k::-1])
    plan.chain(x[k:])
    plan.chain(y[k:0:-1])
    plan.chain(y[k + 1:-1])
    plan.start_phase()
    for end, inner, xend in ((y[0], y[1], x[-1]), (y[-1], y[-2], x[0])):
        plan.send(inner, end, together=True, copy=True)
        plan.send(xend, end, together=True)
    plan.chain(y[:k + 1])
    plan.chain(y[k + 1:][::-1])
    plan.chain([y[0], *x[k + 1:][::-1]] if across else [y[0], *x[k:][::-1]])  # the centre: k + 1 hops
    plan.chain([y[-1], *x[:k]])
    return x[k]


Shape = tuple[str, tuple[int, ...]]


def _cycle(plan: _Plan, cyc: list[int], shape: Shape) -> None:
    n = len(cyc)
    plan.start_phase()
    if n <= 3:  # every pair adjacent: everyone sends its own value to every other rank at once
        plan.everyone(cyc)
    elif shape[0] == "four":
        _four_arcs(plan, cyc, shape[1])  # type: ignore[arg-type]
    elif shape[0] == "junction":
        _junction(plan, cyc, shape[1])
    else:
        _two_arcs(plan, cyc, shape[1][0])


def _shapes(n: int) -> list[Shape]:
    """The plans to try on a cycle of n: every split into four arcs of q or q+1 ranks (q = n // 4),
    the two near-halves, and the junction plan with two arcs of m = (n - 1) // 2 and n - 1 - m ranks
    (its centres and splits as the exact search's optima have them on odd cycles)."""
    if n <= 3:
        return [("all", ())]
    q = n // 4
    four: list[Shape] = [("four", t) for t in itertools.product((q, q + 1), repeat=4) if sum(t) == n]
    m = (n - 1) // 2
    junction: Shape = ("junction", (m, max(0, m // 2 - 1), m // 2, (m - 1) // 2, max(0, (m - 2) // 2)))
    return four + [("two", (h,)) for h in sorted({n // 2, (n + 1) // 2})] + [junction]


def torus_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """The best cycle plan of each dimension of a ring or torus, one dimension after the other (each
    rank starts the next from its own total of the previous: the phases overlap across ranks)."""
    if len(coll.addresses) != 1 or not _every_rank_all(coll):
        return None
    g = translate.group_of(topo)
    if g is None or len(g.dims) > 3 or topo.name.startswith(("hypercube", "fully-connected")):
        return None
    dirs = set(g.directions)
    for k, n in enumerate(g.dims):
        unit = tuple(1 if i == k else 0 for i in range(len(g.dims)))
        minus = tuple((n - 1) if i == k else 0 for i in range(len(g.dims)))
        if n > 1 and (unit not in dirs or minus not in dirs):
            return None
    # each dimension's plan chosen alone (the fewest steps on its own cycles, the first on ties)
    chosen: dict[int, Shape] = {}
    for k, n in enumerate(g.dims):
        if n == 1:
            continue
        best: tuple[int, Shape] | None = None
        for shape in _shapes(n):
            plan = _Plan(topo.ranks)
            for line in _lines(g, k):
                _cycle(plan, line, shape)
            steps = _asap(topo, plan)
            if steps is not None and (best is None or len(steps) < best[0]):
                best = (len(steps), shape)
        if best is None:
            return None
        chosen[k] = best[1]
    result: list[list[tuple[int, int]]] | None = None
    for order in (sorted(chosen), sorted(chosen, reverse=True)):
        last = order[-1]
        # (dimensions that run the two-junction plan across lines, rotation of every other last line)
        variants: list[tuple[frozenset[int], int]] = [(frozenset(), s) for s in _shifts(g.dims[last])]
        across = frozenset(k for k in order[1:] if g.dims[k] >= 7 and g.dims[k] % 4 == 3)
        if across:
            variants.append((across, 0))
        for twos, shift in variants:
            plan = _Plan(topo.ranks)
            for i, k in enumerate(order):
                if k in twos:
                    _two_junction_lines(plan, g, k, order[:i])
                    continue
                for line in _lines(g, k):
                    o = shift * _parity(g, line[0], k) if k == last and len(order) > 1 else 0
                    _cycle(plan, line[o:] + line[:o], chosen[k])
            steps = _asap(topo, plan)
            if steps is not None:
                steps = totals.spread_totals(topo, coll, steps)
            if steps is not None and (result is None or len(steps) < len(result)):
                result = steps
    return None if result is None else _schedule(topo, coll, result)


def _two_junction_lines(plan: _Plan, g: translate.Group, k: int, before: list[int]) -> None:
    """Every line of dimension k (a cycle of 4k' + 3 >= 7) runs the two-junction plan, rotated by 3k' + 2 on
    the lines whose coordinates in the dimensions `before` (already summed: neighbouring lines across them
    hold the same values) have odd sum; each line's X centre takes the total as a copy from the rank beside
    it on its partner line, the next line across before[0] with the other parity, where an end of Y sits
    (`_two_junctions`)."""
    n = g.dims[k]
    shift = (3 * n - 1) // 4
    j, m = before[0], g.dims[before[0]]
    centres = []
    for line in _lines(g, k):
        o = shift * (sum(int(g.coords[line[0]][i]) for i in before) % 2)
        centres.append(_two_junctions(plan, line[o:] + line[:o], across=True))
    for c in centres:
        at = [int(x) for x in g.coords[c]]
        at[j] = at[j] + 1 if at[j] < m - 1 else at[j] - 1  # flips the parity (an odd m wraps to the same)
        plan.send(g.rank(at), c, copy=True)


def _shifts(n: int) -> tuple[int, ...]:
    """Rotations of the last dimension's plan on every other line: 0 (all alike) and, on an odd cycle of 5
    or more, a few quarter-ish offsets. With them a rank its own line serves last (3k + 2 steps on 4k + 3)
    is next to one that the neighbouring line served early, and the total crosses over (`totals`); alone
    (without the two-junction plan) one step less on torus2d:7x7 (9), 7x11 (12), 9x11 (13), two on 31x33."""
    if n < 5 or n % 2 == 0:
        return (0,)
    return (0, *sorted({s % n for s in (2, 3, 4, 5)}))


def _parity(g: translate.Group, r: int, k: int) -> int:
    """0 or 1: the parity of rank r's coordinates other than dimension k (neighbouring lines differ; on an
    odd cycle of lines two neighbours share it, each line still has a neighbour of the other parity)."""
    return sum(int(c) for i, c in enumerate(g.coords[r]) if i != k) % 2


def _lines(g: translate.Group, k: int) -> list[list[int]]:
    """The cycles of dimension k: for every coordinate with c_k = 0, the ranks c + t e_k in order."""
    out = []
    for r in range(g.ranks):
        if g.coords[r][k] != 0:
            continue
        base = [int(x) for x in g.coords[r]]
        line = []
        for t in range(g.dims[k]):
            base[k] = t
            line.append(g.rank(base))
        out.append(line)
    return out


def doubling_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """Recursive doubling wherever the ranks are a power of two and r <-> r xor 2^i are links."""
    p = topo.ranks
    if p < 2 or p & (p - 1) or not _every_rank_all(coll) or min(len(s) for s in coll.pre_sets) < 1:
        return None
    if len(coll.pre) != coll.chunks:
        return None
    plan = _Plan(p)
    bit = 1
    while bit < p:
        for r in range(p):
            if topo.bandwidth(r, r ^ bit) <= 0:
                return None
        for r in range(p):
            if r < r ^ bit:
                plan.exchange(r, r ^ bit)
        bit <<= 1
    addrs = coll.addresses
    if len(addrs) != 1:
        return None
    steps = _asap(topo, plan)
    return None if steps is None else _schedule(topo, coll, steps)


def folded_doubling_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """Recursive doubling for any rank count P (one address): the P - Q ranks above the largest power of
    two Q fold their values into ranks 0..P-Q-1 in one step, the Q ranks run recursive doubling, and the
    totals unfold in one step: log2(Q) + 2 steps wherever those pairs are links (a switch of one chunk
    per port per round: 8 steps for 72 ranks, bound 7). None for a power of two (`doubling_allreduce`)."""
    n = topo.ranks
    if n < 3 or not n & (n - 1) or not _every_rank_all(coll) or min(len(s) for s in coll.pre_sets) < 1:
        return None
    if len(coll.pre) != coll.chunks or len(coll.addresses) != 1:
        return None
    q = 1 << (n.bit_length() - 1)
    pairs = [(r, r - q) for r in range(q, n)] + [(r, r ^ b) for b in _bits(q) for r in range(q)]
    if any(topo.bandwidth(u, v) <= 0 or topo.bandwidth(v, u) <= 0 for u, v in pairs):
        return None
    plan = _Plan(n)
    for r in range(q, n):
        plan.send(r, r - q)
    for b in _bits(q):
        for r in range(q):
            if r < r ^ b:
                plan.exchange(r, r ^ b)
    plan.start_phase()
    for r in range(q, n):
        plan.send(r - q, r, copy=True)
    steps = _asap(topo, plan)
    return None if steps is None else _schedule(topo, coll, steps)


def _bits(q: int) -> list[int]:
    return [1 << i for i in range(q.bit_length() - 1)]


def _every_rank_all(coll: Collective) -> bool:
    return all(len(coll.post_sets[r]) == coll.chunks for r in range(coll.ranks))


def _schedule(topo: Topology, coll: Collective, steps: list[list[tuple[int, int]]]) -> Schedule:
    a = coll.addresses[0]
    return Schedule(topo, coll, [Step(1, [Send(a, u, v) for u, v in s]) for s in steps if s])
