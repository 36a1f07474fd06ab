"""Executing a program on abstract chunks: deadlocks, races, read-before-write, double counting, final memory.

One pipeline iteration is enough (iterations touch disjoint slices of every chunk, docs/msccl-format.md, "Pipelining").
Every thread block runs its transmissions in order; a transmission first waits for its dependencies
(flags, see `transmissions.py`), then moves its `cnt` chunks one piece at a time through the FIFO of its
connections, in FIFO messages of at most `split` chunks (the runtime's maxAllowedCount, `messages.py`).

Why one simulation decides deadlock for every schedule: each thread block is deterministic and every
condition it waits for (a flag reaching a value, a message in a FIFO, a free FIFO slot) stays true once
true until that same thread block acts. The system is therefore confluent: if some order of execution
blocks forever, every maximal order does. The FIFOs are bounded (capacity in messages: Simple 2, LL and
LL128 8, docs/msccl-format.md, "Connections"); more capacity can only unblock, so when the bounded run
deadlocks the run is repeated with unbounded FIFOs to tell the two kinds apart.

Races are decided by happens-before over all schedules, not by the order this simulation happened to
take. Happens-before is program order, dependency flags (the flagged transmission's end before the
waiter's start) and messages (what the sender knew when it sent piece k before the receiver's piece k).
Knowledge is a bitset of the transmissions that touch a contended location (one touched by two thread
blocks, one of them writing); a transmission's bit is known only once it has completed (its last piece).
FIFO back-pressure is not used as an order: it is fragile and depends on the protocol.

Knowledge is tracked in two layers so that memory does not grow with ranks x transmissions. Local
knowledge (program order and dependency flags, which never leave a rank) is a bitset per rank, numbered
over that rank's contended transmissions: a race is always between two thread blocks of one rank, and a
lowered program orders all its accesses with local dependencies. Knowledge that travels with messages is
needed only for a pair that the local layer leaves unordered: a first run collects those pairs' earlier
transmissions, and only when there are some is the run repeated with a global bit for each of them (the
same run, so the same questions are asked). Local order implies global order, so the answer to every
question is the one a single bitset over all transmissions gives. A flag keeps its knowledge only until
its last waiter (known before the run: a dependency waits for the first flagged transmission whose
counter reaches it) has read it.
"""

from __future__ import annotations

import bisect
import heapq
import random
from array import array
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import attrs

from smtcoll.check.buffers import Geometry
from smtcoll.check.transmissions import Transmission
from smtcoll.findings import Finding
from smtcoll.text import count

Value = tuple[int, int] | None  # (contributions, contributions counted more than once); None: undefined


@attrs.frozen
class TbInput:
    rank: int
    tb_id: int
    send: int
    recv: int
    chan: int
    trans: tuple[Transmission, ...]


@attrs.define
class _Tb:
    uid: int
    rank: int
    tb_id: int
    trans: Sequence[Transmission]
    send_conn: tuple[int, int, int] | None
    recv_conn: tuple[int, int, int] | None
    pc: int = 0
    piece: int = 0
    started: bool = False
    know: int = 0  # global knowledge (bits of `glob`), carried by messages
    lknow: int = 0  # local knowledge (bits of `local`, this rank's), through program order and flags
    queued: bool = False
    flags: list = attrs.field(factory=list)  # [(global knowledge, time, local knowledge)] of flagged transmissions
    blocked: str = ""
    time: float = 0.0


@attrs.define
class ExecutionResult:
    findings: list[Finding]
    memory: dict[int, Value]
    deadlock: bool
    blocked: list[tuple[int, int, int, int, str]]  # rank, tb id, step, line, reason
    leftover: dict[tuple[int, int, int], int]
    transmissions: int = 0
    messages: int = 0
    makespan: float = 0.0
    # taint analysis: per finding bit, (index in `findings` or -1, code); the transmissions each bit seeds;
    # and, for a run given seeds, the bits that reach an output location
    taint_findings: list[tuple[int, str]] = attrs.field(factory=list)
    taint_seeds: dict[tuple[int, int], int] = attrs.field(factory=dict)
    output_taint: int = 0


