"""One-address Allreduce on identical nodes whose GPUs form squares (mi250): three arrivals in the first
step, then doubling across the NICs.

The blocks plan (`windows_allreduce`) sums each square [a, b, c, d] (a-b, c-d, a-c, b-d links) in 2 steps
while the NICs wait, then doubles windows of squares across the NICs: 2 + log2(4n) steps on mi250 (x 8: 7).
Here the first step uses both: a GPU adds its two square neighbours over the links and, over its NIC, the
contribution of its square's *diagonal* GPU in the partner node (node xor 1). Label a rank by its node, its
square and its place in the square (two bits: a-b is bit 0, a-c bit 1): the ranks form the group Z_2^k and
every send of the plan is a translation of it. After step 1 a rank x holds x + A with
A = {0, e0, e1, e0 + e1 + n0} (n0: node bit 0), four contributions. Each later step adds, over the NICs,
the set of rank x + d for one d of a basis of V = <the node bits, the square bits + n0>; A's four elements lie
in the four cosets of V (modulo V they are 0, e0, e1, e0 + e1), so A + V is all of Z_2^k and every addition
is disjoint. Every d moves to another node (its node bits are not zero), so each is a NIC link, one send out
and one in per GPU and step. Steps: 1 + log2(n) + log2(squares per node): mi250 x 8 6 (reach bound 4), x 4 5.

Any node count (`_windows`): the M = n * m squares in a cyclic order (positions i; `_order`, so that the
offsets the plan uses never join two squares of one node), a GPU of place k at i takes its square's sides and,
over its NIC, the diagonal place k xor 3 at i + 1. Every later send keeps the place, so the four places are
four copies of one plan over the positions, and a GPU at i holding the positions i + D (in each place, shifted
by 1 for the diagonal's) adds D' - w from i - w: disjoint where D and D' - w are, whatever the places' shifts.
Steps 2.. sum groups of 2^b consecutive positions (2b, 4 or 8, by recursive doubling: xor partners), so that
all GPUs of a place in a group hold its sum, and the direct plan of `windows_allreduce` over the M / 2^b
groups with the 2^b positions as its labels builds every window: 1 + b + ceil(log2(M / 2^b)) steps where
that plan splits evenly (mi250 x 5 and x 7: 6, was 7; x 3: 5, was 6); where its split at the largest power
of two needs more receivers than a group has, another split (mi250 x 15: 15 groups of 4, 10 + 5: 8 steps).

The engine checks the schedule like every other.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.scale.allreduce import _asap, _Plan, _schedule
from smtcoll.synth.scale.windows_allreduce import Round, _build, _order, _raw, _shape, _xor_blocks


def diagonal_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """The shorter of the two plans of the module docstring (the xor plan on ties), or None where the
    machine is not of their form (GPU squares, every GPU reaching every GPU of the other nodes)."""
    shape = _shape(topo, coll)
    if shape is None:
        return None
    n, p, linked, into = shape
    if set(into) != set(range(p)) or any(set(v) != set(range(p)) for v in into.values()):
        return None
    blocks = _xor_blocks(topo, p, linked)
    if blocks is None or len(blocks[0]) != 4:
        return None
    best = None
    for steps in (_xor(n, p, blocks, linked), _windows(topo, n, p, blocks)):
        if steps is not None and (best is None or len(steps) < len(best)):
            best = steps
    return None if best is None else _schedule(topo, coll, best)


def _xor(n: int, p: int, blocks: list[list[int]], linked: set[tuple[int, int]]) -> list[list[tuple[int, int]]] | None:
    """The recursive-doubling plan (2^j nodes and squares per node), as steps."""
    m = len(blocks)
    if n & (n - 1) or m & (m - 1):
        return None

    def rank(node: int, square: int, place: int) -> int:
        return node * p + blocks[square][place]

    every = [(a, q, g) for a in range(n) for q in range(m) for g in range(4)]
    first = [(rank(a, q, g ^ e), rank(a, q, g)) for a, q, g in every for e in (1, 2)]
    first += [(rank(a ^ 1, q, g ^ 3), rank(a, q, g)) for a, q, g in every]
    # the basis of V: each node bit, and each square bit with node bit 0 (so that it crosses nodes too)
    basis = [(1 << i, 0) for i in range(n.bit_length() - 1)] + [(1, 1 << i) for i in range(m.bit_length() - 1)]
    steps = [first] + [[(rank(a ^ da, q ^ dq, g), rank(a, q, g)) for a, q, g in every] for da, dq in basis]
    if any((u, v) not in linked for step in steps for u, v in step):
        return None
    return [sorted(s) for s in steps]


def _windows(topo: Topology, n: int, p: int, blocks: list[list[int]]) -> list[list[tuple[int, int]]] | None:
    """The plan over a cyclic order of the squares (module docstring), as steps: the fewest over groups of
    2, 4 or 8 positions and both ways of `_build` to split; None when no group has a direct plan and an
    order."""
    v = n * len(blocks)
    best = None
    for bits in (1, 2, 3):
        size = 1 << bits
        if v % size or v == size:
            continue
        labels = list(range(size))
        for halve in (True, False):
            rounds = _build(v // size, labels, dict.fromkeys(labels, labels), halve)
            if rounds is None or (best is not None and 1 + bits + len(rounds) >= len(best)):
                continue
            steps = _grouped(topo, n, p, blocks, bits, rounds)
            if steps is not None and (best is None or len(steps) < len(best)):
                best = steps
    return best


def _grouped(topo: Topology, n: int, p: int, blocks: list[list[int]], bits: int, rounds: list[Round],
             ) -> list[list[tuple[int, int]]] | None:
    """Step 1, then the positions summed in groups of 2^bits by recursive doubling, then `rounds` of the
    direct plan over the groups (label = position within the group); None when no order of the squares
    keeps every offset across nodes."""
    v, size = n * len(blocks), 1 << bits
    offsets = {1} | {1 << b for b in range(bits)} | {(size * w + g - h) % v for rnd in rounds for g, h, w in rnd}
    order = _order(n, len(blocks), sorted(offsets | {v - w for w in offsets}))
    if order is None:
        return None

    def rank(i: int, k: int) -> int:
        a, q = order[i % v]
        return a * p + blocks[q][k]

    every = [(i, k) for i in range(v) for k in range(4)]
    first = [(rank(i, k ^ e), rank(i, k)) for i, k in every for e in (1, 2)]
    first += [(rank(i + 1, k ^ 3), rank(i, k)) for i, k in every]
    groups = [[(rank(i ^ (1 << b), k), rank(i, k)) for i, k in every] for b in range(bits)]
    later = [[(rank(size * (j - w) + h, k), rank(size * j + g, k)) for j in range(v // size) for g, h, w in rnd
              for k in range(4)] for rnd in rounds]
    plan = _Plan(topo.ranks)
    for sends in (first, *groups, *later):
        held = {r: tuple(plan.into[r]) for r in range(topo.ranks)}  # every send of a round: the values before it
        for src, dst in sends:
            _raw(plan, src, dst, held[src], held[dst])
    return _asap(topo, plan)
