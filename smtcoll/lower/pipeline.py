"""The entry point `lower`: the seven stages in order, then the `Program` with its `<step>` elements."""

from __future__ import annotations

from collections import Counter

import attrs

from smtcoll.check.schedule import check_schedule
from smtcoll.lower.dependencies import dependencies
from smtcoll.lower.fusion import fuse
from smtcoll.lower.implied import drop_implied
from smtcoll.lower.instances import replicate
from smtcoll.lower.layout import Layout, recognize
from smtcoll.lower.ops import LOp
from smtcoll.lower.options import SPELLING, CannotLower, LowerOptions, RejectedSchedule, check_options, runtimes_for
from smtcoll.lower.spread import peer_groups, spread
from smtcoll.lower.storage import Aliasing, allocate_scratch, plan
from smtcoll.lower.threadblocks import Tb, assign_tbs
from smtcoll.lower.transfers import transfers
from smtcoll.model import Schedule
from smtcoll.msccl.program import Gpu, Op, Program, ThreadBlock
from smtcoll.msccl.runtime import (
    FIFO_MESSAGES,
    FUSED_TYPES,
    LEGACY_DEFAULT_MAX_BYTES,
    MAX_CHANNELS,
    MAX_DEPID,
    MAX_NODES,
    MAX_STEPS,
    MAX_TBS,
    MAX_TBS_PER_CHANNEL,
)
from smtcoll.msccl.writer import safe_name


@attrs.frozen
class Lowered:
    program: Program
    layout: Layout
    runtimes: tuple[str, ...]  # the runtimes the file is written for
    verify_collective: object  # what `check_program_file(collective=...)` needs: a name or a Collective
    stats: dict[str, int]