def _reduce(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    return a[0] | b[0], a[1] | b[1] | (a[0] & b[0])


class _Findings:
    """Every finding of the run, uncapped: the taint analysis judges each one (a finding whose value reaches
    no output becomes a warning), and only then does the report cap them by code *and* severity, so that a
    summary line keeps the severity of the findings it stands for. Each location is reported at most once,
    so the list is bounded by the program's size."""

    def __init__(self, mode: str) -> None:
        self.out: list[Finding] = []
        self.mode = mode

    def add(self, code: str, message: str, **where: object) -> int:
        """Record a finding; its index in `out`."""
        self.out.append(Finding(code, message, where={"mode": self.mode, **where}))
        return len(self.out) - 1

    def close(self) -> list[Finding]:
        return self.out


def execute(tbs: Sequence[TbInput], geometry: Geometry, nchannels: int, capacity: int | None,
            initial: Mapping[int, Value] | None = None, data: bool = True, split: int | None = None,
            timing: dict[tuple[int, int], tuple[float, float]] | None = None,
            rng: random.Random | None = None, seeds: dict[tuple[int, int], int] | None = None,
            outputs: frozenset[int] = frozenset(),
            occupy: Mapping[tuple[int, int, int], tuple[Any, tuple[tuple[Hashable, Any], ...]]] | None = None,
            zero: Any = 0.0, order: Callable[[Any], Any] | None = None, trace: list[int] | None = None,
            replay: Sequence[int] | None = None) -> ExecutionResult:
    """Run the program (see `_run`). Races are first decided with local knowledge; the pairs it leaves
    unordered make a second, identical run that also carries their global bits (module docstring). A
    run given `seeds` (the taint analysis) uses only values, never its race findings."""
    state = rng.getstate() if rng is not None else None
    unordered: set[tuple[int, int]] = set()
    run = _run(tbs, geometry, nchannels, capacity, initial, data, split, timing, rng, seeds, outputs, occupy,
               zero, order, trace, replay, None if seeds is not None else unordered, {})
    if not unordered:
        return run
    glob = {key: n for n, key in enumerate(sorted(unordered))}
    again = None
    if rng is not None and state is not None:
        again = random.Random()
        again.setstate(state)
    return _run(tbs, geometry, nchannels, capacity, initial, data, split, timing, again, seeds, outputs, occupy,
                zero, order, trace, replay, None, glob)


def _run(tbs: Sequence[TbInput], geometry: Geometry, nchannels: int, capacity: int | None,
         initial: Mapping[int, Value] | None, data: bool, split: int | None,
         timing: dict[tuple[int, int], tuple[float, float]] | None, rng: random.Random | None,
         seeds: dict[tuple[int, int], int] | None, outputs: frozenset[int],
         occupy: Mapping[tuple[int, int, int], tuple[Any, tuple[tuple[Hashable, Any], ...]]] | None,
         zero: Any, order: Callable[[Any], Any] | None, trace: list[int] | None, replay: Sequence[int] | None,
         unordered: set[tuple[int, int]] | None,
         glob: dict[tuple[int, int], int]) -> ExecutionResult:
    """Run the program; `capacity` is the FIFO size in messages (None: unbounded), a message being one
    step's transfer, or with `split` (the runtime's maxAllowedCount at some buffer size, `messages.py`) each
    piece of at most `split` chunks of it: split=1 is the worst case of large buffers, where every chunk of
    a step fills half the Simple FIFO. With `data`, also track values, accesses and races (otherwise
    only progress, for the deadlock checks). `timing` maps a link (src, dst) to (latency, time per chunk)
    for the alpha-beta estimate: a link carries one chunk at a time, in the order of this run. With `rng`,
    thread blocks are interleaved at random, one chunk at a time (for testing that results do not depend
    on the order when no race is reported). `occupy` (instead of `timing`) maps a connection (src, dst,
    channel) to (latency, ((resource, time per chunk), ...)): a chunk leaves when its thread block is ready
    and every resource it crosses (the link, the channel, a switch group, ...) is free, holds each for its
    time, and arrives the slowest of them plus the latency later. Times may be any ordered numbers that add
    (the sweep passes exact affine ones, `smtcoll.sweep.model`); every clock starts at `zero` (0 of that
    number type: an integer 0 keeps a run on integers exact). `order` maps such a time to the key the timed
    run serves departures by (`_StepOrder`); by default an `Affine`'s growth then value, any other number
    itself. A timed run appends the thread blocks it serves, in order, to `trace`; given `replay` (such a
    trace) it serves them in that order instead of choosing (`_Replay`). `unordered` (the first run):
    collects the (tb, transmission) pairs whose order to a later
    access local knowledge does not decide; `glob`: a global bit for each such transmission (the second
    run)."""
    geo = geometry
    per_message = split if split is not None else 1 << 30  # chunks per FIFO message (cnt < 2^16)
    report = _Findings(geo.mode)
    by_rank: dict[int, dict[int, _Tb]] = {}
    states: list[_Tb] = []
    for uid, t in enumerate(tbs):
        send_conn = (t.rank, t.send, t.chan) if t.send >= 0 and 0 <= t.chan < nchannels else None
        recv_conn = (t.recv, t.rank, t.chan) if t.recv >= 0 and 0 <= t.chan < nchannels else None
        st = _Tb(uid, t.rank, t.tb_id, t.trans, send_conn, recv_conn, time=zero)
        states.append(st)
        by_rank.setdefault(t.rank, {})[t.tb_id] = st

    # --- contended locations, and the local bit of each transmission touching one (-1: none); rank by rank,
    # since a rank's locations are touched by its own thread blocks only. Pieces are recomputed when they
    # run rather than stored (two million transmissions at 1024 ranks).
    local: list[array[int]] = [array("q") for _ in states]
    contended: set[int] = set()
    if data:
        for st in states:
            for tr in st.trans:
                _bounds(st, tr, geo, report)
        for group in _by_rank(states).values():
            touched: dict[int, int] = {}  # loc -> uid of the only tb touching it, or -1 when several
            written: set[int] = set()
            for st in group:
                for tr in st.trans:
                    for reads, writes in _pieces(st.rank, tr, geo):
                        for loc in reads:
                            if touched.setdefault(loc, st.uid) != st.uid:
                                touched[loc] = -1
                        for loc in writes:
                            written.add(loc)
                            if touched.setdefault(loc, st.uid) != st.uid:
                                touched[loc] = -1
            mine = {loc for loc, u in touched.items() if u == -1 and loc in written}
            contended |= mine
            n = 0
            for st in group:
                bits = local[st.uid]
                for tr in st.trans:
                    hit = bool(mine) and any(loc in mine for reads, writes in _pieces(st.rank, tr, geo)
                                       for loc in reads + writes)
                    bits.append(n if hit else -1)
                    n += hit
    hits, pending = _flag_hits(states, by_rank)

    memory: dict[int, Value] = {}
    if data:
        memory.update(initial if initial is not None else geo.initial())
    last_write: dict[int, tuple[int, int]] = {}  # loc -> (uid, transmission index)
    reads_since: dict[int, list[tuple[int, int]]] = {}
    reported_locs: set[int] = set()
    # taint: a bit per finding about data (race, uninitialized read, double count); the transmissions whose
    # results it may change seed it; a second run with `seeds` follows the bits through memory and messages
    loc_bits: dict[int, int] = {}
    taint_findings: list[tuple[int, str]] = []
    taint_seeds: dict[tuple[int, int], int] = {}
    taint: dict[int, int] = {}

    def seed(bit: int, *keys: tuple[int, int]) -> None:
        for key in keys:
            taint_seeds[key] = taint_seeds.get(key, 0) | (1 << bit)

    def new_bit(index: int, code: str) -> int:
        taint_findings.append((index, code))
        return len(taint_findings) - 1
    fifos: dict[tuple[int, int, int], deque] = {}
    in_flight: dict[tuple[int, int, int], int] = {}  # messages with pieces still in the FIFO
    recv_waiters: dict[tuple[int, int, int], list[_Tb]] = {}
    send_waiters: dict[tuple[int, int, int], list[_Tb]] = {}
    flag_waiters: dict[tuple[int, int], list[_Tb]] = {}
    link_free: dict[tuple[int, int], float] = {}
    res_free: dict[Hashable, Any] = {}

    def departure(st: _Tb) -> Any:
        # the earliest its next chunk can move: its clock, the message it receives, the resources it holds
        t = st.time
        if st.pc >= len(st.trans) or occupy is None:
            return t
        tr = st.trans[st.pc]
        if tr.receives and st.recv_conn is not None:
            fin = fifos.get(st.recv_conn)
            if fin:
                t = max(t, fin[0][3])
        if tr.sends and st.send_conn is not None and st.send_conn in occupy:
            t = max([t] + [res_free.get(res, 0) for res, _ in occupy[st.send_conn][1]])
        return t

    # whose departure a claimed resource (`_StepOrder.claimed`) or a message into an empty FIFO moves
    # (`_StepOrder.refresh`)
    holds: dict[int, tuple[Hashable, ...]] = {}
    receivers: dict[tuple[int, int, int], list[_Tb]] = {}
    if occupy is not None:
        for st in states:
            if st.send_conn is not None and st.send_conn in occupy:
                holds[st.uid] = tuple(res for res, _ in occupy[st.send_conn][1])
            if st.recv_conn is not None:
                receivers.setdefault(st.recv_conn, []).append(st)
    ready: deque[_Tb] | _StepOrder | _Replay
    if occupy is None:
        ready = deque(states)
    elif replay is not None:
        ready = _Replay(states, replay)
    else:
        ready = _StepOrder(states, departure, order, holds)
    for st in states:
        st.queued = True
    done_trans = 0
    messages = 0

    def wake(waiters: dict, key: object) -> None:
        for w in waiters.pop(key, ()):
            if not w.queued:
                w.queued = True
                ready.append(w)

    def race(loc: int, st: _Tb, tr: Transmission, other: tuple[int, int], kind: str) -> None:
        if loc in loc_bits:
            seed(loc_bits[loc], (st.uid, st.pc), other)
        if loc in reported_locs:
            return
        reported_locs.add(loc)
        rank, name = geo.name(loc)
        o = states[other[0]]
        otr = o.trans[other[1]]
        first, second = {"rw": ("writes", "reads"), "ww": ("writes", "writes"), "wr": ("reads", "writes")}[kind]
        index = report.add("race", f"{name} on gpu {rank}: tb {o.tb_id} step {otr.first} (line {otr.line}) {first} it "
                           f"and tb {st.tb_id} step {tr.first} {second} it, with no happens-before order between them "
                           "(no dependency or message chain orders them)", gpu=rank, tb=st.tb_id, step=tr.first,
                           line=tr.line)
        loc_bits[loc] = new_bit(index, "race")
        # the location itself stays racy for the rest of the run: the detector compares a write with the last
        # one only, so later writes of either racer are not all reported (key (-1, loc))
        seed(loc_bits[loc], (st.uid, st.pc), other, (-1, loc))

    def ordered(st: _Tb, other: tuple[int, int]) -> bool:
        """Does `st` know that transmission `other` (of another tb of its rank) completed?"""
        if (st.lknow >> local[other[0]][other[1]]) & 1:
            return True
        g = glob.get(other, -1) if glob else -1
        if g >= 0 and (st.know >> g) & 1:
            return True
        if unordered is not None:
            unordered.add(other)
        return False

    def access(st: _Tb, j: int, tr: Transmission, reads: tuple[int, ...], writes: tuple[int, ...]) -> None:
        me = (st.uid, j)
        uid = st.uid
        for loc in reads:
            if loc not in contended:
                continue
            lw = last_write.get(loc)
            if lw is not None and lw[0] != uid and not ordered(st, lw):
                race(loc, st, tr, lw, "rw")
            reads_since.setdefault(loc, []).append(me)
        for loc in writes:
            if loc not in contended:
                continue
            lw = last_write.get(loc)
            if lw is not None and lw[0] != uid and not ordered(st, lw):
                race(loc, st, tr, lw, "ww")
            for r in reads_since.pop(loc, ()):
                if r[0] != uid and not ordered(st, r):
                    race(loc, st, tr, r, "wr")
                    if unordered is None:  # the first run asks about every read (the second may ask them all)
                        break
            last_write[loc] = me

    def read(st: _Tb, tr: Transmission, loc: int) -> Value:
        v = memory.get(loc)
        if v is None and loc in loc_bits:
            seed(loc_bits[loc], (st.uid, st.pc))
        if v is None and loc not in reported_locs:
            reported_locs.add(loc)
            rank, name = geo.name(loc)
            loc_bits[loc] = new_bit(-2, "read-before-write")
            seed(loc_bits[loc], (st.uid, st.pc))
            index = report.add("read-before-write", f"tb {st.tb_id} step {tr.first} reads {name} on gpu {rank} before "
                               "anything was written there (uninitialized data)",
                               gpu=rank, tb=st.tb_id, step=tr.first, line=tr.line)
            taint_findings[loc_bits[loc]] = (index, "read-before-write")
        return v

    def dup_check(st: _Tb, tr: Transmission, prior: int, after: Value) -> None:
        if after is not None and after[1] & ~prior:
            seed(new_bit(-2, "double-count"), (st.uid, st.pc))
            index = report.add("double-count", f"tb {st.tb_id} step {tr.first} on gpu {st.rank} adds contributions "
                               "that are already part of the value (a reduction counted twice)",
                               gpu=st.rank, tb=st.tb_id, step=tr.first, line=tr.line)
            taint_findings[-1] = (index, "double-count")

    def run(st: _Tb) -> None:
        nonlocal done_trans, messages
        trans = st.trans
        while st.pc < len(trans):
            tr = trans[st.pc]
            if not st.started:
                if tr.type not in _KNOWN:
                    st.blocked = f"step type {tr.type!r} stops the thread block"
                    return
                gained = lgained = 0
                start = st.time
                mine = hits[st.uid][st.pc] if tr.deps else ()
                for (depid, deps), (target_uid, index) in zip(tr.deps, mine):
                    if target_uid < 0:
                        st.blocked = f"waits on thread block {depid}, which does not exist"
                        return
                    flags = states[target_uid].flags
                    if index < 0 or index >= len(flags):  # never flagged, or not yet
                        st.blocked = f"waits for tb {depid} to flag step {deps}"
                        if index >= 0:
                            flag_waiters.setdefault((st.rank, depid), []).append(st)
                        return
                    know, time, lknow = flags[index]
                    gained |= know
                    lgained |= lknow
                    start = max(start, time)
                for target_uid, index in mine:  # every wait is met: a flag read by its last waiter is dropped
                    left = pending[target_uid]
                    left[index] -= 1
                    if not left[index]:
                        flags = states[target_uid].flags
                        flags[index] = (0, flags[index][1], 0)
                st.know |= gained
                st.lknow |= lgained
                st.time = start
                st.started = True
            while st.piece < tr.cnt:
                fin = fout = None
                if tr.receives:
                    if st.recv_conn is None:
                        st.blocked = "receives on a channel without a connection"
                        return
                    fin = fifos.get(st.recv_conn)
                    if not fin:
                        st.blocked = f"waits for a message from gpu {st.recv_conn[0]} on channel {st.recv_conn[2]}"
                        recv_waiters.setdefault(st.recv_conn, []).append(st)
                        return
                if tr.sends:
                    if st.send_conn is None:
                        st.blocked = "sends on a channel without a connection"
                        return
                    fout = fifos.setdefault(st.send_conn, deque())
                    full = capacity is not None and in_flight.get(st.send_conn, 0) >= capacity
                    if full and st.piece % per_message == 0:
                        st.blocked = (f"waits for a free FIFO slot to gpu {st.send_conn[1]} on channel "
                                      f"{st.send_conn[2]} (capacity {capacity})")
                        send_waiters.setdefault(st.send_conn, []).append(st)
                        return
                incoming: Value = None
                tin = 0
                if fin is not None:
                    assert st.recv_conn is not None  # fin is the FIFO of this connection (checked above)
                    incoming, k, last, arrival, tin = fin.popleft()
                    st.know |= k
                    if arrival > st.time:
                        st.time = arrival
                    if last:  # the last piece of its message frees the message's slots
                        in_flight[st.recv_conn] -= 1
                        wake(send_waiters, st.recv_conn)
                outgoing: Value = None
                tout = 0
                if data:
                    reads, writes = _piece(st.rank, tr, geo, st.piece)
                    if tr.type == "cpy" and reads == writes:
                        # a self-copy after in-place aliasing rewrites the bytes that are there: a read only
                        access(st, st.pc, tr, reads, ())
                    else:
                        access(st, st.pc, tr, reads, writes)
                    outgoing = _effect(tr.type, reads, writes, incoming, memory, st, tr, read, dup_check)
                    if seeds is not None:
                        tout = seeds.get((st.uid, st.pc), 0) | (tin if fin is not None else 0)
                        for loc in reads:
                            tout |= taint.get(loc, 0)
                        for loc in writes:
                            taint[loc] = tout | seeds.get((-1, loc), 0)
                st.piece += 1
                if fout is not None:
                    assert st.send_conn is not None  # fout is the FIFO of this connection (checked above)
                    k = st.know
                    if glob and st.piece == tr.cnt and (st.uid, st.pc) in glob:
                        k |= 1 << glob[(st.uid, st.pc)]
                    arrival = 0.0
                    if occupy is not None:
                        latency, held = occupy[st.send_conn]
                        depart = max([st.time] + [res_free.get(res, 0) for res, _ in held])
                        busy = max(hold for _, hold in held)
                        for res, hold in held:
                            res_free[res] = depart + hold
                        st.time = depart + busy
                        arrival = depart + busy + latency
                        if isinstance(ready, _StepOrder):
                            dep = ready.dep
                            for res, _ in held:
                                free = res_free[res]
                                # the queued senders this claim holds back (the run's innermost loop)
                                raised = [w for w in ready.senders[res].values() if free > dep[w.uid]]
                                if raised:
                                    ready.claimed(raised, free)
                    elif timing is not None:
                        link = (st.rank, st.send_conn[1])
                        alpha, per = timing.get(link, (0.0, 1.0))
                        depart = max(st.time, link_free.get(link, 0.0))
                        link_free[link] = st.time = depart + per
                        arrival = depart + per + alpha
                    fout.append((outgoing, k, st.piece == tr.cnt or st.piece % per_message == 0, arrival, tout))
                    if len(fout) == 1 and isinstance(ready, _StepOrder):  # a new head: its receiver's key moves
                        for w in receivers.get(st.send_conn, ()):
                            if w.queued:
                                ready.refresh(w)
                    if (st.piece - 1) % per_message == 0:
                        in_flight[st.send_conn] = in_flight.get(st.send_conn, 0) + 1
                    messages += 1
                    wake(recv_waiters, st.send_conn)
                if (rng is not None or occupy is not None) and st.piece < tr.cnt:
                    requeue(st)
                    return
            if glob and (st.uid, st.pc) in glob:
                st.know |= 1 << glob[(st.uid, st.pc)]
            if data:
                bit = local[st.uid][st.pc]
                if bit >= 0:
                    st.lknow |= 1 << bit
            if tr.hasdep:
                if pending[st.uid][len(st.flags)]:
                    st.flags.append((st.know, st.time, st.lknow))
                else:  # nobody waits for this flag
                    st.flags.append((0, st.time, 0))
                wake(flag_waiters, (st.rank, st.tb_id))
            st.pc += 1
            st.piece = 0
            st.started = False
            done_trans += 1
            if (rng is not None or occupy is not None) and st.pc < len(trans):
                requeue(st)
                return
        st.blocked = ""

    def requeue(st: _Tb) -> None:
        if not st.queued:
            st.queued = True
            ready.append(st)

    while ready:
        if rng is not None and isinstance(ready, deque):
            ready.rotate(-rng.randrange(len(ready)))
        st = ready.popleft()
        if trace is not None:
            trace.append(st.uid)
        st.queued = False
        run(st)

    blocked = [(st.rank, st.tb_id, st.trans[st.pc].first, st.trans[st.pc].line, st.blocked)
               for st in states if st.pc < len(st.trans)]
    leftover = {conn: len(q) for conn, q in sorted(fifos.items()) if q}
    reached = 0
    for loc in outputs:
        reached |= taint.get(loc, 0)
    return ExecutionResult(report.close(), memory, bool(blocked), blocked, leftover, done_trans, messages,
                           max((st.time for st in states), default=zero), taint_findings, taint_seeds, reached)


_KNOWN = frozenset({"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re"})


class _Replay:
    """The ready thread blocks of a timed run served in the order an earlier run of the same program served
    them (its `trace`). What a thread block does when served (wait, send, receive) never depends on the
    times, so the same order makes the same run on other numbers: the sweep records the order once and
    replays it at each buffer size (`smtcoll.sweep.cost.predict`)."""

    def __init__(self, states: Sequence[_Tb], order: Sequence[int]) -> None:
        self.states = states
        self.order = order
        self.pos = 0

    def append(self, st: _Tb) -> None:
        pass

    def popleft(self) -> _Tb:
        st = self.states[self.order[self.pos]]
        self.pos += 1
        if not st.queued:  # the recorded run differed from this one: a caller's error, not the program's
            raise AssertionError(f"replayed order serves thread block {st.uid}, which is not ready")
        return st

    def __len__(self) -> int:
        return len(self.order) - self.pos


@attrs.define
class _Raised:
    """Thread blocks one claim held back (`_StepOrder.claimed`): their keys in order, the next to serve."""

    raised: dict[int, _Tb]  # uid -> thread block
    keys: list[tuple[tuple[Any, Any], int, int, int]]
    pos: int = 0


class _StepOrder:
    """The ready thread blocks of a timed run (`occupy`), one chunk at a time, earliest departure first
    (then the step of their next transmission, then their place): a resource is claimed in the order its
    chunks come, as the hardware serves them. A claim never goes back in time (no backfilling), so an
    order far from time order serializes: NCCL's all-pairs Alltoall on an NVSwitch ran at a third of the
    port's speed when the order was the step alone. The sweep runs it once on times that compare by their
    growth with the buffer size first and then their value (a maximum takes its fastest growing term): the
    order of the largest sizes, the same for every size, which it then replays at each size (`_Replay`), so
    that its times stay a maximum of lines in the size (smtcoll.sweep.cost). A key changes only when its
    thread block runs, a
    resource its next send holds is claimed (`claimed`, for the senders an index per resource names), or a
    message reaches its empty FIFO (`refresh`), so every queued key is current (a heap of current keys;
    replaced entries are skipped when they surface), and a pop costs a logarithm, not a pass over the
    queue. Keys cannot be refreshed lazily at pop time instead: a departure grows by value first while
    keys order by growth first, so a claim can lower a key."""

    def __init__(self, states: Sequence[_Tb], departure: Callable[[_Tb], Any],
                 order: Callable[[Any], Any] | None = None, holds: Mapping[int, tuple[Hashable, ...]] | None = None
                 ) -> None:
        # entries (key..., sequence number, a thread block or a _Raised group); an entry of a thread block
        # whose key has changed since is skipped when it surfaces
        self.heap: list[tuple[Any, ...]] = []
        self.live: dict[int, tuple[tuple[Any, Any], int, int, int]] = {}
        self.dep: dict[int, Any] = {}  # the departure each queued key was made of
        self.departure = departure
        self.order = order
        self.seq = 0
        # per resource, the queued thread blocks whose next transmission sends on a connection holding it
        self.holds = holds if holds is not None else {}
        self.senders: dict[Hashable, dict[int, _Tb]] = {res: {} for rs in self.holds.values() for res in rs}
        for st in states:
            self.append(st)

    @staticmethod
    def _when(t: Any) -> tuple[Any, Any]:
        return (t.s, t.v) if hasattr(t, "s") and hasattr(t, "v") else (0, t)

    def _key(self, st: _Tb) -> tuple[tuple[Any, Any], int, int, int]:
        step = st.trans[st.pc].first if st.pc < len(st.trans) else 1 << 30
        t = self.departure(st)
        self.dep[st.uid] = t
        when = self.order(t) if self.order is not None else self._when(t)
        return when, step, st.piece, st.uid

    def _push(self, key: tuple[tuple[Any, Any], int, int, int], item: _Tb | _Raised) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (*key, self.seq, item))

    def append(self, st: _Tb) -> None:
        key = self._key(st)
        self.live[st.uid] = key
        self._push(key, st)
        if st.pc < len(st.trans) and st.trans[st.pc].sends:
            for res in self.holds.get(st.uid, ()):
                self.senders[res][st.uid] = st

    def _served(self, st: _Tb) -> _Tb:
        del self.live[st.uid]
        for res in self.holds.get(st.uid, ()):
            self.senders[res].pop(st.uid, None)
        return st

    def refresh(self, st: _Tb) -> None:
        """`st` is queued and something its key reads changed."""
        key = self._key(st)
        if self.live.get(st.uid) != key:
            self.live[st.uid] = key
            self._push(key, st)

    def claimed(self, raised: list[_Tb], free: Any) -> None:
        """The thread blocks `raised` are queued, their next transmissions send, and a resource their
        connections hold is now free at `free` only, later than their departures: each departure is a
        maximum of which that resource is one term, so it becomes `free` (the key `refresh` would compute,
        without recomputing the maximum). Their keys now differ in step, piece and place only: one heap
        entry, their least, stands for all of them (`_Raised`), so a claim that holds back a whole switch
        port's senders costs one push, and a member raised again before it surfaces costs none."""
        when = self.order(free) if self.order is not None else self._when(free)
        keys = []
        for st in raised:
            self.dep[st.uid] = free
            key = (when, st.trans[st.pc].first, st.piece, st.uid)
            self.live[st.uid] = key
            keys.append(key)
        keys.sort()
        self._next(_Raised({st.uid: st for st in raised}, keys))

    def _next(self, group: _Raised) -> None:
        """Push `group`'s least member whose key is still the one the group gave it."""
        while group.pos < len(group.keys):
            key = group.keys[group.pos]
            if self.live.get(key[3]) == key:
                self._push(key, group)
                return
            group.pos += 1

    def popleft(self) -> _Tb:
        while True:
            entry = heapq.heappop(self.heap)
            item = entry[-1]
            key = entry[:4]
            if isinstance(item, _Raised):
                group = item
                st = group.raised[key[3]]
                group.pos += 1
                valid = self.live.get(st.uid) == key
                if valid:
                    self._served(st)
                self._next(group)
                if valid:
                    return st
            elif self.live.get(item.uid) == key:
                return self._served(item)

    def __len__(self) -> int:
        return len(self.live)


