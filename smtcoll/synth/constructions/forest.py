"""Exact weighted tree packing: spanning trees whose load on every link is proportional to its speed, so
that Allgather, ReduceScatter and Allreduce reach the cut bound on links of unequal capacity (MI250's
1/2/4 xGMI lanes, AMD8's 5/6 weights). ForestColl's result (Zhao et al., "ForestColl: Efficient
Collective Communications on Heterogeneous Network Fabrics", 2024) built with Edmonds' branching theorem.

Capacities are integer units (the links' speeds over their greatest common divisor). With `q` the largest
ratio, over rank sets X, of the roots outside X to the units entering X (the cut bound of
`bounds.throughput`, in units), every root gets C trees and every unit carries at most M = ceil(C q) tree
edges. Edmonds' theorem (branchings with given root sets) says such trees exist exactly when, for every
nonempty X, the tree slots entering X are at least the trees whose ranks so far miss X; Lovász's proof of it
is the algorithm: grow each tree one link at a time, taking a link that keeps that condition. The condition
is kept for every one of the 2^N rank sets at once (numpy), so the packing never gets stuck and its busiest
unit carries M tree edges: the schedule's links are loaded C q / M of the way to the bound (1 when C q is a
whole number: MI250 Allgather C = 3, M = 7).

Allgather and Broadcast use the out-trees, ReduceScatter and Reduce the in-trees (the packing of the reversed
links), Allreduce that ReduceScatter followed by that Allgather; the list scheduler (`pipeline.py`) pipelines
them (an Allgather's a second time from the end, `pipeline.backward`: its end is where the timed run pays).
C has the best C q / M whose busiest connection holds at most `MESSAGES`
messages (`budget`), and among those the most trees: the depth of the trees is paid once per pipeline, so more, smaller
messages bring the time nearer the bound (mi250 Allgather at 1 GiB in the sweep's model: 0.83 of the bound
with 3 trees per root, 0.98 with 12). The lowering deals a connection of more than 32 messages round-robin
over channels (`lower/spread.py`).
The condition is listed for the 2^N sets up to `MAX_RANKS` ranks; beyond, and on machines whose NICs are
switch groups, it is checked by minimum cuts (`forest_cuts`) on one lane per NIC and other node
(`forest_wide`), up to `MAX_WIDE_RANKS` ranks. Switch groups inside a node are not part of the theorem's
capacity: `treepack` covers them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

from smtcoll.bounds.throughput import rates
from smtcoll.model import Collective, Link, Schedule, Send, Step, Topology
from smtcoll.msccl.runtime import MAX_NODES
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.forest_cuts import Slack
from smtcoll.synth.constructions.forest_cuts import ratio as min_cut_ratio
from smtcoll.synth.constructions.forest_wide import candidate_units, exact_unit, lane_rates, reverse, timed_steps, whole
from smtcoll.synth.constructions.pipeline import (
    Plan,
    backward,
    link_time,
    list_candidates,
    list_orders,
    schedule_transfers,
)

MAX_RANKS = 16  # 2^16 rank sets: a few MB of numpy arrays
MAX_WIDE_RANKS = 32  # by minimum cuts: mi250 x2 in about 10 CPU s a collective, mi250 x4 (64) over 300
MESSAGES = 32  # per connection that keeps one thread block per connection and instance (fused: 2 x 32 steps)
PER_THREAD_BLOCK = 28  # per thread block once a connection is spread over channels (the executor allows 64 steps)
CHANNELS = 32  # the runtime's channels (MAXCHANNELS), shared by the 8 instances the sweep tries at most
WAITED = 128  # thread blocks a rank can wait for (depid is an int8_t)
INSTANCES = 8  # the most instances the sweep lowers with
MAX_TREES = 32  # trees per root tried
# Broadcast and Reduce: each packed tree carries this many pieces at most (one root: its trees alone must
# pipeline; 30 trees on a DGX-1 pipeline 5 pieces each over 3-4 hops, 0.58 of the bound at 1 GiB, 16 each 0.96)
ROOTED_REPEAT = 16
MAX_OWNED = 4  # an Allreduce's addresses per rank, on average, that `owners` tries
SHARE_SLACK = Fraction(1, 50)  # a second count of trees may load the busiest links up to 2% more (`_counts`)


def units(topo: Topology) -> dict[tuple[int, int], int]:
    """Each link's speed in whole units (speeds over their greatest common divisor)."""
    r = rates(topo).link
    den = math.lcm(*(x.denominator for x in r))
    ints = [int(x * den) for x in r]
    g = math.gcd(*ints)
    return {(l.src, l.dst): v // g for l, v in zip(topo.links, ints, strict=True)}


class Sets:
    """Every rank set X as a bitmask, with the units entering it per link: the arrays of the condition."""

    def __init__(self, n: int, cap: dict[tuple[int, int], int]) -> None:
        import numpy as np

        self.masks = np.arange(1 << n, dtype=np.int64)
        inside = ((self.masks[:, None] >> np.arange(n)) & 1).astype(bool)
        self.enter = {e: inside[:, e[1]] & ~inside[:, e[0]] for e in cap}
        self.units = np.zeros(1 << n, dtype=np.int64)
        for e, c in cap.items():
            self.units += c * self.enter[e]
        self.size = inside.sum(axis=1)
        self.inside = inside


def _ratio(sets: Sets, roots: list[int]) -> Fraction:
    """max over X of (roots outside X) / (units entering X): the cut bound in trees per unit."""
    import numpy as np

    outside = np.zeros(len(sets.masks), dtype=np.int64)
    for r in roots:
        outside += ~sets.inside[:, r]
    outside[0] = 0  # the empty set: nothing must enter it
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(outside > 0, outside / np.maximum(sets.units, 1), 0.0)
    if bool(((outside > 0) & (sets.units == 0)).any()):
        raise NotApplicable("some rank cannot be reached")
    best = int(np.argmax(q))
    # exact at the floating-point argmax, then confirmed exactly against every set in integers
    ratio = Fraction(int(outside[best]), int(sets.units[best]))
    if bool((outside * ratio.denominator > sets.units * ratio.numerator).any()):
        ratio = max(Fraction(int(o), int(u)) for o, u in zip(outside, sets.units, strict=True) if o)
    return ratio


def pack(topo: Topology, roots: list[int], trees: int, per_unit: int) -> list[list[dict[int, int]]]:
    """`trees` spanning out-trees per root (rank -> parent), at most `per_unit` tree edges per unit of each
    link; raises NotApplicable when the cut condition does not hold at the start."""
    return pack_caps(topo.ranks, units(topo), roots, trees, per_unit)


class _SetSlack:
    """The condition kept for all 2^N rank sets at once (numpy): up to MAX_RANKS ranks."""

    def __init__(self, n: int, cap: dict[tuple[int, int], int], roots: list[int], trees: int,
                 per_unit: int, held: list[int]) -> None:
        import numpy as np

        self.sets = sets = Sets(n, cap)
        outside = np.zeros(len(sets.masks), dtype=np.int64)
        for r in roots:
            outside += ~sets.inside[:, r]
        self.slack = per_unit * sets.units - trees * outside  # tree slots entering X minus trees that must enter it
        self.slack[0] = 0
        self.held = held
        self.hit = self.slack[:0]

    def holds(self) -> bool:
        return int(self.slack.min()) >= 0

    def allows(self, t: int, u: int, v: int) -> bool:
        meets = (self.sets.masks & self.held[t]) != 0
        self.hit = self.sets.enter[(u, v)] & meets
        return not self.hit.any() or int(self.slack[self.hit].min()) >= 1

    def take(self) -> None:  # the link last allowed
        self.slack[self.hit] -= 1


def pack_caps(n: int, cap: dict[tuple[int, int], int], roots: list[int], trees: int,
              per_unit: int) -> list[list[dict[int, int]]]:
    """`pack` on integer capacities `cap` (units per link) over ranks 0..n-1: the rank sets listed up to
    MAX_RANKS ranks, minimum cuts beyond (`forest_cuts.Slack`, the same answers)."""
    left = {e: per_unit * c for e, c in cap.items()}
    out: dict[int, list[int]] = {v: [] for v in range(n)}
    for (u, v) in sorted(cap):
        out[u].append(v)
    full = (1 << n) - 1
    # all trees grow together, one link each in turn, from their shallowest ranks: no tree is left only
    # the long way round by the trees before it
    trees_at = [(i, root) for _ in range(trees) for i, root in enumerate(roots)]

    held = [1 << root for _, root in trees_at]
    check: _SetSlack | Slack
    if n <= MAX_RANKS:
        check = _SetSlack(n, cap, roots, trees, per_unit, held)
    else:
        check = Slack(n, left, held)
    if not check.holds():
        raise NotApplicable(f"{trees} trees per root do not fit {per_unit} per unit")
    depth = [{root: 0} for _, root in trees_at]
    parent: list[dict[int, int]] = [{} for _ in trees_at]
    growing = list(range(len(trees_at)))
    while growing:
        for t in growing:
            d = depth[t]
            cands = sorted((d[u], (per_unit * cap[(u, v)] - left[(u, v)]) / cap[(u, v)], u, v)
                           for u in d for v in out[u] if v not in d and left[(u, v)] > 0)
            for _, _, u, v in cands:
                if check.allows(t, u, v):
                    break
            else:  # Lovász: a feasible link always exists while the condition holds
                raise AssertionError(f"tree packing stuck at root {trees_at[t][1]}")
            if isinstance(check, _SetSlack):
                check.take()
            left[(u, v)] -= 1
            parent[t][v] = u
            d[v] = d[u] + 1
            held[t] |= 1 << v
        growing = [t for t in growing if held[t] != full]

    packed: list[list[dict[int, int]]] = [[] for _ in roots]
    for t, (i, _) in enumerate(trees_at):
        packed[i].append(parent[t])
    return packed


def budget(topo: Topology) -> int:
    return _budget(_neighbours(topo))


def _budget(neighbours: int) -> int:
    """The messages one connection may carry: the lowering spreads a longer connection over channels, and
    with 8 instances the thread blocks a rank waits for (instances x channels x neighbours, its receivers:
    the lowering drops the waits of a write on an earlier send that messages already imply, `lower/implied.py`)
    must stay within what depid can name."""
    spread = min(CHANNELS // INSTANCES, WAITED // (INSTANCES * max(1, neighbours)))
    return max(MESSAGES, PER_THREAD_BLOCK * spread)


def _neighbours(topo: Topology) -> int:
    return max(sum(1 for u in range(topo.ranks) if topo.bandwidth(u, v)) for v in range(topo.ranks))


def fits_nodes(topo: Topology, per_unit: int, factor: int) -> bool:
    """Does a rank's program fit the runtimes' MAX_NODES XML nodes at 8 instances? Its operations: a send or
    receive per tree edge on its links (at most `per_unit` per unit, `factor` times), and its thread blocks
    (at most 2 per neighbour and channel)."""
    return _fits(topo.ranks, units(topo), per_unit, factor)


def _fits(n: int, cap: dict[tuple[int, int], int], per_unit: int, factor: int) -> bool:
    busiest = max(sum(c for (u, v), c in cap.items() if r in (u, v)) for r in range(n))
    return INSTANCES * factor * per_unit * busiest + 2 * CHANNELS * _in_degree(n, cap) <= MAX_NODES


def _in_degree(n: int, cap: dict[tuple[int, int], int]) -> int:
    return max(sum(1 for (_, v) in cap if v == r) for r in range(n))


def wide(topo: Topology) -> bool:
    """Beyond the listed rank sets: more than MAX_RANKS ranks, or NIC switch groups (lanes instead)."""
    return topo.ranks > MAX_RANKS or bool(topo.switches)


def cut_ratio(n: int, cap: dict[tuple[int, int], int], roots: list[int]) -> Fraction:
    """The cut bound in trees per unit, the out-trees' and the in-trees' (the reversed links)."""
    if n <= MAX_RANKS:
        return max(_ratio(Sets(n, c), roots) for c in (cap, reverse(cap)))
    return max(min_cut_ratio(n, c, roots) for c in (cap, reverse(cap)))


def choose_wide(topo: Topology, roots: list[int], factor: int) -> tuple[int, int, dict[tuple[int, int], int], Fraction]:
    """`choose` on the lanes of `forest_wide` with a unit among `candidate_units`: (C, M, the capacities in
    units, C u q / M its share of the lanes' cut bound, q being that bound in trees per byte/µs). The best
    share within the budgets, then the most trees, then the coarsest unit."""
    speed = lane_rates(topo)
    n = topo.ranks
    exact = exact_unit(speed)
    q_true = cut_ratio(n, whole(speed, exact), roots) / exact  # roots per (byte/µs) entering the worst cut
    best: tuple[tuple[int, Fraction, int], Fraction, int, dict[tuple[int, int], int]] | None = None
    for unit in candidate_units(speed):
        cap = whole(speed, unit)
        try:
            q = cut_ratio(n, cap, roots)
        except NotApplicable:
            continue
        # messages a connection may carry spread over the channels of 8 instances; whether the rank's waits
        # fit depid is left to the lowering, which refuses such a program (the sweep then times fewer
        # instances): mi250 x2 Allgather, 6 trees per root, lowers at 8 where `budget` would allow 4
        widest, most = max(cap.values()), max(MESSAGES, PER_THREAD_BLOCK * (CHANNELS // INSTANCES))
        for c in range(1, MAX_TREES + 1):
            m = math.ceil(c * q)
            if factor * m * widest > most or not _fits(n, cap, m, factor):
                break
            share = c * unit * q_true / m
            # whole percent first: then the coarsest unit and the most trees (mi250 x2 Allgather in the
            # sweep's model, 8 instances at 1 GiB: 16 GB/s units, 6 trees per root 0.84 of the bound, the
            # share 0.964; 12.5 GB/s units 0.75 and 7.1 GB/s units 0.65 with shares of 0.968)
            key = (math.floor(share * 100), unit, c)
            if best is None or key > best[0]:
                best = (key, share, m, cap)
    if best is None:
        raise NotApplicable("no tree packing of the lanes fits the runtimes' limits")
    (_, _, c), share, m, cap = best
    return c, m, cap, share


def choose(topo: Topology, roots: list[int], factor: int) -> tuple[int, int, Fraction]:
    """(C trees per root, M per unit, their share of the bound C q / M): the best share whose busiest
    connection carries at most `budget` messages (`factor` tree edges per slot: 2 for Allreduce) and whose
    ranks fit the runtimes' XML nodes, and among those the most trees."""
    return _counts(topo, roots, factor)[0]


def _counts(topo: Topology, roots: list[int], factor: int) -> list[tuple[int, int, Fraction]]:
    """`choose`'s (C, M, share), then, when it differs, the most trees within the same limits whose share is
    at most SHARE_SLACK below the best: smaller messages shorten the pipeline's fill and drain, a lower share
    loads the busiest links beyond the bound; which wins depends on the size and the machine, so the sweep
    times both (amd8 ReduceScatter at 256 MiB, 8 instances: 27 trees, share 0.995, 0.94 of the bound; 32
    trees, share 0.982, 0.975)."""
    cap = units(topo)
    q = max(_ratio(Sets(t.ranks, units(t)), roots) for t in (topo, topo.reversed()))  # out-trees and in-trees
    widest = max(cap.values())
    most = budget(topo)
    best: tuple[int, int, Fraction] | None = None
    fitting: list[tuple[int, int, Fraction]] = []
    for c in range(1, MAX_TREES + 1):
        m = math.ceil(c * q)
        if (factor * m * widest > most or not fits_nodes(topo, m, factor)) and best is not None:
            break
        share = c * q / m
        fitting.append((c, m, share))
        if best is None or share >= best[2]:
            best = (c, m, share)
    assert best is not None
    more = [x for x in fitting if x[2] >= best[2] - SHARE_SLACK]
    return [best] if more[-1][0] == best[0] else [best, more[-1]]


def tree_counts(topo: Topology, base: Collective) -> list[int]:
    """The trees per root `forests` builds: `choose`'s, and the most trees of `_counts` where that differs
    (one count beyond MAX_RANKS ranks and on NIC switch groups: `choose_wide`, whose packing takes seconds)."""
    what = kind(base)
    if wide(topo) or what not in ("allgather", "reducescatter", "allreduce", "broadcast", "reduce"):
        return []
    roots = [base.root or 0] if what in ("broadcast", "reduce") else list(range(topo.ranks))
    if what == "allreduce":
        roots = owners(topo)
    return [c for c, _, _ in _counts(topo, roots, 2 if what == "allreduce" else 1)]


def forests(topo: Topology, base: Collective) -> list[Schedule]:
    """`forest`'s schedule, then those of the other counts of `tree_counts` (the sweep's candidates); for
    Broadcast and Reduce also each tree ROOTED_REPEAT times where that is more than fits at 8 instances
    (it lowers with fewer: ndv2 Broadcast at 1 GiB 0.95 of the bound at 1 instance, 0.91 with 8 repeats at 8)."""
    first = forest(topo, base)
    out = [first, *(forest(topo, base, c) for c in tree_counts(topo, base)[1:])]
    if kind(base) in ("broadcast", "reduce") and not wide(topo):
        most = forest(topo, base, repeat=ROOTED_REPEAT)
        if most.collective.chunk_factor > first.collective.chunk_factor:
            out.append(most)
    return out


def owners(topo: Topology) -> list[int]:
    """The roots of an Allreduce's trees, a rank as often as it owns addresses: every rank once, unless
    owning more on some ranks and fewer (or none) on others lowers the cut bound per address, q / roots.
    A rank that owns nothing receives its final values only (S, not the 2 (N-1)/N S of an owner), and a rank
    that owns more receives less of the others' sums, so the shares follow the cuts (the ladder of
    benchmarks/topologies/ladder10.toml 1.2x less per address; a DGX-1 with two links down, whose four
    five-lane ranks own 4.5x what the others do, 1.1x). The best fractional shares are an LP over the cuts
    (`_lp_shares`, up to MAX_RANKS ranks); their roundings to whole addresses, then a local search, pick the
    counts."""
    if wide(topo):
        cap = whole(lane_rates(topo), exact_unit(lane_rates(topo)))
        return _owners(topo.ranks, lambda roots: cut_ratio(topo.ranks, cap, roots), [[1] * topo.ranks])
    n = topo.ranks
    both = [Sets(t.ranks, units(t)) for t in (topo, topo.reversed())]  # the out-trees' cuts and the in-trees'

    def ratio(roots: list[int]) -> Fraction:
        return max(_ratio(sets, roots) for sets in both)

    ones = [1] * n
    roundings = _roundings(_lp_shares(both))
    searched = _owners(n, ratio, [ones, *roundings])
    # The cut bound per address is q / k; the packing carries C k / M addresses per slot of the busiest unit,
    # at most k / q (M = ceil(C q)): the candidates by their bound, until no later one can beat the best.
    scored = []
    for w in [ones, [searched.count(r) for r in range(n)], *roundings]:
        roots = [r for r in range(n) for _ in range(w[r])]
        try:
            scored.append((ratio(roots) / len(roots), w))
        except NotApplicable:
            continue
    best: tuple[Fraction, bool, int] | None = None
    weights = ones
    for per_root, w in sorted(scored, key=lambda t: (t[0], sum(t[1]))):
        if best is not None and 1 / per_root < best[0]:
            break
        roots = [r for r in range(n) for _ in range(w[r])]
        c, m, _ = choose(topo, roots, 2)
        key = (Fraction(c * len(roots), m), w == ones, -len(roots))  # every rank once, or fewer addresses, in ties
        if best is None or key > best:
            best, weights = key, w
    return [r for r in range(n) for _ in range(weights[r])]


def _lp_shares(both: list[Sets]) -> list[float]:
    """The shares x (summing to 1) that minimise z with x(ranks outside X) <= z units(X) for every rank set X
    of either direction: the cut bound of ownership in fractions (HiGHS)."""
    import numpy as np

    from smtcoll.bounds.lp import solve

    inside = both[0].inside[1:-1]  # neither the empty set nor all ranks
    n = inside.shape[1]
    cuts = [both[0].units] if all(np.array_equal(s.units, both[0].units) for s in both) else [s.units for s in both]
    rows = np.vstack([np.hstack([~inside, -units[1:-1, None]]) for units in cuts]).astype(float)
    res = solve(np.r_[np.zeros(n), 1.0], rows, np.zeros(len(rows)), np.r_[np.ones(n), 0.0][None, :], [1.0])
    if res.x is None:
        return [1.0 / n] * n
    return list(res.x[:n])


def _roundings(shares: list[float]) -> list[list[int]]:
    """Whole address counts near `shares` x W for W = 1 .. MAX_OWNED N (largest remainders), in lowest terms."""
    n = len(shares)
    out: list[list[int]] = []
    for total in range(1, MAX_OWNED * n + 1):
        exact = [x * total for x in shares]
        w = [math.floor(v) for v in exact]
        for r in sorted(range(n), key=lambda r: (w[r] - exact[r], r))[: total - sum(w)]:
            w[r] += 1
        g = math.gcd(*w)
        w = [v // g for v in w]
        if w not in out:
            out.append(w)
    return out


def _owners(n: int, ratio: Callable[[list[int]], Fraction], starts: list[list[int]]) -> list[int]:
    def per_root(w: list[int]) -> Fraction | None:
        roots = [r for r in range(n) for _ in range(w[r])]
        try:
            return ratio(roots) / len(roots)
        except NotApplicable:
            return None

    # the best start (fewest addresses among equals), then one address more or less on one rank at a time
    scored = [(c, sum(w), w) for w in starts if (c := per_root(w)) is not None]
    if not scored:
        raise NotApplicable("some rank cannot be reached")
    best, _, weights = min(scored, key=lambda t: (t[0], t[1]))
    most = max(MAX_OWNED, *weights)
    improved = True
    while improved:
        improved = False
        for r in range(n):
            for step in (-1, 1):
                w = list(weights)
                w[r] += step
                if not 0 <= w[r] <= most or not any(w):
                    continue
                cost = per_root(w)
                if cost is not None and cost < best:
                    best, weights, improved = cost, w, True
    return [r for r in range(n) for _ in range(weights[r])]


def forest(topo: Topology, base: Collective, trees: int | None = None, repeat: int | None = None) -> Schedule:
    """The packing's schedule; `trees` per root instead of `choose`'s (tests and benchmarks); Broadcast and
    Reduce: each tree `repeat` times (default: the most up to ROOTED_REPEAT that fit at 8 instances)."""
    what = kind(base)
    if what not in ("allgather", "reducescatter", "allreduce", "broadcast", "reduce"):
        raise NotApplicable("the exact tree packing covers Allgather, ReduceScatter, Allreduce, Broadcast and Reduce")
    if topo.ranks < 2:
        raise NotApplicable("one rank: nothing to send")
    if topo.ranks > MAX_WIDE_RANKS:
        raise NotApplicable(f"the exact tree packing takes minutes beyond {MAX_WIDE_RANKS} ranks")
    n = topo.ranks
    roots = [base.root or 0] if what in ("broadcast", "reduce") else list(range(n))
    if what == "allreduce":
        roots = owners(topo)
    factor = 2 if what == "allreduce" else 1
    if wide(topo):
        c, m, cap, _ = choose_wide(topo, roots, factor)
        if trees is not None:
            c, m = trees, math.ceil(trees * cut_ratio(n, cap, roots))
    else:
        cap = units(topo)
        if trees is None:
            c, m, _ = choose(topo, roots, factor)
        else:
            c, m = trees, math.ceil(trees * cut_ratio(n, cap, roots))

    # one root: every tree repeated, as many times as the runtimes' XML nodes allow (`ROOTED_REPEAT`)
    if what not in ("broadcast", "reduce") or wide(topo):
        repeat = 1
    elif repeat is None:
        repeat = max([1, *(r for r in range(2, ROOTED_REPEAT + 1) if fits_nodes(topo, m * r, factor))])
    lanes = None
    if wide(topo):
        speed = lane_rates(topo)
        lanes = Lanes(lanes_topology(topo, cap), lanes_topology(topo, whole(speed, exact_unit(speed))))
    outward = pack_caps(n, cap, roots, c, m) if what in ("allgather", "broadcast", "allreduce") else None
    inward = pack_caps(n, reverse(cap), roots, c, m) if what in ("reducescatter", "reduce", "allreduce") else None
    if what == "allreduce":
        assert outward is not None and inward is not None
        # ReduceScatter over the in-trees, then Allgather over the out-trees: each half in the order that
        # suits it (scheduled together, address by address, they timed 0.86 of the bound on mi250 where the
        # halves time 0.96). Address a = j * len(roots) + i: root entry i's j-th in-tree, and the out-tree
        # `_matched` gives it.
        k = len(roots)

        def address(st: Step, of: Callable[[int], int]) -> Step:
            return Step(st.rounds, sorted((Send((of(x.chunk) % c) * k + of(x.chunk) // c, x.src, x.dst)
                                           for x in st.sends), key=send_key))
        scatter = _scatter(topo, roots, inward, c, lanes)
        gather = _gather(topo, roots, outward, c, lanes, late=False)
        sums = _matched(roots, c, scatter, gather)
        steps = [*(address(st, lambda x: x) for st in scatter), *(address(st, sums.__getitem__) for st in gather)]
        return Schedule(topo, base.with_chunks(k * c), steps, name="forest")
    if repeat > 1:
        outward = None if outward is None else [trees * repeat for trees in outward]
        inward = None if inward is None else [trees * repeat for trees in inward]
        c *= repeat
    coll = base.with_chunks(c)
    if outward is not None:
        return Schedule(topo, coll, _gather(topo, roots, outward, c, lanes), name="forest")
    assert inward is not None
    return Schedule(topo, coll, _scatter(topo, roots, inward, c, lanes), name="forest")


def _matched(roots: list[int], c: int, scatter: list[Step], gather: list[Step]) -> dict[int, int]:
    """Allreduce: which of root entry i's sums (its in-trees' chunks i * c + j) each of its out-trees
    broadcasts: the sums in the order the ReduceScatter half completes them at the root, the out-trees in
    the order the Allgather half first sends them, paired in turn. Any of a root's sums may go down any of
    its out-trees; tree j with sum j would leave the sums completed first waiting while the first
    broadcasts wait for the sums completed last (the transposed schedule completes tree 0 last). mi250 at
    256 MiB, 8 instances: 0.9468 of the sweep's bound tree by tree, 0.9478 matched; amd8, dgx1 the same."""
    done: dict[int, int] = {}
    for t, st in enumerate(scatter):
        for x in st.sends:
            if x.dst == roots[x.chunk // c]:
                done[x.chunk] = t
    first: dict[int, int] = {}
    for t, st in enumerate(gather):
        for x in st.sends:
            first.setdefault(x.chunk, t)
    out: dict[int, int] = {}
    for i in range(len(roots)):
        sums = sorted(range(c), key=lambda j: (done.get(i * c + j, -1), j))
        trees = sorted(range(c), key=lambda j: (first.get(i * c + j, -1), j))
        out.update((i * c + t, i * c + j) for t, j in zip(trees, sums, strict=True))
    return out


def _plan(roots: list[int], trees: list[list[dict[int, int]]], c: int) -> Plan:
    """Every root's trees as broadcasts, tree j of every root before tree j + 1; chunk i * c + j for root
    entry i."""
    plan = Plan()
    for j in range(c):
        for i, owner in enumerate(roots):
            plan.broadcast(i * c + j, trees[i][j], owner)
    return plan


def _gather(topo: Topology, roots: list[int], outward: list[list[dict[int, int]]], c: int,
            lanes: Lanes | None = None, late: bool = True) -> list[Step]:
    """Allgather (Broadcast): the out-trees list-scheduled (with `lanes`: `_timed`); without lanes, with
    `late`, scheduled again from the end (`pipeline.backward`), kept unless it takes more steps. A list
    schedule's start is full anyway (every link's first transfers carry chunks its sender owns) and its end
    is ragged, where it costs: mi250 at 256 MiB in the sweep's model, 0.906 of the bound forward, 0.954
    backward, both 30 steps. Allreduce's Allgather half does not start full (it waits for the sums): it keeps
    the forward pass (backward, the ladder of benchmarks/topologies/ladder10.toml times 0.85 of the bound at
    1 GiB, forward 0.87)."""
    if lanes is not None:
        return _timed(topo, lanes, [_plan(roots, outward, c)], [])
    plan = _plan(roots, outward, c)
    forward = schedule_transfers(topo, plan, deep=True)
    if not late:
        return forward
    packed = backward(topo, plan, forward)
    return packed if len(packed) <= len(forward) else forward


class Lanes(NamedTuple):
    """The packing's links in its units (`cap`) and in the greatest unit that divides their speeds
    (`exact`, so that 1 / bandwidth is the time a chunk takes, in one scale)."""

    cap: Topology
    exact: Topology


def _timed(topo: Topology, lanes: Lanes, plans: list[Plan], transposed: list[Plan]) -> list[Step]:
    """The list schedules of `plans` in rounds on the units (`pipeline`) and in time (`timed_steps`), in
    every order `list_orders` gives, and those of `transposed` (plans on the reversed links) run backwards:
    the one whose links finish first in time (`link_time` on the exact speeds), in the rounds of `topo`."""
    found: list[list[Step]] = []
    for backwards, group in ((False, plans), (True, transposed)):
        cap, exact = (lanes.cap.reversed(), lanes.exact.reversed()) if backwards else lanes
        for plan in group:
            orders = list_orders(plan, True)
            made = [*list_candidates(cap, plan), *(timed_steps(exact, plan, o) for o in orders)]
            found += [[Step(st.rounds, sorted((Send(x.chunk, x.dst, x.src) for x in st.sends), key=send_key))
                       for st in reversed(m)] for m in made] if backwards else made
    best = min(found, key=lambda s: (link_time(lanes.exact, s), len(s)))
    return _rounds(topo, best)


def lanes_topology(topo: Topology, cap: dict[tuple[int, int], int]) -> Topology:
    """The packing's links with their capacities as lanes: a round of the list scheduler on it is the time
    a unit takes, so a NIC of 2 units carries 2 chunks a round where 4 xGMI lanes carry 28 (on `topo`'s
    lanes a NIC would count as fast as an xGMI lane, and the timed run of the lowered program, which sends a
    connection's chunks in step order, would wait for the late NIC chunks)."""
    return Topology(f"{topo.name}-lanes", topo.ranks, [Link(u, v, c) for (u, v), c in sorted(cap.items())])


def _rounds(topo: Topology, steps: list[Step]) -> list[Step]:
    """Each step with the rounds `topo`'s busiest link or switch group needs for it."""
    out = []
    for st in steps:
        load: dict[tuple[int, int], int] = {}
        for x in st.sends:
            load[(x.src, x.dst)] = load.get((x.src, x.dst), 0) + 1
        used: dict[int, int] = {}
        for k, v in load.items():
            for g in topo.switches_of(*k):
                used[g] = used.get(g, 0) + v
        rounds = max([*(-(-v // topo.bandwidth(*k)) for k, v in load.items()),
                      *(-(-v // topo.switches[g].bandwidth) for g, v in used.items())])
        out.append(Step(rounds, st.sends))
    return out


def _scatter(topo: Topology, roots: list[int], inward: list[list[dict[int, int]]], c: int,
             lanes: Lanes | None = None) -> list[Step]:
    """ReduceScatter (Reduce): the in-trees list-scheduled as they run (a rank sends its partial sum once
    every rank of its subtree sent to it), or the transpose of the Allgather (Broadcast) of the reversed
    links, its steps run backwards; the one whose links finish first (`link_time`), and on a tie the
    in-trees as they run (amd8 at 1 GiB in the sweep's model: 0.92 of the bound, the transpose 0.84 with the
    same link time; mi250 and dgx1: the transpose finishes its links first)."""
    direct = Plan()
    for j in range(c):
        for i, owner in enumerate(roots):
            direct.reduce(i * c + j, inward[i][j], owner)
    if lanes is not None:
        return _timed(topo, lanes, [direct], [_plan(roots, inward, c)])
    found = list_candidates(topo, direct)
    found += [[Step(st.rounds, sorted((Send(x.chunk, x.dst, x.src) for x in st.sends), key=send_key))
               for st in reversed(back)] for back in list_candidates(topo.reversed(), _plan(roots, inward, c))]
    return min(found, key=lambda s: (link_time(topo, s), len(s)))
