"""One-address Allreduce on 2^j identical nodes whose GPUs form squares (mi250): three arrivals in the first
step, then recursive doubling across the NICs.

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

The engine checks the schedule like every other.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.scale.allreduce import _schedule
from smtcoll.synth.scale.windows_allreduce import _shape, _xor_blocks


def diagonal_allreduce(topo: Topology, coll: Collective) -> Schedule | None:
    """The plan of the module docstring, or None where the machine is not of its form (a power of two of
    nodes and of squares per node, every GPU reaching every GPU of the other nodes)."""
    shape = _shape(topo, coll)
    if shape is None:
        return None
    n, p, linked, into = shape
    if n & (n - 1) or set(into) != set(range(p)) or any(set(v) != set(range(p)) for v in into.values()):
        return None
    blocks = _xor_blocks(topo, p, linked)
    if blocks is None or len(blocks[0]) != 4 or len(blocks) & (len(blocks) - 1):
        return None
    m = len(blocks)

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
    return _schedule(topo, coll, [sorted(s) for s in steps])
