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
    # the happens-before graph over ops by their index in `ops` (ints: this runs on every op of a lowered
    # program at 8 instances, and lists indexed by int are cheaper than dicts keyed by id)
    index = {id(op): i for i, op in enumerate(ops)}
    by_tb: dict[tuple[int, int], list[LOp]] = defaultdict(list)
    for op in ops:
        by_tb[(op.rank, op.tb)].append(op)
    preds: list[list[int]] = [[] for _ in ops]
    for mine in by_tb.values():
        mine.sort(key=lambda o: o.pos)
        for i, op in enumerate(mine):
            before = [index[id(d)] for d in op.deps if d.type != "s"]
            if i:
                before.append(index[id(mine[i - 1])])
            if op.type in RECV_TYPES and op.partner is not None:
                # the message: the sender's operation completed before this one does
                before.append(index[id(op.partner)])
            preds[index[id(op)]] = before
    succs: list[list[int]] = [[] for _ in ops]
    for i, before in enumerate(preds):
        for p in before:
            succs[p].append(i)
    left = [len(before) for before in preds]
    uses = [len(after) for after in succs]
    ready = [i for i, n in enumerate(left) if not n]
    clock: dict[int, Any] = {}  # op -> its clock, until its last successor read it
    slots = [tracked.get((op.rank, op.tb)) for op in ops]
    empty = np.full(len(tracked), -1, dtype=np.int64)
    drops: list[tuple[LOp, list[LOp]]] = []
    done = 0
    while ready:
        i = ready.pop()
        op = ops[i]
        done += 1
        ps = preds[i]
        # the pointwise maximum of the predecessors' clocks (pairwise: most ops have one or two, and a
        # stack of them costs more than the maxima)
        seen = (clock[ps[0]] if ps else empty).copy()
        for p in ps[1:]:
            np.maximum(seen, clock[p], out=seen)
        keep = [d for d in op.deps if not (d.type == "s" and seen[tracked[(d.rank, d.tb)]] >= d.pos)]
        if len(keep) < len(op.deps):
            drops.append((op, keep))
        for p in ps:
            uses[p] -= 1
            if not uses[p]:
                del clock[p]
        slot = slots[i]
        if slot is not None:
            seen[slot] = max(int(seen[slot]), op.pos)
        if uses[i]:
            clock[i] = seen
        for j in succs[i]:
            left[j] -= 1
            if not left[j]:
                ready.append(j)
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