def _dups(v: Value) -> int:
    return v[1] if v is not None else 0


def _by_rank(states: Sequence[_Tb]) -> dict[int, list[_Tb]]:
    groups: dict[int, list[_Tb]] = {}
    for st in states:
        groups.setdefault(st.rank, []).append(st)
    return groups


def _flag_hits(states: Sequence[_Tb], by_rank: dict[int, dict[int, _Tb]]
               ) -> tuple[list[list[tuple[tuple[int, int], ...]]], list[list[int]]]:
    """Per tb and transmission, for each dependency (target tb uid or -1 when there is none, index of the
    flag it waits for among the target's flagged transmissions or -1 when none will do): the first flagged
    transmission whose counter reaches `deps` (counters only grow along a tb). And per tb, how many
    waits each of its flags serves."""
    counters = [[tr.counter for tr in st.trans if tr.hasdep] for st in states]
    pending = [[0] * len(c) for c in counters]
    hits: list[list[tuple[tuple[int, int], ...]]] = []
    for st in states:
        rows: list[tuple[tuple[int, int], ...]] = []
        for tr in st.trans:
            row = []
            for depid, deps in tr.deps:
                target = by_rank[st.rank].get(depid)
                if target is None:
                    row.append((-1, -1))
                    continue
                index = bisect.bisect_left(counters[target.uid], deps)
                if index == len(counters[target.uid]):
                    index = -1
                else:
                    pending[target.uid][index] += 1
                row.append((target.uid, index))
            rows.append(tuple(row))
        hits.append(rows)
    return hits, pending


