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
Up to `MAX_RANKS` ranks (the 2^N sets) and on links only (switch groups are not part of the theorem's
capacity: `treepack` covers them).
"""

from __future__ import annotations

import math
from fractions import Fraction

from smtcoll.bounds.throughput import rates
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.msccl.runtime import MAX_NODES
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.pipeline import Plan, backward, link_time, list_candidates, schedule_transfers

MAX_RANKS = 16  # 2^16 rank sets: a few MB of numpy arrays
MESSAGES = 32  # per connection that keeps one thread block per connection and instance (fused: 2 x 32 steps)
PER_THREAD_BLOCK = 28  # per thread block once a connection is spread over channels (the executor allows 64 steps)
CHANNELS = 32  # the runtime's channels (MAXCHANNELS), shared by the 8 instances the sweep tries at most
WAITED = 128  # thread blocks a rank can wait for (depid is an int8_t)
INSTANCES = 8  # the most instances the sweep lowers with
MAX_TREES = 32  # trees per root tried


def units(topo: Topology) -> dict[tuple[int, int], int]:
    """Each link's speed in whole units (speeds over their greatest common divisor)."""
    r = rates(topo).link
    den = math.lcm(*(x.denominator for x in r))
    ints = [int(x * den) for x in r]
    g = math.gcd(*ints)
    return {(l.src, l.dst): v // g for l, v in zip(topo.links, ints, strict=True)}


class Sets:
    """Every rank set X as a bitmask, with the units entering it per link: the arrays of the condition."""

    def __init__(self, topo: Topology, cap: dict[tuple[int, int], int]) -> None:
        import numpy as np

        n = topo.ranks
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
    import numpy as np

    cap = units(topo)
    sets = Sets(topo, cap)
    n = topo.ranks
    outside = np.zeros(len(sets.masks), dtype=np.int64)
    for r in roots:
        outside += ~sets.inside[:, r]
    slack = per_unit * sets.units - trees * outside  # tree slots entering X minus trees that must enter it
    slack[0] = 0
    if int(slack.min()) < 0:
        raise NotApplicable(f"{trees} trees per root do not fit {per_unit} per unit")
    left = {e: per_unit * c for e, c in cap.items()}
    out: dict[int, list[int]] = {v: [] for v in range(n)}
    for (u, v) in sorted(cap):
        out[u].append(v)
    full = (1 << n) - 1
    # all trees grow together, one link each in turn, from their shallowest ranks: no tree is left only
    # the long way round by the trees before it
    trees_at = [(i, root) for _ in range(trees) for i, root in enumerate(roots)]

    held = [1 << root for _, root in trees_at]
    depth = [{root: 0} for _, root in trees_at]
    parent: list[dict[int, int]] = [{} for _ in trees_at]
    growing = list(range(len(trees_at)))
    while growing:
        for t in growing:
            meets = (sets.masks & held[t]) != 0
            d = depth[t]
            cands = sorted((d[u], (per_unit * cap[(u, v)] - left[(u, v)]) / cap[(u, v)], u, v)
                           for u in d for v in out[u] if v not in d and left[(u, v)] > 0)
            for _, _, u, v in cands:
                hit = sets.enter[(u, v)] & meets
                if not hit.any() or int(slack[hit].min()) >= 1:
                    break
            else:  # Lovász: a feasible link always exists while the condition holds
                raise AssertionError(f"tree packing stuck at root {trees_at[t][1]}")
            slack[hit] -= 1
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
    """The messages one connection may carry: the lowering spreads a longer connection over channels, and
    with 8 instances the thread blocks a rank waits for (instances x channels x neighbours, its receivers:
    the lowering drops the waits of a write on an earlier send that messages already imply, `lower/implied.py`)
    must stay within what depid can name."""
    spread = min(CHANNELS // INSTANCES, WAITED // (INSTANCES * max(1, _neighbours(topo))))
    return max(MESSAGES, PER_THREAD_BLOCK * spread)


def _neighbours(topo: Topology) -> int:
    return max(sum(1 for u in range(topo.ranks) if topo.bandwidth(u, v)) for v in range(topo.ranks))


def fits_nodes(topo: Topology, per_unit: int, factor: int) -> bool:
    """Does a rank's program fit the runtimes' MAX_NODES XML nodes at 8 instances? Its operations: a send or
    receive per tree edge on its links (at most `per_unit` per unit, `factor` times), and its thread blocks
    (at most 2 per neighbour and channel)."""
    cap = units(topo)
    busiest = max(sum(c for (u, v), c in cap.items() if r in (u, v)) for r in range(topo.ranks))
    return INSTANCES * factor * per_unit * busiest + 2 * CHANNELS * _neighbours(topo) <= MAX_NODES


def choose(topo: Topology, roots: list[int], factor: int) -> tuple[int, int, Fraction]:
    """(C trees per root, M per unit, their share of the bound C q / M): the best share whose busiest
    connection carries at most `budget` messages (`factor` tree edges per slot: 2 for Allreduce) and whose
    ranks fit the runtimes' XML nodes, and among those the most trees."""
    cap = units(topo)
    q = max(_ratio(Sets(t, units(t)), roots) for t in (topo, topo.reversed()))  # out-trees and in-trees
    widest = max(cap.values())
    most = budget(topo)
    best: tuple[int, int, Fraction] | None = None
    for c in range(1, MAX_TREES + 1):
        m = math.ceil(c * q)
        if (factor * m * widest > most or not fits_nodes(topo, m, factor)) and best is not None:
            break
        share = c * q / m
        if best is None or share >= best[2]:
            best = (c, m, share)
    assert best is not None
    return best


def owners(topo: Topology) -> list[int]:
    """The roots of an Allreduce's trees, a rank as often as it owns addresses: every rank once, unless
    owning more on some ranks and fewer (or none) on others lowers the cut bound per address, q / roots.
    A rank that owns nothing receives its final values only (S, not the 2 (N-1)/N S of an owner), so a
    weak rank can leave the reduction to others (a local search over 0..4 addresses per rank from one each:
    mi250 and amd8 keep one each; the ladder of benchmarks/topologies/ladder10.toml 1.2x less per address)."""
    both = [Sets(t, units(t)) for t in (topo, topo.reversed())]  # the out-trees' cuts and the in-trees'
    n = topo.ranks

    def per_root(w: list[int]) -> Fraction:
        roots = [r for r in range(n) for _ in range(w[r])]
        return max(_ratio(sets, roots) for sets in both) / len(roots)

    weights = [1] * n
    best = per_root(weights)
    improved = True
    while improved:
        improved = False
        for r in range(n):
            for step in (-1, 1):
                w = list(weights)
                w[r] += step
                if not 0 <= w[r] <= 4 or not any(w):
                    continue
                try:
                    cost = per_root(w)
                except NotApplicable:
                    continue
                if cost < best:
                    best, weights, improved = cost, w, True
    return [r for r in range(n) for _ in range(weights[r])]


def forest(topo: Topology, base: Collective, trees: int | None = None) -> Schedule:
    """The packing's schedule; `trees` per root instead of `choose`'s (tests and benchmarks)."""
    what = kind(base)
    if what not in ("allgather", "reducescatter", "allreduce", "broadcast", "reduce"):
        raise NotApplicable("the exact tree packing covers Allgather, ReduceScatter, Allreduce, Broadcast and Reduce")
    if topo.ranks > MAX_RANKS:
        raise NotApplicable(f"the exact tree packing checks all 2^N rank sets: at most {MAX_RANKS} ranks")
    if topo.switches:
        raise NotApplicable("switch groups bound traffic beyond single links (use treepack)")
    if topo.ranks < 2:
        raise NotApplicable("one rank: nothing to send")
    n = topo.ranks
    roots = [base.root or 0] if what in ("broadcast", "reduce") else list(range(n))
    if what == "allreduce":
        roots = owners(topo)
    if trees is None:
        c, m, _ = choose(topo, roots, 2 if what == "allreduce" else 1)
    else:
        c, m = trees, math.ceil(trees * max(_ratio(Sets(t, units(t)), roots) for t in (topo, topo.reversed())))

    outward = pack(topo, roots, c, m) if what in ("allgather", "broadcast", "allreduce") else None
    inward = pack(topo.reversed(), roots, c, m) if what in ("reducescatter", "reduce", "allreduce") else None
    if what == "allreduce":
        assert outward is not None and inward is not None
        # ReduceScatter over the in-trees, then Allgather over the out-trees: each half in the order that
        # suits it (scheduled together, address by address, they timed 0.86 of the bound on mi250 where the
        # halves time 0.96). Address a = j * len(roots) + i: root entry i's j-th trees.
        k = len(roots)

        def address(st: Step) -> Step:
            return Step(st.rounds, sorted((Send((x.chunk % c) * k + x.chunk // c, x.src, x.dst) for x in st.sends),
                                          key=send_key))
        halves = [*_scatter(topo, roots, inward, c), *_gather(topo, roots, outward, c, late=False)]
        steps = [address(st) for st in halves]
        return Schedule(topo, base.with_chunks(k * c), steps, name="forest")
    coll = base.with_chunks(c)
    if outward is not None:
        return Schedule(topo, coll, _gather(topo, roots, outward, c), name="forest")
    assert inward is not None
    return Schedule(topo, coll, _scatter(topo, roots, inward, c), name="forest")


def _plan(roots: list[int], trees: list[list[dict[int, int]]], c: int) -> Plan:
    """Every root's trees as broadcasts, tree j of every root before tree j + 1; chunk i * c + j for root
    entry i."""
    plan = Plan()
    for j in range(c):
        for i, owner in enumerate(roots):
            plan.broadcast(i * c + j, trees[i][j], owner)
    return plan


def _gather(topo: Topology, roots: list[int], outward: list[list[dict[int, int]]], c: int,
            late: bool = True) -> list[Step]:
    """Allgather (Broadcast): the out-trees list-scheduled, then, with `late`, scheduled again from the end
    (`pipeline.backward`), kept unless it takes more steps. A list schedule's start is full anyway (every
    link's first transfers carry chunks its sender owns) and its end is ragged, where it costs: mi250 at
    256 MiB in the sweep's model, 0.906 of the bound forward, 0.954 backward, both 30 steps. Allreduce's
    Allgather half does not start full (it waits for the sums): it keeps the forward pass (backward, the
    ladder of benchmarks/topologies/ladder10.toml times 0.85 of the bound at 1 GiB, forward 0.87)."""
    plan = _plan(roots, outward, c)
    forward = schedule_transfers(topo, plan, deep=True)
    if not late:
        return forward
    packed = backward(topo, plan, forward)
    return packed if len(packed) <= len(forward) else forward


def _scatter(topo: Topology, roots: list[int], inward: list[list[dict[int, int]]], c: int) -> list[Step]:
    """ReduceScatter (Reduce): the in-trees list-scheduled as they run (a rank sends its partial sum once
    every rank of its subtree sent to it), or the transpose of the Allgather (Broadcast) of the reversed
    links, its steps run backwards; the one whose links finish first (`link_time`), and on a tie the
    in-trees as they run (amd8 at 1 GiB in the sweep's model: 0.92 of the bound, the transpose 0.84 with the
    same link time; mi250 and dgx1: the transpose finishes its links first)."""
    direct = Plan()
    for j in range(c):
        for i, owner in enumerate(roots):
            direct.reduce(i * c + j, inward[i][j], owner)
    found = list_candidates(topo, direct)
    found += [[Step(st.rounds, sorted((Send(x.chunk, x.dst, x.src) for x in st.sends), key=send_key))
               for st in reversed(back)] for back in list_candidates(topo.reversed(), _plan(roots, inward, c))]
    return min(found, key=lambda s: (link_time(topo, s), len(s)))
