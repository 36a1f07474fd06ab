"""Alltoall across nodes whose GPUs each have a NIC on their own rail (DGX H100, A100 pods): every byte that
leaves a node crosses exactly one NIC, on a rail chosen so that the NICs never wait for one another.

Where it applies: n >= 2 nodes of p ranks, every pair of a node linked (a switch), and every rank linked to
the rank of the same local index (its rail) in every other node (`pairwise._Layout`). The NIC cut then
bounds the time: a node sends (n - 1) p^2 pair blocks through its p NICs, (n - 1) p blocks per NIC each way
(`bounds.throughput`), and NVLink carries the hops before and after the NIC at a fraction of that.

Why the choice of rail matters in the run (`sweep.cost`, the checker's timed execution): a message holds its
sender's NIC and its receiver's NIC at once, each connection sends in its own step order, and the run serves
whichever message can leave first. With every NIC sending to the n - 1 other nodes, the NICs of one rail form
a complete directed graph, and on three nodes the run serves 0 -> 8 and 8 -> 0 together and leaves the third
NIC of the rail idle: 2/3 of the NIC's speed at one instance, 0.94 of the bound at 8 (`nccl_direct`, which
mixes the rails, 0.886 on h100 x 3). Two variants:

- **Rail classes** (`_classes`), where n >= 3 and n - 1 divides p: the p rails are cut into n - 1 classes of
  q = p / (n - 1), and the rails of class m carry only node a -> node a + m (mod n). Each NIC then sends to
  one NIC and receives from one: its rail's NICs form a permutation, which no order can pair badly. A block
  from (a, g) to (b, h), m = b - a, crosses on rail g if g is of class m (NIC first), else on rail h if h is
  (NIC last), else on the rail of class m whose index is g + h mod q (NVLink, NIC, NVLink). Each rail then
  carries p (its own) + (p - q) (to it) + (p - q)^2 / q (in turn) = p^2 / q blocks: the NIC bound's share.
- **Own rails** (`_own`, any n): every block crosses on its sender's rail (NIC first), then NVLink to its
  destination. On an even number of nodes the run pairs these NICs well (h100rail4, 4 nodes: 0.996 of the
  bound; on three 0.93, where the classes give 0.996).

Steps, not a list scheduler: the run holds each connection to its step order, so the order is written out.
Every NIC link sends its own GPU's blocks first (held from the start), then those NVLink brings it (each
relay FORWARD_LAG steps before its NIC hop), its GPU's block for its rail peer last (nothing to forward after
it); a block that arrives for another GPU is forwarded FORWARD_LAG steps later (not in the next step, which
the lowering would fuse into the receive: the NIC's receives would then wait on one NVLink peer's sends).
The blocks inside the node spread over the NIC's steps. One piece per pair (`PIECES`): the NVLink hops are
9x faster than the NIC, so the NIC starts at once and the tail is one forward; more pieces gain 0.1% (h100
x 3, 8 instances: 0.9959 / 0.9969 of the bound at 256 MiB with 1 / 2 pieces) and cost the sweep a run twice
as long per candidate.
"""

from __future__ import annotations

import itertools

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.nccl import _rounds
from smtcoll.synth.constructions.pairwise import _Layout

PIECES = 1  # per pair block (module docstring)
FORWARD_LAG = 2  # steps between a block's hops (the next step would be fused)


def rail_alltoall(topo: Topology, base: Collective) -> Schedule:
    """`synth --method rail_alltoall`: the rail classes where they apply, else every block through its own
    rail (module docstring); checked by the caller."""
    return rail_alltoalls(topo, base)[0]


def rail_alltoalls(topo: Topology, base: Collective) -> list[Schedule]:
    """The sweep's candidates: the rail classes where n >= 3 and n - 1 divides p (they never wait, so the own
    rails are not timed beside them), else the own rails."""
    if kind(base) != "alltoall":
        raise NotApplicable("the rail Alltoall is an Alltoall")
    lay = _Layout(topo)
    n, p = len(lay.members), len(lay.members[0])
    if n < 2:
        raise NotApplicable("one node (or every pair linked): `exchange` sends each pair straight")
    if n >= 3 and p % (n - 1) == 0:
        return [_classes(topo, base, lay)]
    return [_own(topo, base, lay)]


