"""`hierforest`'s extras: late in-node transfers of a peer's piece on the busiest lanes, sent over the
receiving rank's own NIC lane by its peer instead (the peer holds that piece as its own node's piece).

Why: with every piece entering a node once, a rank's NIC lane carries C pieces while its node's busiest
lanes carry L piece times' worth (mi250 x2, C = 12: 37.5 against 56); the cut bound lets the NICs take a
little more. Each extra takes one piece off a busiest lane at the end of the schedule, where the drain is,
and puts it on the NIC lane, which is idle there. How many: the most e a rank such that its NIC lane, with
C + e pieces and one piece's time to spare for the last one to be forwarded, still ends no later than the
busiest lane, (C + e + 1) r <= L, r the NIC's time per piece in lane piece times (mi250 x2, C = 12: 4; C = 6,
L = 28: 1, the counts measured best in docs/benchmarks.md "mi250 x2 (session 11)"). A ReduceScatter (this
Allgather turned round) spares no piece: its NIC idles at the start while the node adds up the first
partial sums, which is that spare time already (mi250 x2, 2 instances: 0.918 -> 0.934 of the sweep's bound
at 256 MiB, 0.945 -> 0.948 at 1 GiB; never lower on chordring12-nic, ring8-nic or pairs8 x2).

The in-node schedule is kept as it is (the moved transfer is dropped in place): every other transfer keeps
its step, and the receiver holds the piece earlier than before, so every send it makes stays valid.
"""

from __future__ import annotations

import math
from fractions import Fraction

from smtcoll.model import Step, Topology

MARGIN = 4  # steps between the NIC send that replaces a transfer and that transfer's own step
# The finer candidate's in-node forwards go 2 steps after their receive, not 1: its pieces are half as large,
# so a hop's latency (Simple: 3.4 µs + the link's α) is as long as a message at 256 MiB, 4 instances; a
# step between lets the link carry another piece meanwhile. mi250 x2 Allgather, 4 instances, 256 MiB /
# 1 GiB: 0.852 / 0.952 of the sweep's bound with 1, 0.919 / 0.954 with 2, 0.930 / 0.948 with 3, 0.893 /
# 0.922 with 4 (docs/benchmarks.md "mi250 x2 (session 12)")
FORWARD_LAG = 2


def extras(sub: Topology, inner: list[Step], trees: int, c: int, ratio: Fraction,
           spare: int = 1) -> dict[tuple[int, int], int]:
    """(tree, local rank) -> the step of the NIC send that brings that tree's piece to that rank instead of
    its parent in the tree; `inner` is one node's schedule with `trees` trees per root, the first `c` of a
    root its own pieces, the others its peers' (brought over the NIC in steps 0..c-1); `ratio` is the NIC's
    time per piece in lane piece times; `spare` the NIC pieces' times kept free (module docstring). Empty
    when no extra fits."""
    p = sub.ranks
    load: dict[tuple[int, int], int] = {}
    for st in inner:
        for x in st.sends:
            load[(x.src, x.dst)] = load.get((x.src, x.dst), 0) + 1
    per_lane = {e: Fraction(v, sub.bandwidth(*e)) for e, v in load.items()}
    most = max(per_lane.values())
    count = max(0, math.floor(most / ratio) - c - spare)
    if not count:
        return {}
    # when each rank holds each tree's piece: its peer in the other node holds the same piece of its own
    # node's tree then (every node runs the same schedule)
    got = {(x.chunk, x.dst): s for s, st in enumerate(inner) for x in st.sends}
    busy = {b: set(range(c)) for b in range(p)}  # each NIC lane's slots: the peers' own pieces first
    taken = dict.fromkeys(range(p), 0)
    out: dict[tuple[int, int], int] = {}
    late_first = sorted(((-s, x.dst, x.chunk) for s, st in enumerate(inner) for x in st.sends
                         if x.chunk % trees >= c and per_lane[(x.src, x.dst)] == most))
    for neg, dst, chunk in late_first:
        if taken[dst] >= count or (chunk, dst) in out:
            continue
        b, j = divmod(chunk, trees)
        ready = got[(b * trees + (j - c) % c, dst)] + 1  # its peer holds the own node's piece after this
        at = next(t for t in range(ready, len(inner) + 1) if t not in busy[dst])
        if at + MARGIN > -neg:
            continue  # the NIC could not bring it well before the lane would have
        busy[dst].add(at)
        taken[dst] += 1
        out[(chunk, dst)] = at
    return out
