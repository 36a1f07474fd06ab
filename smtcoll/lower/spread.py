"""Stage 5c, spreading: a long schedule's messages over more channels, so that no thread block holds
more steps than the runtimes allow (the executor 64, the legacy runtime 256: `MSCCL_MAX_NUM_STEPS`).

A connection (sender, receiver, channel) is one FIFO and at most one thread block per side uses it
(docs/msccl-xml.md, 1.11). Its messages, in time order, are dealt round-robin: message j goes to channel
`instance * segments + j % segments` on both sides, so the sender's and the receiver's message orders agree
on every channel, and every channel carries its share of the connection from the start (contiguous runs
left the later runs' channels idle until their first message, and a relay's forwards waited on them:
mi250's forest Allgather with 96 chunks, 8 instances, 0.58 of the bound in the sweep's model with runs,
0.83 dealt). Local copies stay on the instance's first channel. Fused operations
pair two connections on one thread block, so spreading runs on an unfused program.
"""

from __future__ import annotations

from collections import defaultdict

from smtcoll.lower.ops import LOp


def spread(ops: list[LOp], segments: int) -> None:
    """Set every operation's channel (`instance`, as the thread blocks use it) for `segments` runs per
    connection; operations must be unfused (a send's `partner` is its receive)."""
    if segments == 1:
        return
    conns: dict[tuple[int, int, int], list[LOp]] = defaultdict(list)
    for op in ops:
        if op.type == "s":
            conns[(op.rank, op.send, op.instance)].append(op)
    moved: set[int] = set()
    for key in sorted(conns):
        sends = sorted(conns[key], key=lambda o: o.time)
        for j, op in enumerate(sends):
            channel = key[2] * segments + j % segments
            op.instance = channel
            moved.add(id(op))
            if op.partner is not None:
                op.partner.instance = channel
                moved.add(id(op.partner))
    for op in ops:
        if id(op) not in moved:
            op.instance *= segments