def _classes(topo: Topology, base: Collective, lay: _Layout) -> Schedule:
    """Rail classes (module docstring): rail x carries node a -> a + 1 + x // q only."""
    n, p = len(lay.members), len(lay.members[0])
    q = p // (n - 1)
    per_link = p * p // q  # messages a NIC link carries per piece
    coll = base.with_chunks(PIECES)
    pairs = _pairs(coll)
    steps: dict[int, list[Send]] = {}
    for x in range(p):
        m = 1 + x // q
        others = [g for g in range(p) if g // q != m - 1]  # local ranks whose rails carry other offsets
        order = [*((x, (x + k) % p) for k in range(1, p)),  # (source, destination) local ranks: NIC first,
                 *((g, x) for g in others),  # NIC last,
                 *((g, h) for g in others for h in others if (g + h) % q == x % q),  # in turn,
                 (x, x)]  # to the rail peer
        assert len(order) == per_link  # p + (p - q) + (p - q)^2 / q = p^2 / q
        for t in range(PIECES):
            for i, (g, h) in enumerate(order):
                nic = FORWARD_LAG + t * per_link + i  # the step of its NIC hop
                for a in range(n):
                    b = (a + m) % n
                    s, d = lay.members[a][g], lay.members[b][h]
                    path = [s, lay.members[a][x], lay.members[b][x], d]
                    path = path[(g == x):len(path) - (h == x)]
                    first = nic - (FORWARD_LAG if g != x else 0)
                    for hop, (u, v) in enumerate(itertools.pairwise(path)):
                        steps.setdefault(first + FORWARD_LAG * hop, []).append(Send(pairs[(s, d)][t], u, v))
    _inside(steps, lay, pairs, per_link)
    return _schedule(topo, coll, steps)


def _own(topo: Topology, base: Collective, lay: _Layout) -> Schedule:
    """Every block through its sender's rail (module docstring): slot j of every NIC (piece, destination
    local offset k with the rail peer last, node offset m innermost, so a NIC's links take turns)."""
    n, p = len(lay.members), len(lay.members[0])
    coll = base.with_chunks(PIECES)
    pairs = _pairs(coll)
    steps: dict[int, list[Send]] = {}
    slots = [(t, k, m) for t in range(PIECES) for k in [*range(1, p), 0] for m in range(1, n)]
    for j, (t, k, m) in enumerate(slots):
        for s in range(topo.ranks):
            b = (lay.node[s] + m) % n
            d = lay.members[b][(lay.local[s] + k) % p]
            r = lay.rail(s, b)
            steps.setdefault(j, []).append(Send(pairs[(s, d)][t], s, r))
            if d != r:
                steps.setdefault(j + FORWARD_LAG, []).append(Send(pairs[(s, d)][t], r, d))
    _inside(steps, lay, pairs, len(slots) // PIECES)
    return _schedule(topo, coll, steps)


def _inside(steps: dict[int, list[Send]], lay: _Layout, pairs: dict[tuple[int, int], list[int]],
            per_piece: int) -> None:
    """The blocks inside each node, offset k of piece t spread over that piece's `per_piece` NIC steps."""
    p = len(lay.members[0])
    for t in range(PIECES):
        for k in range(1, p):
            j = FORWARD_LAG + t * per_piece + k * per_piece // p
            for s in range(len(lay.node)):
                d = lay.peer(s, k)
                steps.setdefault(j, []).append(Send(pairs[(s, d)][t], s, d))


def _schedule(topo: Topology, coll: Collective, steps: dict[int, list[Send]]) -> Schedule:
    out = [Step(_rounds(topo, sends), sorted(sends, key=send_key)) for _, sends in sorted(steps.items())]
    return Schedule(topo, coll, out, name="rail_alltoall")


def _pairs(coll: Collective) -> dict[tuple[int, int], list[int]]:
    """(source, destination) -> the chunks of its block, piece by piece."""
    from smtcoll.synth.scale.translate import alltoall_shape

    pairs = alltoall_shape(coll)
    assert pairs is not None  # a built-in Alltoall (`kind` checked it)
    return pairs
