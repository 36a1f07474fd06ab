"""Stage 6, dependencies: per rank, in step order, read-after-write, write-after-read and
write-after-write on the physical locations of every declared mode (aliasing included), reduced to the
waits not already implied by program order or by earlier waits."""

from __future__ import annotations

from collections import defaultdict

from smtcoll.lower.ops import Loc, LOp
from smtcoll.lower.storage import Aliasing
from smtcoll.msccl.program import READS_SRC, WRITES_DST


def dependencies(ops: list[LOp], alias: Aliasing, modes: list[bool]) -> None:
    """Set `deps` (ops of other thread blocks of the same rank to wait for) and `hasdep`, keeping only
    the waits that program order and earlier waits do not already imply."""
    by_rank: dict[int, list[LOp]] = defaultdict(list)
    for op in ops:
        by_rank[op.rank].append(op)
    for rank, mine in by_rank.items():
        mine.sort(key=lambda o: (o.time, o.instance))
        last_writer: dict[tuple[bool, Loc], LOp] = {}
        readers: dict[tuple[bool, Loc], list[LOp]] = defaultdict(list)
        known: dict[int, dict[int, int]] = {}  # id(op) -> tb -> highest position known complete after op
        tail: dict[int, LOp] = {}  # tb -> last op placed so far
        for op in mine:
            reads = [op.src] if op.type in READS_SRC else []
            writes = [op.dst] if op.type in WRITES_DST else []
            # a location per mode: the in-place and out-of-place runs are separate executions, so a write in
            # one never conflicts with an access in the other (conflating them made every send of an
            # Allgather's own chunk wait for the out-of-place input -> output copy: the `both` layout lost
            # 20% in the sweep's model). A copy onto itself (that copy in place) only reads, as the checker
            # sees it.
            phys_r = {(m, alias.phys(m, rank, loc)) for loc in reads for m in modes if loc is not None}
            phys_w = {(m, alias.phys(m, rank, loc)) for loc in writes for m in modes if loc is not None
                      and not (op.type == "cpy" and op.src is not None
                               and alias.phys(m, rank, op.src) == alias.phys(m, rank, loc))}
            wanted: list[LOp] = []
            for p in phys_r | phys_w:
                if p in last_writer:
                    wanted.append(last_writer[p])
            for p in phys_w:
                wanted.extend(readers[p])
            prev = tail.get(op.tb)
            base = dict(known[id(prev)]) if prev is not None else {}
            best: dict[int, LOp] = {}
            for d in wanted:
                if d.tb == op.tb or base.get(d.tb, -1) >= d.pos:
                    continue
                if d.tb not in best or best[d.tb].pos < d.pos:
                    best[d.tb] = d
            chosen = [d for d in best.values()
                      if not any(o is not d and known[id(o)].get(d.tb, -1) >= d.pos for o in best.values())]
            chosen.sort(key=lambda d: (d.tb, d.pos))
            for d in chosen:
                d.hasdep = True
                for tb, pos in known[id(d)].items():
                    if base.get(tb, -1) < pos:
                        base[tb] = pos
            base[op.tb] = op.pos
            known[id(op)] = base
            op.deps = chosen
            tail[op.tb] = op
            for p in phys_r:
                readers[p].append(op)
            for p in phys_w:
                last_writer[p] = op
                readers[p] = []