def lower(schedule: Schedule, options: LowerOptions = LowerOptions()) -> Lowered:
    """The MSCCL program of `schedule`; raises `RejectedSchedule` (exit 1) when the schedule checker
    rejects it and `CannotLower` (exit 2) when the runtimes cannot express it."""
    check_options(options)
    report = check_schedule(schedule)
    if report.verdict != "ok":
        listed = "; ".join(f"{v.code}: {v.message}" + (f" ({v.place()})" if v.place() else "")
                           for v in report.violations[:3])
        more = f" and {len(report.violations) - 3} more" if len(report.violations) > 3 else ""
        raise RejectedSchedule(f"the schedule checker rejects this schedule, refusing to lower it: {listed}{more}")
    count = options.instances
    coll = schedule.collective
    layout = recognize(coll)
    targets = runtimes_for(layout.kind, options.runtime)
    if "legacy" in targets and options.max_bytes == 0:
        raise CannotLower("--max-buffer-bytes 0 means no limit for the executor but never selected for the legacy "
                          "runtime; give a positive value or --runtime executor")
    modes = {"outofplace": [False], "inplace": [True], "both": [False, True]}[options.mode]
    items = transfers(schedule)
    base = plan(schedule, layout, items, modes)
    limits = {"steps": min(MAX_STEPS[t] for t in targets), "tbs": min(MAX_TBS[t] for t in targets)}
    alias = Aliasing(_scaled(layout, count))
    longest = _busiest_connection(base)
    segments = 1
    # a rank with more peers than a channel's thread blocks spreads them over channels (spread.py)
    groups = peer_groups(base, MAX_TBS_PER_CHANNEL)
    if count * groups > MAX_CHANNELS:
        raise CannotLower(f"a rank has more than {MAX_TBS_PER_CHANNEL * (groups - 1)} peers: at most "
                          f"{MAX_TBS_PER_CHANNEL} sending and {MAX_TBS_PER_CHANNEL} receiving thread blocks per "
                          f"channel need {groups} channels per instance, {count * groups} for {count} instances; "
                          f"the runtimes allow {MAX_CHANNELS} (use fewer --instances)")
    # a fused thread block holds the messages of two connections: fusion only where that fits
    if groups == 1 and (2 * longest <= limits["steps"] or count >= MAX_CHANNELS):
        if options.fuse:
            base = fuse(base, FIFO_MESSAGES[options.protocol])
        base, scratch = allocate_scratch(base)
        by_rank = _threadblocks(base, count, 1, alias, modes)
        if _longest(by_rank) > limits["steps"] and count < MAX_CHANNELS:  # the nops made it too long
            base, scratch = allocate_scratch(plan(schedule, layout, items, modes))
            segments = 2
    else:
        base, scratch = allocate_scratch(base)
        # a first guess with room for the nops that more thread blocks bring, then one more at a time
        segments = max(2 if groups == 1 else 1, -(-longest // max(1, limits["steps"] * 3 // 4)))
    if segments > 1 or groups > 1:
        # too long for one thread block per connection: spread each connection over more channels
        # (unfused: a fused thread block pairs two connections), the fewest that fit
        first = segments
        segments, by_rank = _spread_fit(base, count, first, alias, modes, groups, limits["steps"])
        if _most_waited(by_rank) > MAX_DEPID + 1 and _most_steps(by_rank) <= MAX_NODES:
            # depid cannot name every thread block waited for (and the readers can hold the rank's steps:
            # the tries below move operations, they never remove one): light connections on fewer channels
            # (`spread.fitted_segments`), then scratch values in slots of their own (a reused slot makes
            # its next writer wait for the last sender of the previous value: a sending thread block
            # waited for). Programs that fit keep the layout above.
            by_rank = {}
            segments, by_rank = _spread_fit(base, count, first, alias, modes, groups, limits["steps"], True)
            if _most_waited(by_rank) > MAX_DEPID + 1 and scratch:
                by_rank = {}
                base, scratch = allocate_scratch(plan(schedule, layout, items, modes), reuse=False)
                segments, by_rank = _spread_fit(base, count, first, alias, modes, groups, limits["steps"], True)
    legacy_only = targets == ("legacy",)
    executor_spelling, legacy_spelling = SPELLING[layout.kind]
    gpus = []
    max_steps = 0
    transfers_count = len(items)
    # at 1024 ranks the working operations are most of the memory: drop the base ones, and each rank's once
    # it is converted (`_xml_steps` unlinks a converted operation from its partner on another rank)
    base, items = [], []
    for rank in range(coll.ranks):
        tbs = by_rank.pop(rank, [])
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
                spread_note = (f" even with each connection spread over {segments} channels" if segments > 1
                               else "")
                raise CannotLower(f"rank {rank} thread block {i} needs {len(steps)} steps{spread_note}; the "
                                  f"{' and '.join(tight)} runtime allows {limits['steps']} per thread block{hint}")
            if i > MAX_DEPID and any(op.hasdep for op in mine):
                waited = sum(1 for _, ops in tbs if any(op.hasdep for op in ops))
                raise CannotLower(f"rank {rank} waits for {waited} of its thread blocks, but depid is an int8_t: "
                                  f"at most {MAX_DEPID + 1} can be waited for (use fewer --instances)")
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
        name, options.protocol, count * segments * groups, layout.nchunks * count, coll.ranks,
        legacy_spelling if legacy_only else executor_spelling,
        int(in_place), (int(options.mode in ("outofplace", "both")) if executor else None),
        min_bytes, max_bytes, None, None, gpus,
        attributes=("outofplace",) if executor else ())
    verify_collective: object = layout.kind
    if layout.kind == "custom":
        verify_collective = coll.with_chunks(count)  # the buffers hold exactly this collective, per instance
    stats = {"thread_blocks": sum(len(g.tbs) for g in gpus), "steps": program.steps, "max_tb_steps": max_steps,
             "scratch_chunks": max((g.s_chunks or 0) for g in gpus), "transfers": transfers_count,
             "nops": sum(1 for g in gpus for t in g.tbs for s in t.steps if s.type == "nop"),
             "fused": sum(1 for g in gpus for t in g.tbs for s in t.steps if s.type in FUSED_TYPES)}
    return Lowered(program, layout, targets, verify_collective, stats)


def _spread_fit(base: list[LOp], count: int, segments: int, alias: Aliasing, modes: list[bool], groups: int,
                steps: int, fitted: bool = False) -> tuple[int, dict[int, list[tuple[Tb, list[LOp]]]]]:
    """The fewest channels per connection, from `segments` up, whose thread blocks hold at most `steps`
    steps (the most channels when none does; the caller refuses that program)."""
    most = MAX_CHANNELS // (count * groups)
    by_rank: dict[int, list[tuple[Tb, list[LOp]]]] = {}
    for tried in range(min(segments, most), most + 1):
        segments = tried
        by_rank = {}  # the previous try's operations go before the next ones are made
        by_rank = _threadblocks(base, count, segments, alias, modes, groups, fitted)
        if _longest(by_rank) <= steps:
            break
    return segments, by_rank


def _threadblocks(base: list[LOp], count: int, segments: int, alias: Aliasing, modes: list[bool],
                  groups: int = 1, fitted: bool = False) -> dict[int, list[tuple[Tb, list[LOp]]]]:
    """Fresh operations for `count` instances, spread over `segments` channels per connection (`fitted`:
    each connection over the ones it needs) and a rank's peers over `groups` (spread.py), on thread blocks
    with their dependencies."""
    ops = replicate(base, count, fresh=True)
    spread(ops, segments, groups, fitted)
    by_rank = assign_tbs(ops)
    dependencies(ops, alias, modes)
    if _most_waited(by_rank) > MAX_DEPID + 1:  # more than depid names: drop the waits messages imply
        drop_implied(ops)
    _targets_first(by_rank)
    return by_rank


def _most_steps(by_rank: dict[int, list[tuple[Tb, list[LOp]]]]) -> int:
    """The most operations one rank holds: each is at least one XML node."""
    return max((sum(len(mine) for _, mine in tbs) for tbs in by_rank.values()), default=0)


def _most_waited(by_rank: dict[int, list[tuple[Tb, list[LOp]]]]) -> int:
    """The most thread blocks one rank waits for."""
    return max((sum(1 for _, mine in tbs if any(op.hasdep for op in mine)) for tbs in by_rank.values()), default=0)


def _targets_first(by_rank: dict[int, list[tuple[Tb, list[LOp]]]]) -> None:
    """`depid` is an int8_t: where a rank waits for a thread block numbered above MAX_DEPID (8 instances on a
    16-peer machine), number the thread blocks waited for first, each group in its order, so that up to
    MAX_DEPID + 1 of them fit. Only then: programs that fit keep their numbering. The waits are objects,
    so renumbering after `dependencies` changes no wait."""
    for tbs in by_rank.values():
        if not any(op.hasdep and op.tb > MAX_DEPID for _, mine in tbs for op in mine):
            continue
        tbs.sort(key=lambda entry: not any(op.hasdep for op in entry[1]))  # stable: each group keeps its order
        for new, (_, mine) in enumerate(tbs):
            for op in mine:
                op.tb = new


def _longest(by_rank: dict[int, list[tuple[Tb, list[LOp]]]]) -> int:
    """The most `<step>` elements of one thread block: its operations and the nops before those that
    wait for more than one thread block."""
    return max((len(mine) + sum(max(0, len(op.deps) - 1) for op in mine)
                for tbs in by_rank.values() for _, mine in tbs), default=0)


def _busiest_connection(base: list[LOp]) -> int:
    """The most messages one rank sends to, or receives from, one peer (unfused: one thread block each)."""
    counts: Counter[tuple[int, int, int]] = Counter()
    for op in base:
        if op.type == "s":
            counts[(op.rank, 0, op.send)] += 1
        elif op.recv >= 0:
            counts[(op.rank, 1, op.recv)] += 1
    return max(counts.values(), default=0)


def _scaled(layout: Layout, count: int) -> Layout:
    return attrs.evolve(layout, nchunks=layout.nchunks * count)


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
        op.partner = None  # converted: the partner still reaches this op through its own link, until its turn
    return steps


def _element_indices(tbs: list[tuple[Tb, list[LOp]]]) -> dict[int, int]:
    """id(op) -> its `s` (element index) once the nops before it are counted."""
    out: dict[int, int] = {}
    for _, mine in tbs:
        s = 0
        for op in mine:
            s += max(0, len(op.deps) - 1)
            out[id(op)] = s
            s += 1
    return out
