"""The parse-time rules of both MSCCL runtimes (docs/msccl-format.md, "Elements" / "Buffers and chunk geometry" /
"In place and out of place" / "Step types" / "Dependencies"), per runtime.

Each rule yields a `Finding` whose `rejects` names the runtimes that refuse the file (`parse-rule`), or,
for what the runtimes accept but then execute wrongly (channel 32, peers out of range, `depid` > 127,
offsets beyond `int16_t`), an error with its own code and no rejection.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from smtcoll import collectives
from smtcoll.msccl.program import (
    BUFFERS,
    RECV_TYPES,
    SEND_TYPES,
    STEP_ATTRS,
    STEP_TYPES,
    Finding,
    Gpu,
    Program,
    ThreadBlock,
)
from smtcoll.msccl.runtime import (
    EXEC,
    LEGACY,
    MAX_CHANNELS,
    MAX_COUNT,
    MAX_DEPID,
    MAX_INT16,
    MAX_NODES,
    MAX_REDUCE_FUSION,
    MAX_STEPS,
    MAX_SUBS,
    MAX_TBS,
    MAX_TBS_PER_CHANNEL,
    PROFILES,
    PROTOCOLS,
)
from smtcoll.text import count as count_of
from smtcoll.vocabulary import Severity

BOTH = frozenset({EXEC, LEGACY})
ONLY_EXEC, ONLY_LEGACY = frozenset({EXEC}), frozenset({LEGACY})

# what each runtime's parser accepts comes from its profile in msccl/runtime.py, shared with the lowering
LEGACY_COLLS, EXEC_COLLS = PROFILES[LEGACY].colls, PROFILES[EXEC].colls
LEGACY_ALGO_REQUIRED, EXEC_ALGO_REQUIRED = PROFILES[LEGACY].algo_required, PROFILES[EXEC].algo_required
# the limits (MAX_STEPS, MAX_TBS, ...) come from msccl/runtime.py, shared with the lowering
# Which buffer offsets the parser checks (mscclCheckBufferBounds), by step type.
CHECK_SRC = frozenset({"s", "rrs", "rrcs", "cpy", "re"})
CHECK_DST = frozenset({"r", "rcs", "rrcs", "cpy", "re"})


def _f(message: str, rejects: frozenset[str], code: str = "parse-rule", **where: object) -> Finding:
    return Finding(code, message, where=where, rejects=rejects)


def _err(code: str, message: str, severity: Severity = "error", **where: object) -> Finding:
    return Finding(code, message, where=where, rejects=frozenset(), severity=severity)


def is_complete(program: Program) -> bool:
    """All integers and names the semantics need are present (missing ones were reported)."""
    if None in (program.proto, program.nchannels, program.nchunksperloop, program.ngpus, program.coll,
                program.inplace):
        return False
    for g in program.gpus:
        if None in (g.id, g.i_chunks, g.o_chunks, g.s_chunks):
            return False
        for tb in g.tbs:
            if None in (tb.id, tb.send, tb.recv, tb.chan):
                return False
            if not all(op.complete for op in tb.steps):
                return False
    return True


def is_executable(program: Program) -> bool:
    """Every value the execution needs is in its range: known step types and buffers, `0 <= cnt < 72`,
    offsets and dependencies within `int16_t`. Otherwise the runtimes refuse the file (reported) and the
    semantic checks are not run."""
    for g in program.gpus:
        for tb in g.tbs:
            for op in tb.steps:
                if op.type not in STEP_TYPES or op.srcbuf not in BUFFERS or op.dstbuf not in BUFFERS:
                    return False
                if op.type != "nop" and not 0 <= (op.cnt or 0) < MAX_COUNT:
                    return False
                for v in (op.srcoff, op.dstoff, op.deps if (op.depid or -1) >= 0 else 0):
                    if v is None or not -MAX_INT16 - 1 <= v <= MAX_INT16:
                        return False
    return True


def parse_rule_findings(p: Program) -> list[Finding]:
    return list(_algo_rules(p)) + list(_gpu_rules(p))


def _algo_rules(p: Program) -> Iterator[Finding]:
    present = set(p.attributes)
    line = p.line
    for runtime, required in ((LEGACY, LEGACY_ALGO_REQUIRED), (EXEC, EXEC_ALGO_REQUIRED)):
        missing = [a for a in required if a not in present]
        if missing:
            yield _f(f"<algo> lacks {', '.join(missing)}, required by the {runtime} runtime", frozenset({runtime}),
                     line=line)
    if p.proto is not None and p.proto not in PROTOCOLS:
        yield _f(f"proto={p.proto!r} is not one of {', '.join(PROTOCOLS)}", BOTH, line=line)
    if p.coll is not None:
        rejects = frozenset(r for r, known in ((LEGACY, LEGACY_COLLS), (EXEC, EXEC_COLLS)) if p.coll not in known)
        if rejects:
            kind = collectives.by_spelling(p.coll)
            other = {r: getattr(kind, r) for r in sorted(rejects)} if kind is not None else {}
            hint = next((f" (the {'executor' if r == EXEC else 'legacy runtime'} spells it {v})"
                         for r, v in other.items() if v and v != p.coll), "")
            yield _f(f"coll={p.coll!r} is unknown to the {' and '.join(sorted(rejects))} runtime{hint}", rejects,
                     line=line)
    for name in ("ngpus", "nchunksperloop", "nchannels"):
        v = getattr(p, name)
        if v is not None and v < 1:
            yield _f(f"{name}={v} must be at least 1", BOTH, line=line)
    if p.nchannels is not None and p.nchannels > MAX_CHANNELS:
        yield _err("channel", f"nchannels={p.nchannels} exceeds the {MAX_CHANNELS} channels of NCCL", line=line)
    if p.nthreads is not None and (p.nthreads <= 0 or p.nthreads % 32):
        yield _f(f"nthreads={p.nthreads} must be a positive multiple of 32", ONLY_LEGACY, line=line)
    for name in ("inplace", "outofplace"):
        v = getattr(p, name)
        if v is not None and v not in (0, 1):
            yield _err("attribute-value", f"{name}={v}: the runtimes treat any non-zero value as 1", "warning",
                       line=line)
    if "outofplace" in present and not p.inplace and not p.outofplace:
        yield _err("never-selected", "inplace=0 and outofplace=0: the executor never selects this algorithm",
                   "warning", line=line)
    if "maxBytes" in present and p.max_bytes == 0:
        yield _err("max-bytes", "maxBytes=0 means no upper limit for the executor but an empty range (never "
                                "selected) for the legacy runtime", "warning", line=line)
    elif p.min_bytes is not None and p.max_bytes is not None and 0 < p.max_bytes < p.min_bytes:
        yield _err("max-bytes", f"minBytes={p.min_bytes} > maxBytes={p.max_bytes}: never selected", "warning",
                   line=line)
    copies = [g for g in p.gpus if g.copies]
    if copies:
        yield _err("copy-element", f"{count_of(sum(g.copies for g in copies), '<copy> element')} on "
                                   f"{count_of(len(copies), 'gpu')}: no "
                                   "runtime executes them, the program must not rely on them", "warning",
                   gpu=copies[0].id, line=copies[0].line)
    gpus = len(p.gpus)
    if gpus > MAX_SUBS:
        yield _f(f"<algo> has {gpus} <gpu> children; the runtimes' readers hold at most {MAX_SUBS} (MAX_SUBS)",
                 BOTH, line=line)


def _gpu_rules(p: Program) -> Iterator[Finding]:
    ngpus = p.ngpus if p.ngpus is not None else 0
    C = p.nchunksperloop
    seen_ids: dict[int, int] = {}
    # the legacy runtime's reader checks a rank's share of its collectives (the table's buffer split)
    kind = collectives.by_spelling(p.coll)
    legacy = kind is not None and kind.legacy is not None
    mul_in = ngpus if legacy and kind is not None and kind.input_share else 1
    mul_out = ngpus if legacy and kind is not None and kind.output_share else 1
    for g in p.gpus:
        where: dict[str, Any] = {"gpu": g.id, "line": g.line}
        missing = [n for n, v in (("id", g.id), ("i_chunks", g.i_chunks), ("o_chunks", g.o_chunks),
                                  ("s_chunks", g.s_chunks)) if v is None]
        if missing:
            yield _f(f"<gpu> lacks {', '.join(missing)}", BOTH, **where)
        if g.id is not None:
            if not 0 <= g.id < ngpus:
                yield _err("gpu-id", f"gpu id {g.id} is outside 0..{ngpus - 1} (ngpus={ngpus}); no rank runs it",
                           **where)
            elif g.id in seen_ids:
                yield _err("gpu-id", f"gpu {g.id} is defined twice (lines {seen_ids[g.id]} and {g.line})", **where)
            else:
                seen_ids[g.id] = g.line
        for name in ("i_chunks", "o_chunks", "s_chunks"):
            v = getattr(g, name)
            if v is not None and v < 0:
                yield _f(f"{name}={v} is negative", BOTH, **where)
        if C is not None and g.i_chunks is not None and g.o_chunks is not None:
            for name, v, mul in (("i_chunks", g.i_chunks, mul_in), ("o_chunks", g.o_chunks, mul_out)):
                if v != 0 and mul and v * mul != C:  # mul is 0 when ngpus=0 (refused above)
                    yield _f(f"{name}={v}: the legacy runtime requires 0 or nchunksperloop/{mul} = "
                             f"{C / mul:g} for coll={p.coll}", ONLY_LEGACY, **where)
        nodes = rank_nodes(p, g)
        if nodes > MAX_NODES:
            yield _f(f"rank {g.id} needs {nodes} XML nodes; the runtimes' readers hold at most {MAX_NODES} "
                     "(MAX_NODES)", BOTH, **where)
        if len(g.tbs) > MAX_SUBS:
            yield _f(f"<gpu> has {len(g.tbs)} <tb> children; at most {MAX_SUBS} (MAX_SUBS)", BOTH, **where)
        yield from _tb_rules(p, g.id, g.tbs, (g.i_chunks, g.o_chunks, g.s_chunks))


def rank_nodes(p: Program, g: Gpu) -> int:
    """The XML nodes one rank's parse holds: the `<algo>`, every `<gpu>`, the rank's `<tb>`s and steps."""
    return 1 + len(p.gpus) + len(g.tbs) + sum(len(tb.steps) for tb in g.tbs)


def _tb_rules(p: Program, gpu: int | None, tbs: tuple[ThreadBlock, ...],
              declared: tuple[int | None, int | None, int | None]) -> Iterator[Finding]:
    ngpus = p.ngpus if p.ngpus is not None else 0
    nchannels = p.nchannels if p.nchannels is not None else 0
    ids: dict[int, int] = {}
    senders: dict[int, int] = {}  # channel -> tbs with a send peer seen so far (element order)
    receivers: dict[int, int] = {}
    over: set[tuple[int, str]] = set()
    sizes = dict(zip(BUFFERS, declared))
    for tb in tbs:
        where: dict[str, Any] = {"gpu": gpu, "tb": tb.id, "line": tb.line}
        missing = [n for n, v in (("id", tb.id), ("send", tb.send), ("recv", tb.recv), ("chan", tb.chan)) if v is None]
        if missing:
            yield _f(f"<tb> lacks {', '.join(missing)}", BOTH, **where)
        if tb.id is not None:
            rejects = frozenset(r for r in (EXEC, LEGACY) if not 0 <= tb.id < MAX_TBS[r])
            if rejects:
                yield _f(f"thread block id {tb.id} is outside the range of the {' and '.join(sorted(rejects))} "
                         f"runtime (0..{MAX_TBS[LEGACY] - 1} legacy, 0..{MAX_TBS[EXEC] - 1} executor)", rejects,
                         **where)
            elif tb.id in ids:
                yield _f(f"thread block id {tb.id} is used twice on gpu {gpu} (lines {ids[tb.id]} and {tb.line})",
                         BOTH, **where)
            else:
                ids[tb.id] = tb.line
        for name, peer in (("send", tb.send), ("recv", tb.recv)):
            if peer is None:
                continue
            if peer == gpu:
                yield _f(f"{name}={peer}: peer and gpu id must be different", BOTH, **where)
            elif peer < -1:
                yield _f(f"{name}={peer}: peers are -1 or a rank", BOTH, **where)
            elif peer >= ngpus:
                yield _f(f"{name}={peer}: rank out of range (ngpus={ngpus}); the legacy runtime refuses it, the "
                         "executor does not check", ONLY_LEGACY, **where)
                yield _err("peer", f"{name}={peer} names a rank that does not exist (ngpus={ngpus})", **where)
        if tb.chan is not None:
            if not 0 <= tb.chan <= MAX_CHANNELS:
                yield _f(f"chan={tb.chan} is outside 0..{MAX_CHANNELS}", BOTH, **where)
            elif tb.chan == MAX_CHANNELS:
                yield _f(f"chan={tb.chan} passes the runtimes' off-by-one check (<= {MAX_CHANNELS}) but indexes "
                         "past the last channel: a heap overflow in the parser (the rank is refused or corrupted, "
                         "depending on memory)", BOTH, **where)
            elif tb.chan >= nchannels and ((tb.send or -1) >= 0 or (tb.recv or -1) >= 0):
                yield _err("channel", f"chan={tb.chan} >= nchannels={nchannels}: the runtime creates no connection "
                                      "for this thread block's peers", **where)
        has_send = any(op.type in SEND_TYPES for op in tb.steps)
        has_recv = any(op.type in RECV_TYPES for op in tb.steps)
        if tb.chan is not None:
            roles = (("send", senders, has_send, tb.send), ("recv", receivers, has_recv, tb.recv))
            for kind, count, has, peer in roles:
                if has and count.get(tb.chan, 0) >= MAX_TBS_PER_CHANNEL and (tb.chan, kind) not in over:
                    yield _f(f"more than {MAX_TBS_PER_CHANNEL} thread blocks with a {kind} peer on channel "
                             f"{tb.chan} of gpu {gpu} (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL): too many {kind}s "
                             "per channel",
                             BOTH, **where)
                    over.add((tb.chan, kind))  # the runtime stops at the first; report it once
                if peer is not None and peer >= 0:
                    count[tb.chan] = count.get(tb.chan, 0) + 1
        if len(tb.steps) > MAX_SUBS:
            yield _f(f"<tb> has {len(tb.steps)} <step> children; at most {MAX_SUBS} (MAX_SUBS)", BOTH, **where)
        yield from _step_rules(gpu, tb, sizes, p.proto)
    if ids:
        gaps = sorted(set(range(max(ids) + 1)) - set(ids))
        if gaps:
            yield _f(f"thread block {gaps[0]} is missing on gpu {gpu} (ids must be 0..n-1)", BOTH, gpu=gpu)


def _step_rules(gpu: int | None, tb: ThreadBlock, sizes: dict[str, int | None],
                proto: str | None = None) -> Iterator[Finding]:
    transfers = 0
    dependencies = 0  # the parser's numDependencies: every depid >= 0 of the thread block, nops included
    fused: list[tuple[int, int, int]] = []  # (sources, element index of the first, line) per re transmission
    pending = 0  # nop dependencies waiting for the next transfer
    fusing: tuple[str | None, int | None, str | None] | None = None  # (dstbuf, dstoff, srcbuf) of an open fusion
    reductions = 0  # the parser's numReductions counts every `re` of the thread block
    for index, op in enumerate(tb.steps):
        where: dict[str, Any] = {"gpu": gpu, "tb": tb.id, "step": index, "line": op.line}
        missing = [a for a, v in zip(STEP_ATTRS, (op.s, op.type, op.srcbuf, op.srcoff, op.dstbuf, op.dstoff, op.cnt,
                                                  op.depid, op.deps, op.hasdep)) if v is None]
        if missing:
            yield _f(f"<step> lacks {', '.join(missing)} (all ten attributes are required, nops included)", BOTH,
                     **where)
        if op.s is not None:
            rejects = frozenset(r for r in (EXEC, LEGACY) if not 0 <= op.s < MAX_STEPS[r])
            if rejects:
                yield _f(f"s={op.s} is outside the step range of the {' and '.join(sorted(rejects))} runtime "
                         f"(0..{MAX_STEPS[EXEC] - 1} executor, 0..{MAX_STEPS[LEGACY] - 1} legacy)", rejects, **where)
            elif op.s != index:
                yield _err("step-number", f"s={op.s} but this is step {index} of its thread block; the runtime "
                                          "numbers steps by position, so dependencies naming s may mean another step",
                           "warning", **where)
        if op.type is not None and op.type not in STEP_TYPES:
            if op.type == "ra":
                yield _f("type 'ra' is unknown to the executor", ONLY_EXEC, **where)
                yield _err("unsupported-step", "type 'ra': the legacy interpreter stops the thread block there",
                           **where)
            else:
                yield _f(f"type={op.type!r} is not a step type", BOTH, **where)
        for name, buf in (("srcbuf", op.srcbuf), ("dstbuf", op.dstbuf)):
            if buf is not None and buf not in BUFFERS:
                yield _f(f"{name}={buf!r} is not a buffer (i, o or s)", BOTH, **where)
        if op.depid is not None and op.depid > MAX_DEPID:
            yield _err("dependency", f"depid={op.depid} does not fit the runtime's int8_t: it wraps to "
                                     f"{(op.depid + 128) % 256 - 128} and waits on the wrong flag", **where)
        if op.depid is not None and op.depid >= 0 and op.deps is not None and op.deps < 0:
            yield _err("dependency", f"depid={op.depid} with deps={op.deps}: the wait is met by the previous pipeline "
                                     "iteration's flags and orders nothing from the second iteration on", **where)
        if op.deps is not None and op.deps > MAX_INT16:
            yield _err("dependency", f"deps={op.deps} does not fit the runtime's int16_t", **where)
        for name, off in (("srcoff", op.srcoff), ("dstoff", op.dstoff)):
            if off is not None and off > MAX_INT16:
                yield _err("offset-range", f"{name}={off} does not fit the runtime's int16_t", **where)
        if op.depid is not None and op.depid >= 0 and op.type in STEP_TYPES:
            dependencies += 1
        if op.type == "nop" or op.type is None:
            if op.type == "nop" and op.depid is not None and op.depid >= 0:
                pending += 1
            continue
        # a transfer (known or unknown type)
        continuation = (op.type == "re" and fusing == (op.dstbuf, op.dstoff, op.srcbuf) and op.depid == -1)
        if not continuation:
            transfers += 1
        if op.cnt is not None and not 0 <= op.cnt < MAX_COUNT:
            yield _f(f"cnt={op.cnt} is outside 0..{MAX_COUNT - 1}", BOTH, **where)
        if op.hasdep is not None and op.hasdep not in (0, 1):
            yield _f(f"hasdep={op.hasdep} must be 0 or 1", BOTH, **where)
        if op.type in SEND_TYPES and tb.send is not None and tb.send < 0:
            yield _f(f"a send ({op.type}) in a thread block without a send peer", BOTH, **where)
        if op.type in RECV_TYPES and tb.recv is not None and tb.recv < 0:
            yield _f(f"a receive ({op.type}) in a thread block without a receive peer", BOTH, **where)
        for check, name, buf, off in ((CHECK_SRC, "srcoff", op.srcbuf, op.srcoff),
                                      (CHECK_DST, "dstoff", op.dstbuf, op.dstoff)):
            size = sizes.get(buf or "")
            if op.type in check and size is not None and off is not None and not -1 <= off < size:
                yield _f(f"{name}={off} is outside the declared {buf} buffer ({buf}_chunks={size})", BOTH, **where)
        if not continuation:
            deps = pending + (1 if op.depid is not None and op.depid >= 0 else 0)
            if deps > 0 and (op.depid is None or op.depid < 0):
                yield _f("a chain of nop dependencies must end in a step that has a depid itself (the runtime refuses "
                         "'when there is a chain of dependencies, the last reduction must be a part of the first "
                         "immediate instruction')", BOTH, **where)
            pending = 0
        if op.type == "re":
            reductions += 1
            if continuation:
                n, first, line = fused[-1]
                fused[-1] = (n + 1, first, line)
            else:
                fused.append((1, index, op.line))
            fusing = None if (op.hasdep or reductions == MAX_REDUCE_FUSION) else (op.dstbuf, op.dstoff, op.srcbuf)
        else:
            fusing = None
    yield from _array_rules(gpu, tb, transfers, dependencies, reductions)
    yield from _fusion_rules(gpu, tb, fused, proto)
    if pending:
        yield _err("trailing-nop", "nop dependencies after the last transfer are dropped by the runtime", "warning",
                   gpu=gpu, tb=tb.id, line=tb.steps[-1].line)



def _array_rules(gpu: int | None, tb: ThreadBlock, transfers: int, dependencies: int,
                 reductions: int) -> Iterator[Finding]:
    """The parser fills fixed arrays of MSCCL_MAX_NUM_STEPS entries per thread block (transmissions,
    dependentBid/dependentStep, reductionSrcOffsets) by running counts with no bound: it only checks that
    every `s` is below the limit. Past the end it overwrites the next fields, and the kernel reads garbage
    (a wrong dependency, a wait on a step that never comes, a wrong reduction source)."""
    for runtime in (EXEC, LEGACY):
        limit = MAX_STEPS[runtime]
        for count, what, array in ((transfers, "transmissions", "transmissions[]"),
                                   (dependencies, "dependencies (nops' included)", "dependentBid[]/dependentStep[]"),
                                   (reductions, "reductions", "reductionSrcOffsets[]")):
            if count > limit:
                yield _err("array-overflow", f"{count} {what} in one thread block: the {runtime} runtime's parser "
                           f"stores them in {array} of {limit} entries without a bound check and overwrites the "
                           "fields after it (the kernel then waits on or reads wrong values)",
                           gpu=gpu, tb=tb.id, line=tb.line, runtime=runtime)


def _fusion_rules(gpu: int | None, tb: ThreadBlock, fused: list[tuple[int, int, int]],
                  proto: str | None) -> Iterator[Finding]:
    """Fused `re` transmissions: the parser cuts a chain when the thread block's cumulative reduction count
    equals 16, so after the 16th reduction chains grow without limit, and the kernel fills
    srcs[MSCCL_MAX_REDUCE_FUSION + 1] past its end. With Simple, a 16-source fusion loses the destination's
    own value: the kernel appends the destination as a 17th source and the reduction stops at 16."""
    for n, first, line in fused:
        where: dict[str, Any] = {"gpu": gpu, "tb": tb.id, "step": first, "line": line}
        if n > MAX_REDUCE_FUSION:
            yield _err("fusion-overflow", f"{n} consecutive re steps into the same chunk are fused into one "
                       f"reduction (the parser only cuts a chain when the thread block's running count of reductions "
                       f"equals {MAX_REDUCE_FUSION}); the kernel holds {MAX_REDUCE_FUSION} sources plus the "
                       "destination and writes past its source array", **where)
        elif n == MAX_REDUCE_FUSION and proto == "Simple":
            yield _err("fusion-drops-destination", f"{n} re steps are fused into one reduction; with the Simple "
                       "protocol the kernel adds the destination as a 17th source but reduces at most 16, so the "
                       "destination's own value is left out (LL and LL128 are not affected)", **where)