Access = tuple[tuple[int, ...], tuple[int, ...]]  # (locations read, locations written) of one piece


def _bounds(st: _Tb, tr: Transmission, geo: Geometry, report: _Findings) -> None:
    """Report the out-of-bounds offsets of a transmission."""
    t = tr.type
    rank = st.rank
    if tr.cnt > 0:
        for buf, offs, used in ((tr.srcbuf, tr.srcoffs, t in _READS_SRC), (tr.dstbuf, (tr.dstoff,), t in _WRITES_DST)):
            if not used:
                continue
            size = geo.size(rank, buf)
            for off in offs:
                if off < 0 or off + tr.cnt > size:
                    report.add("out-of-bounds", f"tb {st.tb_id} step {tr.first} on gpu {rank} touches {buf}[{off}.."
                                                f"{off + tr.cnt - 1}] but the {geo.mode} {buf} buffer has "
                                                f"{count(size, 'chunk')} for coll={geo.coll} "
                                                f"(nchunksperloop={geo.chunks})",
                               gpu=rank, tb=st.tb_id, step=tr.first, line=tr.line)


_READS_SRC = frozenset({"s", "rrs", "rrc", "rrcs", "cpy", "re"})
_WRITES_DST = frozenset({"r", "rcs", "rrc", "rrcs", "cpy", "re"})


