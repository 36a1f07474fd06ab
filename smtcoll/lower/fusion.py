"""Stage 5a, fusion: a receive and the send that forwards its value in the next step become one
`rcs`, `rrcs` or `rrs` on a thread block that pairs a send peer with a receive peer."""

from __future__ import annotations

from collections import Counter, defaultdict

from smtcoll.lower.ops import Loc, LOp
from smtcoll.msccl.program import RECV_TYPES
from smtcoll.msccl.runtime import MAX_STEPS

MAX_FUSED_STEPS = min(MAX_STEPS.values())  # a fused thread block must fit every runtime's step limit


def fuse(ops: list[LOp], capacity: int) -> list[LOp]:
    """Fuse a receive with the send that forwards the received value in the next step: `r`+`s` -> `rcs`,
    `rrc`+`s` -> `rrcs`, or `rrs` when the sum lives in scratch and nothing else ever reads it.

    The forward then leaves as soon as the value arrives, one step early: sound because it is the last
    write of that location before the send. Both operations must share a thread block, so a rank's
    send peer p and receive peer q are paired (greedily, most fusable forwards first) into one
    thread block (send=p, recv=q) holding every send to p and every receive from q. To stay free of
    deadlock with bounded FIFOs, a pair is used only when no step moves more than half a FIFO on either
    connection (a send then never waits for a receive its own thread block has not reached)."""
    per_step: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)  # (src, dst) -> step -> messages
    writes: dict[tuple[int, Loc], list[LOp]] = defaultdict(list)
    reads: dict[tuple[int, Loc], list[LOp]] = defaultdict(list)
    arrivals: dict[tuple[int, int, Loc], list[LOp]] = defaultdict(list)
    for op in ops:
        if op.type == "s":
            per_step[(op.rank, op.send)][op.time[0]] += 1
        if op.type in ("s", "rrc", "cpy") and op.src is not None:
            reads[(op.rank, op.src)].append(op)
        if op.type in ("r", "rrc", "cpy") and op.dst is not None:
            writes[(op.rank, op.dst)].append(op)
            if op.type != "cpy":
                arrivals[(op.rank, op.time[0], op.dst)].append(op)
    light = {conn for conn, steps in per_step.items() if max(steps.values()) * 2 <= capacity}
    candidates: dict[tuple[int, int, int], list[tuple[LOp, LOp]]] = defaultdict(list)
    for op in ops:
        if op.type not in ("r", "rrc") or op.dst is None:
            continue
        key = (op.rank, op.dst)
        step = op.time[0]
        if any(w is not op and w.time[0] == step and w.time > op.time for w in writes[key]):
            continue  # not the last write of the step
        later = [x for x in reads[key] if x.time > op.time]
        if not later or later[0].type != "s" or later[0].time[0] != step + 1:
            continue
        fwd = later[0]
        if fwd.partner is None or fwd.partner.dst is None:
            continue  # a send always has its receive (storage pairs them); nothing to fuse otherwise
        first = min(arrivals.get((fwd.send, step + 1, fwd.partner.dst), []), key=lambda x: x.time, default=None)
        if first is not fwd.partner:
            continue  # it arrives early, so it must stay the first of that step's arrivals at that location
        if (op.rank, fwd.send) not in light or (op.recv, op.rank) not in light:
            continue
        candidates[(op.rank, fwd.send, op.recv)].append((op, fwd))
    # pair peers, most fusable forwards first
    send_pair: dict[tuple[int, int], int] = {}  # (rank, send peer) -> receive peer of its thread block
    recv_pair: dict[tuple[int, int], int] = {}
    sends = Counter((op.rank, op.send) for op in ops if op.type == "s")
    recvs = Counter((op.rank, op.recv) for op in ops if op.type in ("r", "rrc"))
    for (rank, p, q), pairs in sorted(candidates.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if sends[(rank, p)] + recvs[(rank, q)] - len(pairs) > MAX_FUSED_STEPS:
            continue  # the pair's thread block would hold both connections' operations: more than a runtime runs
        if (rank, p) not in send_pair and (rank, q) not in recv_pair:
            send_pair[(rank, p)], recv_pair[(rank, q)] = q, p
    dropped: set[int] = set()
    for (rank, p), q in sorted(send_pair.items()):
        for recv, fwd in candidates[(rank, p, q)]:
            assert recv.dst is not None  # candidates are receives into a location
            key = (recv.rank, recv.dst)
            others = [x for x in reads[key] if x is not fwd and x.time > recv.time]
            others += [w for w in writes[key] if w.time > recv.time]
            if recv.type == "r":
                recv.type = "rcs"
            elif key[1][0] == "s" and not others:
                recv.type, recv.dst = "rrs", None
            else:
                recv.type = "rrcs"
            recv.send = p
            target = fwd.partner
            assert target is not None
            target.partner = recv
            dropped.add(id(fwd))
    for op in ops:
        if op.type == "s" and (op.rank, op.send) in send_pair:
            op.peers = (op.send, send_pair[(op.rank, op.send)])
        elif op.type in RECV_TYPES and (op.rank, op.recv) in recv_pair:
            op.peers = (recv_pair[(op.rank, op.recv)], op.recv)
    kept = [op for op in ops if id(op) not in dropped]
    # a receive follows its message's send time; chains of fused forwards move several of them
    final: dict[int, tuple[int, ...]] = {}

    def time_of(op: LOp) -> tuple[int, ...]:
        if id(op) not in final:
            if op.type in RECV_TYPES and op.partner is not None:
                final[id(op)] = (op.time[0], 2, *time_of(op.partner))
            else:
                final[id(op)] = op.time
        return final[id(op)]

    for op in sorted(kept, key=lambda o: o.time[0]):
        time_of(op)
    for op in kept:
        op.time = final[id(op)]
    return kept
