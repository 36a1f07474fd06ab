"""Stage 5b, thread blocks: per rank and instance, one sending thread block per peer and one receiving
thread block per peer (one per connection and FIFO), fused pairs, and local copies on their own."""

from __future__ import annotations

from collections import Counter, defaultdict

import attrs

from smtcoll.lower.ops import LOp
from smtcoll.lower.options import CannotLower
from smtcoll.msccl.runtime import MAX_TBS_PER_CHANNEL


@attrs.frozen
class Tb:
    instance: int
    send: int
    recv: int
    local: tuple[int, int] = (0, 0)


def tb_of(op: LOp) -> Tb:
    if op.peers is not None:
        return Tb(op.instance, *op.peers)
    if op.type == "s":
        return Tb(op.instance, op.send, -1)
    if op.type in ("r", "rrc"):
        return Tb(op.instance, -1, op.recv)
    return Tb(op.instance, -1, -1, op.local)


def assign_tbs(ops: list[LOp]) -> dict[int, list[tuple[Tb, list[LOp]]]]:
    """rank -> thread blocks in id order, each with its operations in step order."""
    groups: dict[int, dict[Tb, list[LOp]]] = defaultdict(lambda: defaultdict(list))
    for op in ops:
        groups[op.rank][tb_of(op)].append(op)
    out: dict[int, list[tuple[Tb, list[LOp]]]] = {}
    for rank, tbs in groups.items():
        for direction, peer_of in (("send", lambda t: t.send), ("receive", lambda t: t.recv)):
            per_channel = Counter(t.instance for t in tbs if peer_of(t) >= 0)
            if per_channel and max(per_channel.values()) > MAX_TBS_PER_CHANNEL:
                raise CannotLower(f"rank {rank} would {direction} on {max(per_channel.values())} connections in one "
                                  f"channel; the runtimes allow {MAX_TBS_PER_CHANNEL} {direction} thread blocks per channel")
        ordered = sorted(tbs, key=lambda t: (t.instance, t.send < 0, t.send, t.recv, t.local))
        listing = []
        for i, tb in enumerate(ordered):
            mine = sorted(tbs[tb], key=lambda o: o.time)
            for pos, op in enumerate(mine):
                op.tb, op.pos = i, pos
            listing.append((tb, mine))
        out[rank] = listing
    return out
