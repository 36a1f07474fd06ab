"""Lowering a step schedule to an MSCCL program (docs/lower.md).

1. `check_schedule` must accept the schedule (else `RejectedSchedule`, exit 1).
2. The collective is matched to a runtime geometry (`layout.recognize`).
3. The schedule is simulated like the checker does: every send becomes a transfer that copies, adds
   (`rrc`) or replaces (`r`) at the receiver; sends whose result is never observed (a chunk the receiver
   already has, a value no later send or postcondition reads) are dropped.
4. Storage: a value that a rank must output lives in its output slot; other received values live in
   scratch slots, reused once their last reader is done (greedy interval colouring, optimal for
   intervals). In place, an output slot that aliases an input still needed (alltoall, custom) is not
   written before the end: the value is staged in scratch and copied at the end.
5. Thread blocks: per rank and instance, one sending tb per peer and one receiving tb per peer (one tb
   per connection and FIFO), `rcs`/`rrcs`/`rrs` fusing a forward into the receiving tb when the same
   value goes on to exactly one peer in the next step, local copies on tbs of their own (16 at most each).
6. Dependencies: per rank, in step order, read-after-write, write-after-read and write-after-write on
   the physical locations of every declared mode (aliasing included), reduced to the ones not already
   implied by program order or by earlier waits; extra ones become `nop` chains, targets get `hasdep`.
7. Instances replicate the program over channels with interleaved chunks (index x -> x*I + k), the
   MSCCLang default, which keeps the per-rank shares of 1.6 intact.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import attrs

from smtcoll.check.schedule import check_schedule
from smtcoll.errors import SmtcollError
from smtcoll.model import Schedule
from smtcoll.msccl.layout import SPLIT_INPUT, SPLIT_OUTPUT, Layout, recognize
from smtcoll.msccl.program import READS_SRC, RECV_TYPES, WRITES_DST, Gpu, Op, Program, ThreadBlock
from smtcoll.msccl.writer import safe_name

MODES = ("outofplace", "inplace", "both")
RUNTIME_CHOICES = ("auto", "both", "executor", "legacy")
PROTOCOLS = ("Simple", "LL", "LL128")
TBS_PER_CHANNEL = 32  # sending (and receiving) thread blocks per (rank, channel)
MAX_CHANNELS = 32  # chan must stay below MAXCHANNELS
MAX_STEPS = {"executor": 64, "legacy": 256}
MAX_TBS = {"executor": 1024, "legacy": 216}
MAX_DEPID = 127  # depid is an int8_t
COPIES_PER_TB = 16
LEGACY_DEFAULT_MAX_BYTES = 1 << 27
CAPACITY = {"Simple": 2, "LL": 8, "LL128": 8}  # messages a connection's FIFO holds (NCCL_STEPS / slots per message)
# coll spelling per runtime; None: that runtime has no such collective
SPELLING = {
    "allgather": ("allgather", "allgather"), "alltoall": ("alltoall", "alltoall"),
    "reducescatter": ("reducescatter", "reduce_scatter"), "allreduce": ("allreduce", "allreduce"),
    "broadcast": ("broadcast", "broadcast"), "reduce": ("reduce", "reduce"), "gather": ("gather", None),
    "scatter": ("scatter", None), "custom": (None, "custom"),
}

Loc = tuple[str, int]  # (buffer, index); scratch indices are value ids until slots are allocated


class RejectedSchedule(SmtcollError):
    """The schedule checker rejects the schedule: lowering it would only produce a wrong program."""

    exit_code = 1


class CannotLower(SmtcollError):
    """The runtime cannot express this schedule (or these options)."""


@attrs.frozen
class LowerOptions:
    instances: int = 1
    protocol: str = "Simple"
    runtime: str = "auto"  # auto: a file both runtimes accept when the collective allows, else the one that can
    mode: str = "outofplace"
    min_bytes: int | None = None
    max_bytes: int | None = None
    fuse: bool = True
    name: str | None = None


@attrs.frozen
class Lowered:
    program: Program
    layout: Layout
    runtimes: tuple[str, ...]  # the runtimes the file is written for
    verify_collective: object  # what `check_program_file(collective=...)` needs: a name or a Collective
    stats: dict[str, int]


@attrs.frozen
class Transfer:
    step: int
    index: int
    addr: int
    src: int
    dst: int
    action: str  # "copy" (non-combining), "add" (rrc), "replace" (r)


@attrs.define(eq=False)
class LOp:
    """One step of the program before thread blocks are numbered."""

    rank: int
    time: tuple[int, ...]
    type: str
    send: int
    recv: int
    src: Loc | None
    dst: Loc | None
    instance: int = 0
    tb: int = -1
    pos: int = -1
    deps: list[LOp] = attrs.field(factory=list)
    hasdep: bool = False
    partner: LOp | None = None  # the other side of a message; its location fills the informational fields
    peers: tuple[int, int] | None = None  # (send, recv) of its thread block, when fusion paired two peers
    local: tuple[int, int] = (0, 0)  # which local-copy thread block a `cpy` runs on


# --- options and runtimes ---------------------------------------------------------------------------

def _targets(kind: str, runtime: str) -> tuple[str, ...]:
    executor, legacy = SPELLING[kind]
    if runtime == "executor" and not executor:
        raise CannotLower(f"msccl-executor-nccl has no {kind!r} collective; use --runtime legacy")
    if runtime == "legacy" and not legacy:
        raise CannotLower(f"the legacy msccl runtime has no {kind} collective; use --runtime executor")
    if runtime == "both":
        if not executor or not legacy:
            raise CannotLower(f"no single file serves both runtimes for {kind}: only the "
                              f"{'executor' if executor else 'legacy'} runtime has it")
        if executor != legacy:
            raise CannotLower(f"no single file serves both runtimes for {kind}: the executor spells it "
                              f"{executor!r}, the legacy runtime {legacy!r} (write one file per runtime)")
        return ("executor", "legacy")
    if runtime == "auto":
        if executor and executor == legacy:
            return ("executor", "legacy")
        return ("executor",) if executor else ("legacy",)
    if runtime not in ("executor", "legacy"):
        raise CannotLower(f"unknown runtime {runtime!r} (choose from {', '.join(RUNTIME_CHOICES)})")
    return (runtime,)


def _check_options(o: LowerOptions) -> None:
    if not isinstance(o.instances, int) or not 1 <= o.instances <= MAX_CHANNELS:
        raise CannotLower(f"--instances must be between 1 and {MAX_CHANNELS}, got {o.instances}")
    if o.protocol not in PROTOCOLS:
        raise CannotLower(f"unknown protocol {o.protocol!r} (choose from {', '.join(PROTOCOLS)})")
    if o.mode not in MODES:
        raise CannotLower(f"unknown mode {o.mode!r} (choose from {', '.join(MODES)})")
    for name, v in (("--min-bytes", o.min_bytes), ("--max-bytes", o.max_bytes)):
        if v is not None and not 0 <= v < 1 << 63:
            raise CannotLower(f"{name} must be between 0 and 2^63-1, got {v}")
    if o.min_bytes is not None and o.max_bytes and o.max_bytes < o.min_bytes:
        raise CannotLower(f"--max-bytes {o.max_bytes} is below --min-bytes {o.min_bytes}: never selected")


# --- simulation --------------------------------------------------------------------------------------

def transfers(schedule: Schedule) -> list[Transfer]:
    """The sends with an observable effect, with what the receiver does, in step and send order."""
    coll = schedule.collective
    combining = coll.is_combining
    value: dict[tuple[int, int], frozenset[int]] = {}
    for r, c in coll.pre:
        key = (r, coll.address[c])
        value[key] = value.get(key, frozenset()) | {c}
    out: list[Transfer] = []
    for t, step in enumerate(schedule.steps):
        arrivals: list[tuple[int, int, int, int, frozenset[int]]] = []
        for j, s in enumerate(step.sends):
            arrivals.append((j, s.chunk, s.src, s.dst, value[(s.src, s.chunk)]))
        for j, a, src, dst, v in arrivals:
            current = value.get((dst, a), frozenset())
            if v == current or (not combining and current):
                continue  # nothing changes at the receiver
            if not combining:
                action, new = "copy", v
            elif v >= current:
                action, new = "replace", v
            else:  # disjoint: check_schedule has excluded double counts
                action, new = "add", current | v
            value[(dst, a)] = new
            out.append(Transfer(t, j, a, src, dst, action))
    return _live(schedule, out)


def _live(schedule: Schedule, items: list[Transfer]) -> list[Transfer]:
    """Drop transfers whose result no later kept send and no postcondition reads (backwards liveness)."""
    coll = schedule.collective
    live = {(r, coll.address[c]) for r, c in coll.post}
    kept: list[Transfer] = []
    by_step: dict[int, list[Transfer]] = defaultdict(list)
    for x in items:
        by_step[x.step].append(x)
    for t in sorted(by_step, reverse=True):
        now = [x for x in by_step[t] if (x.dst, x.addr) in live]
        live |= {(x.src, x.addr) for x in now}
        kept.extend(reversed(now))
    kept.reverse()
    return kept


# --- storage and operations ---------------------------------------------------------------------------

class _Aliasing:
    """Physical location of a base-level (buffer, index) on a rank in one mode (msccl-xml.md 1.7)."""

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


def _plan(schedule: Schedule, layout: Layout, items: list[Transfer], modes: list[bool]) -> list[LOp]:
    """Base-level operations (instance 0); scratch locations are value ids until `_allocate_scratch`."""
    coll = schedule.collective
    combining = coll.is_combining
    alias = _Aliasing(layout)
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
    for t in range(steps):
        here = by_step.get(t, [])
        sends = [LOp(x.src, (t, 1, x.index), "s", x.dst, -1, cur[(x.src, x.addr)], None) for x in here]
        ops.extend(sends)
        for x, send in zip(here, sends):
            key = (x.dst, x.addr)
            dst = home_of(key)
            kind, src = ("rrc", cur[key]) if x.action == "add" else ("r", None)
            # receives follow the order their messages are sent in (one FIFO per connection)
            recv = LOp(x.dst, (t, 2, *send.time), kind, -1, x.src, src, dst, partner=send)
            send.partner = recv
            ops.append(recv)
            cur[key] = dst
            if not combining and key in out_loc and dst == out_loc[key]:
                at_out.add(key)
    for key in sorted(out_loc):
        if key in at_out:
            continue
        r = key[0]
        src = cur.get(key)
        if src is None:
            raise CannotLower(f"rank {r} never holds address {key[1]} (the schedule checker should have said so)")
        if not all(alias.phys(m, r, src) == alias.phys(m, r, out_loc[key]) for m in modes):
            ops.append(_copy(r, (steps, 3, seq[(r, 1)]), src, out_loc[key]))
            seq[(r, 1)] += 1
    return ops


def _copy(rank: int, time: tuple[int, ...], src: Loc, dst: Loc) -> LOp:
    """A local copy. Copies run on thread blocks of their own, at most `COPIES_PER_TB` each (they run in
    parallel, and a thread block stays within the executor's 64 steps): the first copies of the run
    (time[0] < 0) and the last ones on separate thread blocks."""
    phase = 0 if time[0] < 0 else 1
    return LOp(rank, time, "cpy", -1, -1, src, dst, local=(phase, time[2] // COPIES_PER_TB))


def _allocate_scratch(ops: list[LOp]) -> tuple[list[LOp], dict[int, int]]:
    """Give scratch values slots: a slot is reused once the previous value's last reader ran in an
    earlier step (greedy by first write, optimal for intervals)."""
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
        choice = next((i for i, end in enumerate(slots) if end < lo), None)
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



# --- fusion ---------------------------------------------------------------------------------------------

def _fuse(ops: list[LOp], capacity: int) -> list[LOp]:
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
        first = min(arrivals.get((fwd.send, step + 1, fwd.partner.dst), []), key=lambda x: x.time, default=None)
        if first is not fwd.partner:
            continue  # it arrives early, so it must stay the first of that step's arrivals at that location
        if (op.rank, fwd.send) not in light or (op.recv, op.rank) not in light:
            continue
        candidates[(op.rank, fwd.send, op.recv)].append((op, fwd))
    # pair peers, most fusable forwards first
    send_pair: dict[tuple[int, int], int] = {}  # (rank, send peer) -> receive peer of its thread block
    recv_pair: dict[tuple[int, int], int] = {}
    for (rank, p, q), _ in sorted(candidates.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if (rank, p) not in send_pair and (rank, q) not in recv_pair:
            send_pair[(rank, p)], recv_pair[(rank, q)] = q, p
    dropped: set[int] = set()
    for (rank, p), q in sorted(send_pair.items()):
        for recv, fwd in candidates[(rank, p, q)]:
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


# --- instances, thread blocks, dependencies ------------------------------------------------------------

def _instances(ops: list[LOp], count: int) -> list[LOp]:
    """Replicate the base operations for every instance; chunk index x becomes x*count + k."""
    if count == 1:
        return ops
    out: list[LOp] = []
    copies: dict[tuple[int, int], LOp] = {}

    def move(loc: Loc | None, k: int) -> Loc | None:
        return None if loc is None else (loc[0], loc[1] * count + k)

    for k in range(count):
        for op in ops:
            new = LOp(op.rank, op.time, op.type, op.send, op.recv, move(op.src, k), move(op.dst, k), k,
                      peers=op.peers, local=op.local)
            copies[(id(op), k)] = new
            out.append(new)
    for k in range(count):
        for op in ops:
            if op.partner is not None:
                copies[(id(op), k)].partner = copies[(id(op.partner), k)]
    return out


@attrs.frozen
class _Tb:
    instance: int
    send: int
    recv: int
    local: tuple[int, int] = (0, 0)


def _tb_of(op: LOp) -> _Tb:
    if op.peers is not None:
        return _Tb(op.instance, *op.peers)
    if op.type == "s":
        return _Tb(op.instance, op.send, -1)
    if op.type in ("r", "rrc"):
        return _Tb(op.instance, -1, op.recv)
    return _Tb(op.instance, -1, -1, op.local)


def _dependencies(ops: list[LOp], alias: _Aliasing, modes: list[bool]) -> None:
    """Set `deps` (ops of other thread blocks of the same rank to wait for) and `hasdep`, keeping only
    the waits that program order and earlier waits do not already imply."""
    by_rank: dict[int, list[LOp]] = defaultdict(list)
    for op in ops:
        by_rank[op.rank].append(op)
    for rank, mine in by_rank.items():
        mine.sort(key=lambda o: (o.time, o.instance))
        last_writer: dict[Loc, LOp] = {}
        readers: dict[Loc, list[LOp]] = defaultdict(list)
        known: dict[int, dict[int, int]] = {}  # id(op) -> tb -> highest position known complete after op
        tail: dict[int, LOp] = {}  # tb -> last op placed so far
        for op in mine:
            reads = [op.src] if op.type in READS_SRC else []
            writes = [op.dst] if op.type in WRITES_DST else []
            phys_r = {alias.phys(m, rank, loc) for loc in reads for m in modes if loc is not None}
            phys_w = {alias.phys(m, rank, loc) for loc in writes for m in modes if loc is not None}
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


def _assign_tbs(ops: list[LOp]) -> dict[int, list[tuple[_Tb, list[LOp]]]]:
    """rank -> thread blocks in id order, each with its operations in step order."""
    groups: dict[int, dict[_Tb, list[LOp]]] = defaultdict(lambda: defaultdict(list))
    for op in ops:
        groups[op.rank][_tb_of(op)].append(op)
    out: dict[int, list[tuple[_Tb, list[LOp]]]] = {}
    for rank, tbs in groups.items():
        for direction, peer_of in (("send", lambda t: t.send), ("receive", lambda t: t.recv)):
            per_channel = Counter(t.instance for t in tbs if peer_of(t) >= 0)
            if per_channel and max(per_channel.values()) > TBS_PER_CHANNEL:
                raise CannotLower(f"rank {rank} would {direction} on {max(per_channel.values())} connections in one "
                                  f"channel; the runtimes allow {TBS_PER_CHANNEL} {direction} thread blocks per channel")
        ordered = sorted(tbs, key=lambda t: (t.instance, t.send < 0, t.send, t.recv, t.local))
        listing = []
        for i, tb in enumerate(ordered):
            mine = sorted(tbs[tb], key=lambda o: o.time)
            for pos, op in enumerate(mine):
                op.tb, op.pos = i, pos
            listing.append((tb, mine))
        out[rank] = listing
    return out


def _xml_steps(mine: list[LOp], index_of: dict[int, int]) -> list[Op]:
    steps: list[Op] = []
    for op in mine:
        waits = [(d.tb, index_of[id(d)]) for d in op.deps] or [(-1, -1)]
        for depid, deps in waits[:-1]:
            steps.append(Op(len(steps), "nop", "i", -1, "o", -1, 0, depid, deps, 0))
        src = op.src if op.src is not None else (op.partner.src if op.partner is not None else None)
        dst = op.dst if op.dst is not None else (op.partner.dst if op.partner is not None else None)
        src = src or ("i", -1)
        dst = dst or ("o", -1)
        steps.append(Op(len(steps), op.type, src[0], src[1], dst[0], dst[1], 1, waits[-1][0], waits[-1][1],
                        int(op.hasdep)))
    return steps


def _element_indices(tbs: list[tuple[_Tb, list[LOp]]]) -> dict[int, int]:
    """id(op) -> its `s` (element index) once the nops before it are counted."""
    out: dict[int, int] = {}
    for _, mine in tbs:
        s = 0
        for op in mine:
            s += max(0, len(op.deps) - 1)
            out[id(op)] = s
            s += 1
    return out


# --- entry point --------------------------------------------------------------------------------------

def lower(schedule: Schedule, options: LowerOptions = LowerOptions()) -> Lowered:
    """The MSCCL program of `schedule`; raises `RejectedSchedule` (exit 1) when the schedule checker
    rejects it and `CannotLower` (exit 2) when the runtimes cannot express it."""
    _check_options(options)
    report = check_schedule(schedule)
    if report.verdict != "ok":
        listed = "; ".join(f"{v.code}: {v.message}" + (f" ({v.place()})" if v.place() else "")
                           for v in report.violations[:3])
        more = f" and {len(report.violations) - 3} more" if len(report.violations) > 3 else ""
        raise RejectedSchedule(f"the schedule checker rejects this schedule, refusing to lower it: {listed}{more}")
    count = options.instances
    coll = schedule.collective
    layout = recognize(coll)
    targets = _targets(layout.kind, options.runtime)
    if "legacy" in targets and options.max_bytes == 0:
        raise CannotLower("--max-bytes 0 means no limit for the executor but never selected for the legacy "
                          "runtime; give a positive value or --runtime executor")
    modes = {"outofplace": [False], "inplace": [True], "both": [False, True]}[options.mode]
    items = transfers(schedule)
    base = _plan(schedule, layout, items, modes)
    if options.fuse:
        base = _fuse(base, CAPACITY[options.protocol])
    base, scratch = _allocate_scratch(base)
    ops = _instances(base, count)
    by_rank = _assign_tbs(ops)
    alias = _Aliasing(_scaled(layout, count))
    _dependencies(ops, alias, modes)

    legacy_only = targets == ("legacy",)
    executor_spelling, legacy_spelling = SPELLING[layout.kind]
    gpus = []
    limits = {"steps": min(MAX_STEPS[t] for t in targets), "tbs": min(MAX_TBS[t] for t in targets)}
    max_steps = 0
    for rank in range(coll.ranks):
        tbs = by_rank.get(rank, [])
        if len(tbs) > limits["tbs"]:
            raise CannotLower(f"rank {rank} needs {len(tbs)} thread blocks; the {'/'.join(targets)} runtime "
                              f"allows {limits['tbs']} (use fewer --instances)")
        index_of = _element_indices(tbs)
        xml_tbs = []
        for i, (tb, mine) in enumerate(tbs):
            steps = _xml_steps(mine, index_of)
            max_steps = max(max_steps, len(steps))
            if len(steps) > limits["steps"]:
                tight = [t for t in targets if MAX_STEPS[t] == limits["steps"]]
                has = dict(zip(("executor", "legacy"), SPELLING[layout.kind]))
                wider = [t for t in MAX_STEPS if MAX_STEPS[t] >= len(steps) and has[t]]
                hint = f" (--runtime {wider[0]} allows {MAX_STEPS[wider[0]]})" if wider else ""
                raise CannotLower(f"rank {rank} thread block {i} needs {len(steps)} steps; the "
                                  f"{' and '.join(tight)} runtime allows {limits['steps']} per thread block{hint}")
            if i > MAX_DEPID and any(op.hasdep for op in mine):
                raise CannotLower(f"rank {rank}: thread block {i} is a dependency target but depid is an int8_t "
                                  f"(at most {MAX_DEPID})")
            xml_tbs.append(ThreadBlock(i, tb.send, tb.recv, tb.instance, steps))
        gpus.append(Gpu(rank, layout.in_chunks * count, layout.out_chunks * count, scratch.get(rank, 0) * count,
                        xml_tbs))
    in_place = options.mode in ("inplace", "both")
    executor = "executor" in targets
    max_bytes = options.max_bytes
    if max_bytes is None and executor:
        max_bytes = LEGACY_DEFAULT_MAX_BYTES if "legacy" in targets else 0
    min_bytes = options.min_bytes if options.min_bytes is not None or not executor else 0
    name = safe_name(options.name or schedule.name or f"{layout.kind}_{coll.ranks}")
    program = Program(
        name, options.protocol, count, layout.nchunks * count, coll.ranks,
        legacy_spelling if legacy_only else executor_spelling,
        int(in_place), (int(options.mode in ("outofplace", "both")) if executor else None),
        min_bytes, max_bytes, None, None, gpus,
        attributes=("outofplace",) if executor else ())
    verify_collective: object = layout.kind
    if layout.kind == "custom":
        verify_collective = coll.with_chunks(count)  # the buffers hold exactly this collective, per instance
    stats = {"thread_blocks": sum(len(g.tbs) for g in gpus), "steps": program.steps, "max_tb_steps": max_steps,
             "scratch_chunks": max((g.s_chunks or 0) for g in gpus), "transfers": len(items),
             "nops": sum(1 for g in gpus for t in g.tbs for s in t.steps if s.type == "nop"),
             "fused": sum(1 for g in gpus for t in g.tbs for s in t.steps if s.type in ("rcs", "rrs", "rrcs"))}
    return Lowered(program, layout, targets, verify_collective, stats)


def _scaled(layout: Layout, count: int) -> Layout:
    return attrs.evolve(layout, nchunks=layout.nchunks * count)
