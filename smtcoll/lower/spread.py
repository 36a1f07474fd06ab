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

A rank with more peers than a channel has sending (or receiving) thread blocks, 32, spreads its peers too:
each connection goes to one of `groups` channels per instance, balanced per rank on both sides (mi250 x 3
Alltoall: 32 NIC peers and 3 xGMI ones per GCD, on 2 channels).
"""

from __future__ import annotations

from collections import defaultdict

from smtcoll.lower.ops import LOp


def peer_groups(ops: list[LOp], per_channel: int) -> int:
    """How many channels a rank's peers need: a channel has at most `per_channel` sending and as many
    receiving thread blocks on a rank, one per peer (mi250 x 3 Alltoall: 35 peers, so 2)."""
    sends: dict[int, set[int]] = defaultdict(set)
    recvs: dict[int, set[int]] = defaultdict(set)
    for op in ops:
        if op.type == "s":
            sends[op.rank].add(op.send)
            recvs[op.send].add(op.rank)
    most = max((len(x) for x in (*sends.values(), *recvs.values())), default=0)
    return max(1, -(-most // per_channel))


def fitted_segments(messages: int, per_tb: int, segments: int) -> int:
    """The channels a connection of `messages` needs when none may hold more than `per_tb` (at most
    `segments`, at least one)."""
    return max(1, min(segments, -(-messages // max(1, per_tb))))


def _peer_group(ops: list[LOp], groups: int) -> dict[tuple[int, int], int]:
    """(sender, receiver) -> its group of channels, 0..groups-1: each connection in turn where its sender's
    and its receiver's busier side has the fewest connections so far (a balanced split of every rank's
    peers on both sides, checked by the thread-block stage)."""
    pairs = sorted({(op.rank, op.send) for op in ops if op.type == "s"})
    out_load: dict[int, list[int]] = defaultdict(lambda: [0] * groups)
    in_load: dict[int, list[int]] = defaultdict(lambda: [0] * groups)
    group: dict[tuple[int, int], int] = {}
    for u, v in pairs:
        c = min(range(groups), key=lambda g: (max(out_load[u][g], in_load[v][g]), out_load[u][g] + in_load[v][g], g))
        out_load[u][c] += 1
        in_load[v][c] += 1
        group[(u, v)] = c
    return group


def spread(ops: list[LOp], segments: int, groups: int = 1, fitted: bool = False) -> None:
    """Set every operation's channel (`instance`, as the thread blocks use it) for `segments` runs per
    connection and the peers of a rank split over `groups` channels (`peer_groups`): instance i's
    connection u -> v in group g uses channels (i * groups + g) * segments + 0..segments-1. Operations must
    be unfused (a send's `partner` is its receive).

    `fitted`: a connection uses only the channels it needs to hold no more messages per thread block than
    the busiest connection's (`fitted_segments`), so a rank whose light connections would otherwise open
    as many thread blocks as its busiest waits for fewer thread blocks (depid names 128)."""
    if segments == 1 and groups == 1:
        return
    group = _peer_group(ops, groups) if groups > 1 else {}
    conns: dict[tuple[int, int, int], list[LOp]] = defaultdict(list)
    for op in ops:
        if op.type == "s":
            conns[(op.rank, op.send, op.instance)].append(op)
    per_tb = -(-max((len(c) for c in conns.values()), default=0) // segments)
    moved: set[int] = set()
    for key in sorted(conns):
        sends = sorted(conns[key], key=lambda o: o.time)
        base = (key[2] * groups + group.get((key[0], key[1]), 0)) * segments
        used = fitted_segments(len(sends), per_tb, segments) if fitted else segments
        for j, op in enumerate(sends):
            channel = base + j % used
            op.instance = channel
            moved.add(id(op))
            if op.partner is not None:
                op.partner.instance = channel
                moved.add(id(op.partner))
    for op in ops:
        if id(op) not in moved:
            op.instance *= segments * groups
