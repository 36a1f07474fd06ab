"""Connections: one FIFO per (sender, receiver, channel), matched purely by order (docs/msccl-format.md, "Connections").

For every channel below `nchannels`, a thread block with a send peer p registers (me -> p, chan) and one
with a receive peer q registers (q -> me, chan). The k-th sending transmission of the sending thread block
is received by the k-th receiving transmission of the receiving one, so: one sending and one receiving
thread block per connection, equal numbers of messages, equal `cnt` pair by pair.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from smtcoll.check.transmissions import Transmission
from smtcoll.msccl.program import Finding

Conn = tuple[int, int, int]  # (sender rank, receiver rank, channel)
TbKey = tuple[int, int]  # (rank, index of the thread block in the rank's list)


@attrs.frozen
class Connections:
    """The thread blocks that registered each connection (more than one is a `duplicate-connection`)."""

    senders: dict[Conn, list[TbKey]]
    receivers: dict[Conn, list[TbKey]]


def connect(gpus: Sequence[tuple[int, Sequence[tuple[int, int, int, int, int, list[Transmission]]]]],
            nchannels: int) -> tuple[Connections, list[Finding]]:
    """`gpus`: (rank, [(tb index, tb id, send, recv, chan, transmissions)]). Returns the connections and the
    findings about them (duplicate-connection, unmatched-send, unmatched-recv, count-mismatch)."""
    senders: dict[Conn, list[TbKey]] = {}
    receivers: dict[Conn, list[TbKey]] = {}
    info: dict[TbKey, tuple[int, list[Transmission]]] = {}
    for rank, tbs in gpus:
        for index, tb_id, send, recv, chan, trans in tbs:
            info[(rank, index)] = (tb_id, trans)
            if not 0 <= chan < nchannels:
                continue
            if send >= 0:
                senders.setdefault((rank, send, chan), []).append((rank, index))
            if recv >= 0:
                receivers.setdefault((recv, rank, chan), []).append((rank, index))
    out: list[Finding] = []

    def tb_where(key: TbKey, **extra: object) -> dict[str, object]:
        return {"gpu": key[0], "tb": info[key][0], **extra}

    for conn, keys in sorted(senders.items()):
        if len(keys) > 1:
            ids = [info[k][0] for k in keys]
            out.append(Finding("duplicate-connection", f"thread blocks {', '.join(map(str, ids))} of gpu {conn[0]} all "
                               f"send to gpu {conn[1]} on channel {conn[2]}: they would share one FIFO and its "
                               "counters (one sending thread block per connection)", where=tb_where(keys[1])))
    for conn, keys in sorted(receivers.items()):
        if len(keys) > 1:
            ids = [info[k][0] for k in keys]
            out.append(Finding("duplicate-connection", f"thread blocks {', '.join(map(str, ids))} of gpu {conn[1]} all "
                               f"receive from gpu {conn[0]} on channel {conn[2]}: they would share one FIFO "
                               "(one receiving thread block per connection)", where=tb_where(keys[1])))
    for conn in sorted(set(senders) | set(receivers)):
        src, dst, chan = conn
        s_tbs, r_tbs = senders.get(conn, []), receivers.get(conn, [])
        if len(s_tbs) > 1 or len(r_tbs) > 1:
            continue  # matching is meaningless; already reported
        # a transfer of cnt=0 moves nothing and does not touch the FIFO
        sends = [t for t in info[s_tbs[0]][1] if t.sends and t.cnt > 0] if s_tbs else []
        recvs = [t for t in info[r_tbs[0]][1] if t.receives and t.cnt > 0] if r_tbs else []
        name = f"connection {src} -> {dst} on channel {chan}"
        if len(sends) > len(recvs):
            t = sends[len(recvs)]
            what = (f"gpu {dst} has no thread block receiving from gpu {src} on channel {chan}" if not r_tbs
                    else f"the receiving thread block {info[r_tbs[0]][0]} of gpu {dst} has only {len(recvs)}")
            out.append(Finding("unmatched-send", f"{name}: {len(sends)} sends but {len(recvs)} receives ({what}); "
                               "the extra message stays in the FIFO and corrupts the next use",
                               where=tb_where(s_tbs[0], step=t.first, line=t.line)))
        elif len(recvs) > len(sends):
            t = recvs[len(sends)]
            what = (f"gpu {src} has no thread block sending to gpu {dst} on channel {chan}" if not s_tbs
                    else f"the sending thread block {info[s_tbs[0]][0]} of gpu {src} has only {len(sends)}")
            out.append(Finding("unmatched-recv", f"{name}: {len(recvs)} receives but {len(sends)} sends ({what}); "
                               "the extra receive waits forever", where=tb_where(r_tbs[0], step=t.first, line=t.line)))
        for k, (s, r) in enumerate(zip(sends, recvs)):
            if s.cnt != r.cnt:
                out.append(Finding("count-mismatch", f"{name}: message {k} is sent with cnt={s.cnt} (gpu {src} tb "
                                   f"{info[s_tbs[0]][0]} step {s.first}, line {s.line}) but received with cnt={r.cnt}",
                                   where=tb_where(r_tbs[0], step=r.first, line=r.line)))
                break
    return Connections(senders, receivers), out