def _piece(rank: int, tr: Transmission, geo: Geometry, c: int) -> Access:
    """(reads, writes) locations of piece c of a transmission."""
    t = tr.type
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    if t in _READS_SRC:
        reads = tuple(geo.loc(rank, tr.srcbuf, off + c) for off in tr.srcoffs)
    if t in _WRITES_DST:
        dst = geo.loc(rank, tr.dstbuf, tr.dstoff + c)
        writes = (dst,)
        if t == "re":
            reads = (dst, *reads)
    return reads, writes


def _pieces(rank: int, tr: Transmission, geo: Geometry) -> list[Access]:
    return [_piece(rank, tr, geo, c) for c in range(tr.cnt)]


def _effect(t: str, reads: tuple[int, ...], writes: tuple[int, ...], incoming: Value, memory: dict[int, Value],
            st: _Tb, tr: Transmission, read, dup_check) -> Value:
    """Apply one piece; return what it sends (None when it sends nothing or an undefined value)."""
    if t == "s":
        return read(st, tr, reads[0])
    if t == "r" or t == "rcs":
        memory[writes[0]] = incoming
        return incoming
    if t == "cpy":
        memory[writes[0]] = read(st, tr, reads[0])
        return None
    # reductions
    acc = read(st, tr, reads[0])
    if t in ("rrs", "rrc", "rrcs"):
        value = _reduce(incoming, acc)
        dup_check(st, tr, _dups(incoming) | _dups(acc), value)
    else:  # re: dst (first read) with every fused source
        value = acc
        for loc in reads[1:]:
            other = read(st, tr, loc)
            prior = _dups(value) | _dups(other)
            value = _reduce(value, other)
            dup_check(st, tr, prior, value)
    if writes:
        memory[writes[0]] = value
    return value
