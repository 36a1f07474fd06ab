"""Stage 4, storage: where every value lives, and the operations that move it.

A value that a rank must output lives in its output slot; other received values live in scratch slots,
reused once their last reader is done (greedy interval colouring, optimal for intervals). In place, an
output slot that aliases an input still needed (alltoall, custom) is not written before the end: the
value is staged in scratch and copied at the end.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from smtcoll.lower.layout import SPLIT_INPUT, SPLIT_OUTPUT, Layout
from smtcoll.lower.ops import Loc, LOp, Transfer
from smtcoll.lower.options import COPIES_PER_TB, CannotLower
from smtcoll.model import Schedule


class Aliasing:
    """Physical location of a base-level (buffer, index) on a rank in one mode (docs/msccl-format.md,
    "In place and out of place")."""

    def __init__(self, layout: Layout) -> None:
        self.kind, self.split = layout.kind, layout.nchunks // layout.ranks if layout.nchunks % layout.ranks == 0 else 0

    def phys(self, in_place: bool, rank: int, loc: Loc) -> Loc:
        buf, idx = loc
        if in_place:
            if buf == "i" and self.kind in SPLIT_INPUT:
                return ("o", rank * self.split + idx)
            if buf == "i" and self.kind not in SPLIT_OUTPUT:
                return ("o", idx)
            if buf == "o" and self.kind in SPLIT_OUTPUT:
                return ("i", rank * self.split + idx)
        return loc


def plan(schedule: Schedule, layout: Layout, items: list[Transfer], modes: list[bool]) -> list[LOp]:
    """Base-level operations (instance 0); scratch locations are value ids until `allocate_scratch`."""
    coll = schedule.collective
    combining = coll.is_combining
    alias = Aliasing(layout)
    steps = len(schedule.steps)
    in_loc: dict[tuple[int, int], Loc] = {k: ("i", v) for k, v in layout.in_pos.items()}
    out_loc: dict[tuple[int, int], Loc] = {k: ("o", v) for k, v in layout.out_pos.items()}
    sent = {(x.src, x.addr) for x in items}
    received = {(x.dst, x.addr) for x in items}

    def same(rank: int, a: Loc, b: Loc) -> bool:
        return all(alias.phys(m, rank, a) == alias.phys(m, rank, b) for m in modes)

    # inputs still needed for something: sent, reduced into, or moved to a different output slot
    needed_inputs: dict[tuple[int, bool], set[Loc]] = defaultdict(set)
    for (r, a), loc in in_loc.items():
        if (r, a) in sent or (r, a) in received or ((r, a) in out_loc and not same(r, loc, out_loc[(r, a)])):
            for m in modes:
                needed_inputs[(r, m)].add(alias.phys(m, r, loc))
    # an output slot that aliases another input still needed is written only at the end
    unsafe: set[tuple[int, int]] = set()
    for (r, a), loc in out_loc.items():
        own = in_loc.get((r, a))
        for m in modes:
            p = alias.phys(m, r, loc)
            if p in needed_inputs[(r, m)] and (own is None or alias.phys(m, r, own) != p):
                unsafe.add((r, a))
    home: dict[tuple[int, int], Loc] = {}
    scratch_ids: dict[tuple[int, int], int] = {}

    def home_of(key: tuple[int, int]) -> Loc:
        if key not in home:
            if key in out_loc and key not in unsafe:
                home[key] = out_loc[key]
            else:
                scratch_ids[key] = len(scratch_ids)
                home[key] = ("s", scratch_ids[key])
        return home[key]

    ops: list[LOp] = []
    cur: dict[tuple[int, int], Loc] = dict(in_loc)
    at_out: set[tuple[int, int]] = set()
    seq: Counter[tuple[int, int]] = Counter()  # (rank, phase) -> local copies so far
    for key in sorted(out_loc):
        r = key[0]
        if key not in in_loc:
            continue
        src = in_loc[key]
        if key in unsafe:
            if key not in received:  # stage it, the output slot may only be written at the end
                dst = home_of(key)
                ops.append(_copy(r, (-1, 0, seq[(r, 0)]), src, dst))
                cur[key] = dst
                seq[(r, 0)] += 1
        elif not combining:
            if not (len(modes) == 1 and modes[0] and same(r, src, out_loc[key])):
                ops.append(_copy(r, (-1, 0, seq[(r, 0)]), src, out_loc[key]))
                seq[(r, 0)] += 1
            at_out.add(key)
    by_step: dict[int, list[Transfer]] = defaultdict(list)
    for x in items:
        by_step[x.step].append(x)
    speed = {(lk.src, lk.dst): float(lk.gbps or lk.bandwidth) for lk in schedule.topology.links}
    for t in range(steps):
        here = by_step.get(t, [])
        if combining:
            here = _by_arrival(here, speed)
        sends = [LOp(x.src, (t, 1, i), "s", x.dst, -1, cur[(x.src, x.addr)], None) for i, x in enumerate(here)]
        ops.extend(sends)
        for x, send in zip(here, sends):
            key = (x.dst, x.addr)
            dst = home_of(key)
            kind, reduced = ("rrc", cur[key]) if x.action == "add" else ("r", None)
            # receives follow the order their messages are sent in (one FIFO per connection)
            recv = LOp(x.dst, (t, 2, *send.time), kind, -1, x.src, reduced, dst, partner=send)
            send.partner = recv
            ops.append(recv)
            cur[key] = dst
            if not combining and key in out_loc and dst == out_loc[key]:
                at_out.add(key)
    for key in sorted(out_loc):
        if key in at_out:
            continue
        r = key[0]
        held = cur.get(key)
        if held is None:
            raise CannotLower(f"rank {r} never holds address {key[1]} (the schedule checker should have said so)")
        if not all(alias.phys(m, r, held) == alias.phys(m, r, out_loc[key]) for m in modes):
            ops.append(_copy(r, (steps, 3, seq[(r, 1)]), held, out_loc[key]))
            seq[(r, 1)] += 1
    return ops


def _by_arrival(here: list[Transfer], speed: dict[tuple[int, int], float]) -> list[Transfer]:
    """A step's transfers in the order their messages arrive when each connection sends its own back to back
    at its link's speed (GB/s where the topology gives them, else its bandwidth): the k-th at k / speed.
    Every connection keeps its order (one FIFO); across connections this is the order in which the
    contributions to one sum are chained (each `rrc` waits for the one before it). In the schedule's order
    instead, a contribution listed first but arriving late (the 20th message of its connection) holds the
    chain while the next one's receiver waits, its FIFO fills and its link idles: amd8 ReduceScatter, 27
    trees per root at 8 instances, 0.937 of the bound in the sweep's model, 0.984 in arrival order.
    Only additions commute: at one rank and address, a transfer that replaces the value (a copy, or a sum
    that contains what the rank holds) keeps its place among the others of the step (`level`), as the
    schedule applies a step's arrivals in its order (ndv2 x2 Allreduce with 2 chunks copies, then adds)."""
    sent: Counter[tuple[int, int]] = Counter()
    level: Counter[tuple[int, int]] = Counter()
    when = []
    for i, x in enumerate(here):
        sent[(x.src, x.dst)] += 1
        key = (x.dst, x.addr)
        if x.action == "add":
            at = level[key]
        else:  # after every earlier transfer into the key, before every later one
            at = level[key] + 1
            level[key] += 2
        when.append((at, sent[(x.src, x.dst)] / (speed.get((x.src, x.dst)) or 1.0), i))
    return [here[i] for *_, i in sorted(when)]


