"""Stage 6b, waits that messages already imply: a write waiting for a send of another thread block of its
rank (write-after-read: a tree Allreduce receives the final value where it sent its partial sum from) is
dropped when a chain of messages and other waits orders the two anyway (the partial went up the tree, the
final value that comes back down was made from it).

Why it matters: every thread block a rank waits for needs a flag numbered by `depid`, an int8_t (at most
128). Those write-after-read waits make a rank wait for its sending thread blocks as well as its receiving
ones, which at 8 instances over a spread connection is more than 128 (mi250's forest Allreduce: 192).

Sound as the runtime runs: a receive completes only once the sender's operation has read and posted its
whole message, and what the sender had completed before it sent is complete then too, so the send is
complete before the write starts. The checker decides races with the same order (messages carry what the
sender knew, `check/execution.py`), so a dropped wait is never reported as a race.

Only run where a rank would wait for more thread blocks than `depid` names: elsewhere the program keeps the
waits of `dependencies` (byte-identical files).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from smtcoll.lower.ops import LOp
from smtcoll.msccl.runtime import RECV_TYPES


def drop_implied(ops: list[LOp]) -> int:
    """Remove the waits of writes on pure sends (`s`) of their rank that the happens-before order without
    any such wait already implies; reset `hasdep`. Returns the waits removed."""
    candidates = [op for op in ops if any(d.type == "s" for d in op.deps)]
    if not candidates:
        return 0
    import numpy as np

    # a vector clock over the thread blocks those sends run on: the highest position known complete
    tracked: dict[tuple[int, int], int] = {}
    for op in candidates:
        for d in op.deps:
            if d.type == "s":
                tracked.setdefault((d.rank, d.tb), len(tracked))
    by_tb: dict[tuple[int, int], list[LOp]] = defaultdict(list)
    for op in ops:
        by_tb[(op.rank, op.tb)].append(op)
    preds: dict[int, list[LOp]] = {}
    for mine in by_tb.values():
        mine.sort(key=lambda o: o.pos)
        for i, op in enumerate(mine):
            before = [d for d in op.deps if d.type != "s"]
            if i:
                before.append(mine[i - 1])
            if op.type in RECV_TYPES and op.partner is not None:
                before.append(op.partner)  # the message: the sender's operation completed before this one does
            preds[id(op)] = before
    succs: dict[int, list[LOp]] = defaultdict(list)
    left: dict[int, int] = {}
    for op in ops:
        left[id(op)] = len(preds[id(op)])
        for p in preds[id(op)]:
            succs[id(p)].append(op)
    ready = [op for op in ops if not left[id(op)]]
    clock: dict[int, Any] = {}  # op -> its clock, until its last successor read it
    uses = {id(op): len(succs[id(op)]) for op in ops}
    empty = np.full(len(tracked), -1, dtype=np.int64)
    drops: list[tuple[LOp, list[LOp]]] = []
    done = 0
    while ready:
        op = ready.pop()
        done += 1
        ps = preds[id(op)]
        seen = empty.copy() if not ps else np.max(np.stack([clock[id(p)] for p in ps]), axis=0)
        keep = [d for d in op.deps if not (d.type == "s" and seen[tracked[(d.rank, d.tb)]] >= d.pos)]
        if len(keep) < len(op.deps):
            drops.append((op, keep))
        for p in ps:
            uses[id(p)] -= 1
            if not uses[id(p)]:
                del clock[id(p)]
        slot = tracked.get((op.rank, op.tb))
        if slot is not None:
            seen[slot] = max(int(seen[slot]), op.pos)
        if uses[id(op)]:
            clock[id(op)] = seen
        for s in succs[id(op)]:
            left[id(s)] -= 1
            if not left[id(s)]:
                ready.append(s)
    if done != len(ops):  # a cycle: the program deadlocks anyway; keep every wait (the checker reports it)
        return 0
    removed = 0
    for op, keep in drops:
        removed += len(op.deps) - len(keep)
        op.deps = keep
    waited = {id(d) for op in ops for d in op.deps}
    for op in ops:
        op.hasdep = id(op) in waited
    return removed
