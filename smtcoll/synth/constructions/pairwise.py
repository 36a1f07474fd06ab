"""Allgather, ReduceScatter and Allreduce as a pairwise exchange: where every rank has a link to every other
(a switch: a100, dgx2; a full mesh), each rank's data goes straight to its destination, cut into pieces and
sent in shifted rounds, the order the Alltoall `exchange` uses.

- Allgather: rank s sends each piece of its own block to s + k in slot k (k = 1 .. N-1).
- ReduceScatter: rank s sends its contribution to block d = s + k in slot k; d adds the N-1 arrivals (they
  carry disjoint partial sums: the checker's combining rule).
- Allreduce: the two back to back, address by address (the owner of an address reduces it, then sends the
  total to every other rank).

Every rank's out-port and in-port carry (N-1)/N of the buffer, the per-port bound of a switch, and in the
shifted order every port serves one piece at a time. Rings reach the same load but pass each piece N-1
times, one hop after another; through a switch port faster than one channel (a100: 300 GB/s against 40 per
channel) their 8 instances contend for the port and lose about a tenth (docs/benchmarks.md, "a100
re-run (session 5)"), while the direct sends, spread over two channels per connection, keep it busy.

The piece count follows `exchange`: about 256 pieces per rank, and more than 32 messages per connection so
that the lowering spreads each connection over two channels (at 32 or fewer it fuses a receive and a send
on one thread block, which serializes an Allreduce's two phases), at most `OPS_PER_LINK`.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.constructions.common import NotApplicable, kind
from smtcoll.synth.constructions.exchange import OPS_PER_LINK, PIECES_PER_RANK
from smtcoll.synth.constructions.pipeline import Plan, schedule_transfers

MAX_MESSAGES_PER_RANK = 4 * PIECES_PER_RANK
FUSED_LIMIT = 32  # messages per connection up to which the lowering fuses two connections on a thread block


def pairwise(topo: Topology, base: Collective) -> Schedule:
    """The shifted pairwise Allgather / ReduceScatter / Allreduce (module docstring), checked by the caller."""
    what = kind(base)
    if what not in ("allgather", "reducescatter", "allreduce"):
        raise NotApplicable("the pairwise exchange covers Allgather, ReduceScatter and Allreduce")
    n = topo.ranks
    if n < 2:
        raise NotApplicable("one rank has nothing to exchange")
    missing = next(((s, d) for s in range(n) for d in range(n) if s != d and not topo.has_link(s, d)), None)
    if missing is not None:
        raise NotApplicable(f"no link {missing[0]} -> {missing[1]}: the pairwise exchange needs every pair linked")
    per_conn = pieces_per_connection(n, phases=2 if what == "allreduce" else 1)
    if what == "allreduce":
        coll = base.with_chunks(n * per_conn // 2)
        plan = _allreduce(n, coll.chunk_factor)
    else:
        coll = base.with_chunks(per_conn)
        plan = _one_phase(n, per_conn, gather=what == "allgather")
    return Schedule(topo, coll, schedule_transfers(topo, plan), name="pairwise")


def pieces_per_connection(n: int, phases: int) -> int:
    """Messages per connection: about PIECES_PER_RANK per rank, a multiple of `phases` (each phase sends the
    same number), above the lowering's fusion limit while a rank sends at most MAX_MESSAGES_PER_RANK, at most
    OPS_PER_LINK."""
    per_phase = max(1, round(PIECES_PER_RANK / (phases * (n - 1))))
    unfused = FUSED_LIMIT // phases + 1
    if unfused * phases * (n - 1) <= MAX_MESSAGES_PER_RANK:  # beyond, the program's size would not pay
        per_phase = max(per_phase, unfused)
    per_phase = min(per_phase, OPS_PER_LINK // phases)
    return per_phase * phases


def _one_phase(n: int, c: int, gather: bool) -> Plan:
    """Allgather (rank s's block to every other rank) or ReduceScatter (every rank's share of block d to
    d), piece by piece, in shifted slots: s talks to s + k in slot k."""
    plan = Plan()
    for piece in range(c):
        for k in range(1, n):
            for s in range(n):
                d = (s + k) % n
                plan.add((s if gather else d) * c + piece, s, d)
    return plan


def _allreduce(n: int, c: int) -> Plan:
    """Addresses a of owner a % n, n at a time: each one reduced into its owner (shifted slots), then sent
    from the owner to every other rank (shifted slots) once all N-1 shares arrived."""
    plan = Plan()
    for first in range(0, c - c % n, n):
        into: dict[int, list[int]] = {d: [] for d in range(n)}
        for k in range(1, n):
            for s in range(n):
                d = (s + k) % n
                into[d].append(plan.add(first + d, s, d))
        for k in range(1, n):
            for s in range(n):
                plan.add(first + s, s, (s + k) % n, into[s])
    return plan