def _copy(rank: int, time: tuple[int, ...], src: Loc, dst: Loc) -> LOp:
    """A local copy. Copies run on thread blocks of their own, at most `COPIES_PER_TB` each (they run in
    parallel, and a thread block stays within the executor's MAX_STEPS (64)): the first copies of the run
    (time[0] < 0) and the last ones on separate thread blocks."""
    phase = 0 if time[0] < 0 else 1
    return LOp(rank, time, "cpy", -1, -1, src, dst, local=(phase, time[2] // COPIES_PER_TB))


def allocate_scratch(ops: list[LOp], reuse: bool = True) -> tuple[list[LOp], dict[int, int]]:
    """Give scratch values slots: a slot is reused once the previous value's last reader ran in an
    earlier step (greedy by first write, optimal for intervals); `reuse` False: a slot per value, so no
    write waits for the readers of a previous value (more scratch, fewer thread blocks waited for)."""
    span: dict[tuple[int, int], list[int]] = {}
    for op in ops:
        for loc in (op.src, op.dst):
            if loc is not None and loc[0] == "s":
                key = (op.rank, loc[1])
                lo_hi = span.setdefault(key, [op.time[0], op.time[0]])
                lo_hi[0] = min(lo_hi[0], op.time[0])
                lo_hi[1] = max(lo_hi[1], op.time[0])
    slot: dict[tuple[int, int], int] = {}
    sizes: dict[int, int] = defaultdict(int)
    free_at: dict[int, list[int]] = defaultdict(list)  # rank -> last use per slot
    for key in sorted(span, key=lambda k: (k[0], span[k][0], k[1])):
        r, (lo, hi) = key[0], span[key]
        slots = free_at[r]
        choice = next((i for i, end in enumerate(slots) if end < lo), None) if reuse else None
        if choice is None:
            choice = len(slots)
            slots.append(hi)
        else:
            slots[choice] = hi
        slot[key] = choice
        sizes[r] = len(slots)
    for op in ops:
        for field in ("src", "dst"):
            loc = getattr(op, field)
            if loc is not None and loc[0] == "s":
                setattr(op, field, ("s", slot[(op.rank, loc[1])]))
    return ops, dict(sizes)
