"""One-address Allreduce on nodes whose GPUs share a few NICs: one lane per NIC, windows of nodes grown
over the lanes, then copies inside.

`windows_allreduce` lets every GPU that a NIC reaches receive a window each round; where a NIC is shared
(one switch group for the traffic of several GPUs: pcie4slow's one NIC for 4 GPUs, shared2nic8's two for 8,
dualplane8's one per half) those windows queue at the NIC, a round each, and the plan ends at 2-3x the
reach bound. Here each NIC carries one window a round:

1. the node sums, by recursive doubling where the xor partners are links, else a reduce to a centre and a
   copy back (`windows_allreduce._summed`), or where a node's GPU count is not a power of two (nvl36's 36 on
   one NVSwitch) by recursive doubling with the GPUs above a power of two folded in and out (`_folded_sums`,
   the plain GPUs folded so that the receivers hold the sum first): every GPU holds its node's sum S_a;
2. a *lane* per NIC: a receiving GPU g behind it that also sends through it to the g of every other node,
   and a *plain* GPU h that sends through it too and keeps S_a. Node a's g holds the window
   W_w(a) = S_a + S_(a-1) + ... + S_(a-w+1) (nodes mod n); a round adds W_w(a - w) from the g of node a - w
   (w doubles), or S_(a-w) from the h of node a - w (w + 1): disjoint windows, for any n. The shortest
   sequence of doublings and +1 reaches n in log2(n) rounds plus one per further 1-bit of n (pcie4slow x 5:
   1, 2, 4, 5). Each node sends and receives one value a round per NIC, which is what the NIC carries;
   every lane runs the same sequence, so every lane's g ends with the total;
3. the total spreads as copies along a breadth-first tree from the lanes' g.

pcie4slow x 5: 2 + 3 + 2 = 7 steps (the windows plan 9); nvl36 x 3: 6 + 2 + 1 = 9 (the phases of the
engine 12: no other plan applied to 36 GPUs a node); the plan is scheduled as soon as possible
(`allreduce._asap`, which keeps every switch group within its bandwidth) and checked by the engine.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.scale.allreduce import _asap, _Plan, _schedule
from smtcoll.synth.scale.windows_allreduce import _raw, _shape, _summed


def lanes_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """The schedule of the module docstring for a one-address Allreduce on nodes with shared NICs, or None
    where no GPU shares a NIC (the windows plan serves those) or no lane has a plain GPU."""
    shape = _shape(topo, coll, least=2)
    if shape is None:
        return None
    n, p, linked, _ = shape
    lanes = _lanes(topo, n, p, linked)
    if not lanes:
        return None
    found = []
    for summed in _node_sums(topo, n, p, linked):
        steps = _plan_steps(topo, n, p, linked, lanes, summed)
        if steps is not None:
            found.append(steps)
    for top in (False, True):  # folded node sums: the plain GPUs folded first (their lanes start on time)
        folded = _folded_sums(topo, n, p, linked, _fold_order(p, lanes, top))
        if folded is not None:
            steps = _plan_steps(topo, n, p, linked, lanes, folded)
            if steps is not None:
                found.append(steps)
    if not found:
        return None
    return _schedule(topo, coll, min(found, key=len))  # the first of the shortest


def _plan_steps(topo: Topology, n: int, p: int, linked: set[tuple[int, int]], lanes: list[tuple[int, int]],
                plan: _Plan) -> list[list[tuple[int, int]]] | None:
    """Steps 2 and 3 of the module docstring after the node sums of `plan`, scheduled as soon as possible."""
    sizes = [1]
    for double in _sequence(n):
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}  # the values as the round begins
        w = sizes[-1]
        for a in range(n):
            b = (a - w) % n
            for g, h in lanes:
                src = b * p + (g if double else h)
                _raw(plan, src, a * p + g, held[src], held[a * p + g])
        sizes.append(2 * w if double else w + 1)
    plan.start_phase()
    tree = _broadcast(topo, p, sorted(g for g, _ in lanes))
    if tree is None:
        return None
    for base in range(0, n * p, p):
        for child, par in tree:
            plan.send(base + par, base + child, copy=True)
    return _asap(topo, plan)


def _sequence(n: int) -> list[bool]:
    """Rounds from W_1 to W_n: True doubles, False adds one (the bits of n after the first, most
    significant first: a 1-bit doubles then adds one)."""
    out: list[bool] = []
    for bit in bin(n)[3:]:
        out.append(True)
        if bit == "1":
            out.append(False)
    return out


def _lanes(topo: Topology, n: int, p: int, linked: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """(g, h) per shared NIC of node 0 (module docstring), the same in every node as composed; [] where some
    NIC is not shared or lacks such GPUs. A NIC is the switch groups common to every link from the other
    nodes into a GPU (its in-key) or out of it (its out-key); GPUs with the same non-empty key share it."""
    def key(links: list[tuple[int, int]]) -> frozenset[int]:
        common: set[int] | None = None
        for u, v in links:
            gs = set(topo.switches_of(u, v))
            common = gs if common is None else common & gs
        return frozenset(common or ())

    if not any(len(g.dsts) > 1 and max(g.dsts) < p and min(g.srcs) >= p for g in topo.switches):
        return []  # no switch group brings values from other nodes into several GPUs of node 0: no shared NIC
    others = [b for b in range(n) if b != 0]
    in_key = {v: key([(b * p + u, v) for b in others for u in range(p) if (b * p + u, v) in linked]) for v in range(p)}
    out_key = {u: key([(u, b * p + v) for b in others for v in range(p) if (u, b * p + v) in linked])
               for u in range(p)}
    nics: dict[frozenset[int], list[int]] = {}
    for v in range(p):
        if in_key[v]:
            nics.setdefault(in_key[v], []).append(v)
    if not nics or any(len(gs) < 2 for gs in nics.values()):
        return []
    lanes: list[tuple[int, int]] = []
    used_out: set[frozenset[int]] = set()

    def reaches(u: int, v: int) -> bool:  # u of every node to v of every other
        return all((b * p + u, a * p + v) in linked for a in range(n) for b in range(n) if a != b)

    for gs in sorted(nics.values()):
        g = next((g for g in gs if out_key[g] and out_key[g] not in used_out and reaches(g, g)), None)
        if g is None:
            return []
        # the plain GPU sends through the same NIC (its out-key): a round carries g's window or h's sum, not both
        h = next((h for h in range(p) if h != g and out_key[h] == out_key[g] and reaches(h, g)), None)
        if h is None:
            return []
        used_out.add(out_key[g])
        lanes.append((g, h))
    if any(h == g2 for _, h in lanes for g2, _ in lanes):
        return []  # a plain GPU must keep its node's sum: not a lane's receiver
    return lanes


def _broadcast(topo: Topology, p: int, holders: list[int]) -> list[tuple[int, int]] | None:
    """(child, parent) in round order: a copy from the holders to every GPU of node 0, each round every holder
    sending to as many new GPUs as its links and switch groups carry in one round (a port of one chunk a
    round: doubling, 1 -> 2 -> 4, where a breadth-first tree has one GPU send to all its neighbours in
    turn); None if some GPU is not reached."""
    have = list(holders)
    order: list[tuple[int, int]] = []
    while len(have) < p:
        load: dict[tuple[int, int], int] = {}
        gload: dict[int, int] = {}
        new: list[int] = []
        for u in have:
            for v in range(p):
                if v in have or v in new or topo.bandwidth(u, v) <= load.get((u, v), 0):
                    continue
                groups = topo.switches_of(u, v)
                if any(gload.get(g, 0) >= topo.switches[g].bandwidth for g in groups):
                    continue
                load[(u, v)] = load.get((u, v), 0) + 1
                for g in groups:
                    gload[g] = gload.get(g, 0) + 1
                order.append((v, u))
                new.append(v)
        if not new:
            return None
        have += new
    return order


def _node_sums(topo: Topology, n: int, p: int, linked: set[tuple[int, int]]) -> list[_Plan]:
    """Plans in which every GPU gets its node's sum: `windows_allreduce._summed`'s, and one per ordered
    factorization p = r_1 * ... * r_k whose groups are linked: in level i the GPUs that differ only in
    digit i (mixed radix) all send each other their values (disjoint: each adds the others'). Where a GPU's
    port carries several chunks a round, fewer, wider levels are shorter (dualplane8: 4 x 2 in 2 steps, an
    NVSwitch port of 3 a round, where recursive doubling takes 3)."""
    plans = [plan] if (plan := _summed(topo, n, p, linked)) is not None else []
    for radices in _factorizations(p):
        if len(radices) == (p - 1).bit_length() and all(r == 2 for r in radices):
            continue  # recursive doubling: `_summed`'s
        groups = _digit_groups(p, radices)
        if any((u, v) not in linked for level in groups for grp in level for u in grp for v in grp if u != v):
            continue
        plan = _Plan(topo.ranks)
        for level in groups:
            for base in range(0, n * p, p):
                for grp in level:
                    plan.everyone([base + r for r in grp])
        plan.start_phase()
        plans.append(plan)
    return plans


def _factorizations(p: int) -> list[tuple[int, ...]]:
    """The ordered factorizations of p into factors >= 2 (p itself first)."""
    if p == 1:
        return [()]
    return [(f, *rest) for f in range(p, 1, -1) if p % f == 0 for rest in _factorizations(p // f)]


def _digit_groups(p: int, radices: tuple[int, ...]) -> list[list[list[int]]]:
    """Per level i, the groups of local GPUs whose mixed-radix digits differ only in digit i."""
    out = []
    stride = 1
    for r in radices:
        level = [[base + k * stride for k in range(r)] for base in range(p) if (base // stride) % r == 0]
        out.append(level)
        stride *= r
    return out



def _fold_order(p: int, lanes: list[tuple[int, int]], top: bool) -> list[int]:
    """The node's GPUs, the ones to fold last: the top GPUs (`top`), or first the plain GPUs of the lanes
    from the last, then the other GPUs from the top. A folded GPU holds its node's sum a step after the
    core, so a lane whose receiver is folded starts its windows a step late (nvl36 x 3: 10 steps, 9 with
    the plain GPUs folded: those send their sums a round after the receivers)."""
    if top:
        return list(range(p))
    plain = [h for _, h in reversed(lanes)]
    rest = [g for g in range(p - 1, -1, -1) if g not in plain]
    return [*reversed(rest), *reversed(plain)]


def _folded_sums(topo: Topology, n: int, p: int, linked: set[tuple[int, int]], order: list[int]) -> _Plan | None:
    """Node sums for a node of p GPUs that is not a power of two: the p - q GPUs at the end of `order` (q the
    largest power of two below p) add their values into the first p - q, the first q run recursive doubling
    over their positions in `order`, and the sums go back as copies (`allreduce.folded_doubling_allreduce`
    inside every node). On a port of one chunk a round that is log2(q) + 2 steps, where a reduce to a centre
    and a copy back take twice a tree's depth (nvl36's 36 GPUs: 7 against 12). None where p is a power of
    two (`_summed`'s recursive doubling) or a pair it needs is not a link."""
    q = 1 << (p.bit_length() - 1)
    if p < 3 or q == p:
        return None
    bits = [1 << i for i in range(q.bit_length() - 1)]
    pairs = [(order[e], order[e - q]) for e in range(q, p)] + [(order[r], order[r ^ b]) for b in bits for r in range(q)]
    if any((u, v) not in linked or (v, u) not in linked for u, v in pairs):
        return None
    plan = _Plan(topo.ranks)
    for base in range(0, n * p, p):
        for e in range(q, p):
            plan.send(base + order[e], base + order[e - q])
    for b in bits:
        for base in range(0, n * p, p):
            for r in range(q):
                if r < r ^ b:
                    plan.exchange(base + order[r], base + order[r ^ b])
    plan.start_phase()
    for base in range(0, n * p, p):
        for e in range(q, p):
            plan.send(base + order[e - q], base + order[e], copy=True)
    plan.start_phase()
    return plan
