"""Checking an MSCCL XML program: the entry point that runs every check and builds the `Report`.

Order: read (unusable input stops here), parse rules per runtime, connections, dependencies, then for
each declared mode (in place with the runtime's aliasing, out of place) one execution on abstract chunks
(deadlock with bounded and unbounded FIFOs, races, read-before-write, double counting) and the
postcondition. A finding that only some runtimes reject is a warning; one that every runtime considered
(`runtime`) rejects is an error.
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from smtcoll import collectives
from smtcoll.check import buffers, messages, postconditions, topology_cost
from smtcoll.check.connections import connect
from smtcoll.check.execution import TbInput, execute
from smtcoll.check.parse_rules import BOTH, is_complete, is_executable, parse_rule_findings
from smtcoll.check.report import Report, Violation
from smtcoll.check.transmissions import Transmission, lower
from smtcoll.errors import InputError, SmtcollError
from smtcoll.findings import MAX_LISTED, capped, summary
from smtcoll.model import Collective, Topology
from smtcoll.msccl.program import RUNTIMES, Finding, Program
from smtcoll.msccl.reader import Limits, ReadResult, read_program
from smtcoll.msccl.runtime import FIFO_MESSAGES, LEGACY_DEFAULT_MAX_BYTES
from smtcoll.specs import resolve_collective
from smtcoll.text import count
from smtcoll.vocabulary import Severity

MAX_RANKS = 4096  # the runtimes' readers cannot hold more <gpu> elements in one parse anyway
MAX_CHUNKS = 1 << 16  # offsets are int16_t: no program can touch more chunks of a buffer
MAX_LOCATIONS = 1 << 22
MAX_ROOT_WORK = 1 << 22  # ngpus x (output chunks of every rank) when every root is checked


def check_program_file(path: str | os.PathLike[str], *, runtime: str = "any",
                       collective: Collective | str | None = None, root: int | None = None,
                       topology: Topology | None = None, max_bytes: int | None = None, limits: Limits | None = None,
                       chunks: int | None = None, strict: bool = False) -> Report:
    """Read and check one XML file; unusable input gives an `unusable` report, never an exception.
    `chunks`: chunks per input of a `.toml` collective spec (default: 1, split to fit the buffers)."""
    name = os.fspath(path)
    try:
        result = read_program(name, max_bytes, limits)
    except SmtcollError as e:
        return unusable_report(name, e)
    return check_program(result, name, runtime=runtime, collective=collective, root=root, topology=topology,
                         chunks=chunks, strict=strict)


def unusable_report(file: str, error: SmtcollError) -> Report:
    """The report of a file that could not be read; it keeps the line of the error where the reader knows it."""
    where = {"line": error.line} if isinstance(error, InputError) and error.line else {}
    return Report(file, violations=[Violation("unusable", str(error), "error", where)], unusable=True)


def _modes(p: Program, selected: frozenset[str]) -> list[bool]:
    """The in-place flags of the runs the selected runtimes may do."""
    modes: set[bool] = set()
    if "legacy" in selected:
        modes.add(bool(p.inplace))
    if "executor" in selected:
        if p.inplace:
            modes.add(True)
        if p.outofplace:
            modes.add(False)
    return sorted(modes, reverse=True) or [False]


def check_program(result: ReadResult, file: str, *, runtime: str = "any", collective: Collective | str | None = None,
                  root: int | None = None, topology: Topology | None = None, chunks: int | None = None,
                  strict: bool = False) -> Report:
    p = result.program
    # any: wrong only when no runtime accepts the file; both: wrong when either refuses it (`--runtime both`)
    selected = BOTH if runtime in ("any", "both") else frozenset({runtime})
    every = runtime == "both"
    findings: list[Finding] = list(result.findings) + parse_rule_findings(p)
    if "legacy" not in selected:
        # maxBytes=0 matters only to the legacy runtime (never selected there); msccl-tools writes it on most
        # programs, so for executor users it is a note (--verbose), not a warning on every file
        findings = [attrs.evolve(f, severity="info") if f.code == "max-bytes" and "maxBytes=0" in f.message
                    else f for f in findings]
    metrics: dict[str, Any] = {"dialect": p.dialect, "proto": p.proto, "gpus": len(p.gpus),
                               "thread_blocks": sum(len(g.tbs) for g in p.gpus), "steps": p.steps,
                               "nchannels": p.nchannels, "nchunksperloop": p.nchunksperloop, "bytes": result.size}
    coll_name = p.coll
    hint = None  # what the buffers show when --chunks says otherwise: said only when the file is wrong
    if isinstance(collective, str) and collective not in postconditions.BUILTIN:
        try:
            spec = collective
            collective = resolve_collective(spec, p.ngpus, root, chunks or 1)
            if chunks is not None and collective.ranks == p.ngpus:
                shown = _fit(resolve_collective(spec, p.ngpus, root, 1), p).chunk_factor
                if shown != chunks:
                    hint = Finding("chunks-hint", f"the program's buffers hold {count(shown, 'chunk')} per input "
                                   f"of the --collective spec (nchunksperloop={p.nchunksperloop}, ngpus={p.ngpus}), "
                                   f"not --chunks {chunks}: try --chunks {shown}, or leave --chunks out",
                                   where={"line": p.line}, severity="warning")
        except SmtcollError as e:
            return Report(file, p.coll, p.ngpus, None, [Violation("unusable", f"--collective: {e}", "error")],
                          unusable=True)
    if collective is not None and not isinstance(collective, str):
        if collective.ranks != p.ngpus:
            findings.append(Finding("collective-mismatch", f"--collective has {collective.ranks} ranks but the "
                                    f"program has ngpus={p.ngpus}", where={"line": p.line}))
            collective = None
        else:
            if chunks is None:
                collective = _fit(collective, p)
            mismatch = _buffer_mismatch(collective, p, chunks)
            if mismatch:
                findings.append(Finding("collective-mismatch", mismatch, where={"line": p.line}))
                collective = None
    if not is_complete(p) or not is_executable(p):
        # never an `ok` without the semantic checks: an error unless the reasons above are errors already
        refused = any((f.rejects & selected if every else f.rejects >= selected)
                      or (not f.rejects and f.severity == "error") for f in findings)
        findings.append(Finding("not-checked", "the program lacks required attributes or has values out of the "
                                "runtimes' ranges (see above): the semantic checks (deadlock, races, postcondition) "
                                "were not run", where={"line": p.line}, severity="info" if refused else "error"))
    elif _sizes_ok(p, findings):
        findings += _semantics(p, selected, collective, root, topology, metrics, strict)
    if hint is not None and any(f.severity == "error" for f in findings):
        findings.insert(0, hint)
    return _report(file, p, findings, selected, metrics, coll_name, every)


def _fit(coll: Collective, p: Program) -> Collective:
    """Split the collective's chunks so that ranks' inputs and outputs fill the program's buffers (a program
    with nchunksperloop = 2N runs an N-chunk allgather in 2 parts per chunk). Split only when input and
    output agree on the factor: a rank may leave buffer slots unused, so a mismatch means no split."""
    if coll.chunk_factor != 1 or not p.nchunksperloop or not p.ngpus:
        return coll
    size_in = p.nchunksperloop // p.ngpus if p.coll in buffers.SPLIT_INPUT else p.nchunksperloop
    size_out = p.nchunksperloop // p.ngpus if p.coll in buffers.SPLIT_OUTPUT else p.nchunksperloop

    def widest(sets: tuple[frozenset[int], ...]) -> int:
        return max((len({coll.address[c] for c in s}) for s in sets), default=0)

    w_in, w_out = widest(coll.pre_sets), widest(coll.post_sets)
    if not w_in or not w_out or size_in % w_in or size_out % w_out:
        return coll
    factor = size_out // w_out
    if factor > 1 and size_in // w_in == factor:
        return coll.with_chunks(factor)
    return coll


def _buffer_mismatch(coll: Collective, p: Program, chunks: int | None) -> str | None:
    """Why the program's buffers do not hold the collective's chunks, in the user's terms: a custom program
    synthesized with 2 chunks per input checked against a spec with 1 (or --chunks 3) would otherwise give a
    postcondition error for every chunk. Only buffers that are exactly k times the spec's are judged, and
    only for `coll="custom"`, where the buffers are the spec's own (built-in collectives have their layouts
    in `buffers.py`)."""
    if p.coll != "custom" or not p.gpus:
        return None
    sizes = {(g.i_chunks, g.o_chunks) for g in p.gpus}
    if len(sizes) != 1:
        return None
    (i_chunks, o_chunks), = sizes
    per_input = max((len({coll.address[c] for c in s}) for s in coll.pre_sets), default=0)
    per_output = max((len({coll.address[c] for c in s}) for s in coll.post_sets), default=0)
    if i_chunks is None or o_chunks is None or (i_chunks == per_input and o_chunks == per_output):
        return None
    base_in, base_out = per_input // coll.chunk_factor, per_output // coll.chunk_factor
    unit = "rank" if base_in == 1 else f"input chunk of the spec ({base_in} per rank)"
    theirs = "--chunks" if chunks is not None else "the spec"
    if base_in and i_chunks % base_in == 0 and o_chunks == base_out * (i_chunks // base_in):
        k = i_chunks // base_in
        if k != coll.chunk_factor:
            return (f"the file has {count(k, 'chunk')} per {unit} (i_chunks={i_chunks}) and {theirs} "
                    f"{coll.chunk_factor}: give --chunks {k}; the postcondition was not checked")
    # other sizes: a rank may leave buffer slots unused; the postcondition judges
    return None


def _sizes_ok(p: Program, findings: list[Finding]) -> bool:
    assert p.ngpus is not None and p.nchunksperloop is not None and p.nchannels is not None
    if p.ngpus < 1 or p.nchunksperloop < 1 or p.nchannels < 1:
        return False  # refused by the parse rules already
    if p.ngpus > MAX_RANKS or p.nchunksperloop > MAX_CHUNKS or p.ngpus * p.nchunksperloop > MAX_LOCATIONS:
        findings.append(Finding("limit", f"ngpus={p.ngpus}, nchunksperloop={p.nchunksperloop}: too large for a "
                                "program the runtimes can hold (at most 4096 XML nodes per rank, int16_t offsets); "
                                "not checked further", where={"line": p.line}))
        return False
    return True


def _semantics(p: Program, selected: frozenset[str], collective: Collective | str | None, root: int | None,
               topology: Topology | None, metrics: dict[str, Any], strict: bool = False) -> list[Finding]:
    assert p.ngpus is not None and p.nchunksperloop is not None and p.nchannels is not None and p.coll is not None
    out: list[Finding] = []
    ranks: dict[int, Any] = {}
    for g in p.gpus:
        assert g.id is not None
        if 0 <= g.id < p.ngpus and g.id not in ranks:
            ranks[g.id] = g
    tbs: list[TbInput] = []
    per_rank = []
    for rank in sorted(ranks):
        g = ranks[rank]
        rows = []
        for index, tb in enumerate(g.tbs):
            assert tb.id is not None and tb.send is not None and tb.recv is not None and tb.chan is not None
            trans = tuple(lower(tb))
            tbs.append(TbInput(rank, tb.id, tb.send, tb.recv, tb.chan, trans))
            rows.append((index, tb.id, tb.send, tb.recv, tb.chan, list(trans)))
        per_rank.append((rank, rows))
    missing = [r for r in range(p.ngpus) if r not in ranks]
    if missing:
        out.append(Finding("missing-gpu", f"rank(s) {_few(missing)} have no <gpu> element: they run no thread block",
                           where={"line": p.line}, severity="info"))
    _, conn_findings = connect(per_rank, p.nchannels)
    out += conn_findings
    out += _dependency_findings(tbs)
    metrics["transmissions"] = sum(len(t.trans) for t in tbs)

    # the expectation (postcondition) for this collective
    geo_coll = p.coll
    spec: Collective | None = None
    why_unchecked = ""
    if isinstance(collective, Collective):
        spec = collective
    elif isinstance(collective, str) and collective:
        geo_coll = collective
    if spec is None:
        if geo_coll not in postconditions.BUILTIN:
            why_unchecked = (f"coll={p.coll!r} has no known postcondition; give --collective SPEC to check one, "
                             "only the structural checks (parse rules, connections, deadlock, races) were run")
        elif geo_coll in postconditions.ROOTED and root is not None and not 0 <= root < p.ngpus:
            why_unchecked = f"--root {root} is not a rank of this {p.ngpus}-rank program"
        elif p.nchunksperloop % p.ngpus and (kind := collectives.by_spelling(geo_coll)) is not None and (
                kind.per_rank_loop and not kind.rooted):
            out.append(Finding("postcondition", f"nchunksperloop={p.nchunksperloop} is not a multiple of ngpus="
                               f"{p.ngpus}: {geo_coll} cannot be cut into equal per-rank shares",
                               where={"line": p.line}))
            why_unchecked = "-"
    if why_unchecked and why_unchecked != "-":
        out.append(Finding("postcondition-unchecked", why_unchecked, where={"line": p.line}, severity="warning"))

    load_timing = None
    if topology is not None:
        if topology.ranks != p.ngpus:
            out.append(Finding("topology", f"topology {topology.name!r} has {topology.ranks} ranks, the program "
                               f"{p.ngpus}", where={"line": p.line}))
        else:
            link_findings, load = topology_cost.link_load(tbs, topology, p.nchannels)
            out += link_findings
            metrics["links"] = topology_cost.load_metrics(load)
            metrics["max_link_chunks"] = max((c for c, _ in load.values()), default=0)
            load_timing = topology_cost.timing(topology, sorted(load))

    # a rooted collective without --root: the run does not depend on the root (every input is defined), so
    # check the output against each of the ngpus possible roots
    all_roots = spec is None and not why_unchecked and geo_coll in postconditions.ROOTED and root is None
    if all_roots and p.ngpus * p.ngpus * p.nchunksperloop > MAX_ROOT_WORK:
        all_roots = False
        why_unchecked = (f"{geo_coll} without --root: {p.ngpus} roots are too many to check each; give --root "
                         "to check its postcondition (only the structural checks were run)")
        out.append(Finding("postcondition-unchecked", why_unchecked, where={"line": p.line}, severity="warning"))
    good_roots = set(range(p.ngpus)) if all_roots else set()
    root_failures: list[Finding] = []
    capacity = FIFO_MESSAGES.get(p.proto or "", 2)
    modes = _modes(p, selected)
    metrics["modes"] = ["in-place" if m else "out-of-place" for m in modes]
    seen: set[tuple[str, str]] = set()
    for first, in_place in enumerate(modes):
        scratch = {r: (ranks[r].s_chunks or 0) for r in ranks}
        geo = buffers.Geometry(geo_coll if geo_coll in postconditions.BUILTIN else "custom", p.ngpus,
                               p.nchunksperloop, in_place, scratch)
        exp = None
        if not why_unchecked:
            exp = postconditions.from_collective(geo, spec) if spec is not None else \
                postconditions.builtin(geo, 0 if all_roots else root)
        initial = exp.initial if exp is not None else None
        run = execute(tbs, geo, p.nchannels, capacity, initial)
        metrics["messages"] = run.messages
        run_findings = list(run.findings)
        if run.taint_findings and not run.deadlock:
            _judge_by_output(run, run_findings, tbs, geo, p.nchannels, capacity, initial, strict)
        if run.deadlock:
            free = execute(tbs, geo, p.nchannels, None, initial, data=False)
            if free.deadlock:
                run_findings.append(_deadlock(free.blocked, geo.mode, None, p.proto))
            else:
                run_findings.append(_deadlock(run.blocked, geo.mode, capacity, p.proto))
        else:
            if first == 0:
                run_findings += _split_deadlocks(p, tbs, geo, capacity, initial)
        if not run.deadlock and first == 0 and load_timing is not None:
            timed = execute(tbs, geo, p.nchannels, capacity, initial, data=False, timing=load_timing[0])
            unit = load_timing[1]
            metrics["estimate"] = {"time": round(timed.makespan, 6), "unit": unit}
            if unit == "us":
                assert topology is not None  # load_timing is only set from a topology
                metrics["estimate"]["chunk_bytes"] = topology_cost.DEFAULT_CHUNK_BYTES
                topology_cost.apply_sharing(metrics, topology, load)
        if not run.deadlock and exp is not None and all_roots:
            for r in range(p.ngpus):
                post, wrong = postconditions.check(geo, postconditions.builtin(geo, r), run.memory, MAX_LISTED)
                if post:
                    good_roots.discard(r)
                    if r == 0:
                        root_failures += [Finding(code, f"root 0: {message}", where={"mode": geo.mode, "gpu": rank})
                                          for code, message, rank in post]
        elif not run.deadlock and exp is not None:
            post, wrong = postconditions.check(geo, exp, run.memory, MAX_LISTED)
            for code, message, rank in post:
                run_findings.append(Finding(code, message, where={"mode": geo.mode, "gpu": rank}))
            if wrong > len(post):  # the rest were counted, not listed (messages cost time on 2^22 chunks)
                run_findings.append(summary("postcondition", "error", wrong - len(post)))
        for f in run_findings:
            key = (f.code, f.message)
            if f.code == "deadlock" and any(k[0] == "deadlock" for k in seen):
                continue  # deadlocks do not depend on the mode
            if key not in seen:
                seen.add(key)
                out.append(f)
    if all_roots and not any(f.code == "deadlock" for f in out):
        if good_roots:
            out.append(Finding("postcondition-roots", f"no --root given: the output is correct as a {geo_coll} with "
                               f"root {_few(sorted(good_roots))} (every root was checked; give --root to pin one)",
                               where={"line": p.line}, severity="info"))
        else:
            out.append(Finding("postcondition", f"no --root given, and the output is not a correct {geo_coll} for any "
                               f"of the {p.ngpus} possible roots (the listing shows root 0)", where={"line": p.line}))
            out += root_failures
    return out


DEAD = {"race": "dead-race", "read-before-write": "dead-read", "double-count": "dead-double-count"}


def _judge_by_output(run: Any, findings: list[Finding], tbs: list[TbInput], geo: buffers.Geometry, nchannels: int,
                     capacity: int | None, initial: Any, strict: bool) -> None:
    """Taint analysis: a race, an uninitialized read or a double count is an error only when its value can
    reach an output chunk (`o`, or `i` when it is the output in place). Each finding seeds the transmissions
    whose results it may change; a second run follows the seeds through every later read, reduction and
    message (the happens-before order of a race-free part is the same in every execution, and the racy
    locations are seeded themselves). What reaches no output stays a warning (`--strict`: an error)."""
    outputs = frozenset(geo.loc(r, "o", k) for r in range(geo.ranks) for k in range(geo.size(r, "o")))
    follow = execute(tbs, geo, nchannels, capacity, initial, seeds=run.taint_seeds, outputs=outputs)
    for bit, (index, code) in enumerate(run.taint_findings):
        if index < 0 or (follow.output_taint >> bit) & 1:
            continue
        f = findings[index]
        findings[index] = Finding(DEAD[code], f"{f.message}; the value it touches never reaches an output chunk in "
                                  "any execution, so the result is right", where=f.where,
                                  severity="error" if strict else "warning")


def per_chunk_threshold(p: Program) -> int | None:
    """The buffer size above which every chunk of a multi-chunk step is its own message (maxAllowedCount
    = 1: nBytes > nchunksperloop * floor(chunkEffectiveSize / 2), `messages.py`)."""
    effective = messages.effective_chunk_size(p.proto, p.coll)
    if effective is None or not p.nchunksperloop:
        return None
    return p.nchunksperloop * (effective // 2)


def _size_range(p: Program) -> tuple[int, int | None]:
    """The buffer sizes the file is selected for: minBytes..maxBytes; the legacy runtime's default maxBytes
    when the file has none; no upper end for the executor's maxBytes=0."""
    low = p.min_bytes or 0
    high = p.max_bytes if p.max_bytes is not None else LEGACY_DEFAULT_MAX_BYTES
    return low, (None if p.dialect == "executor" and high == 0 else high)


def _split_deadlocks(p: Program, tbs: list[TbInput], geo: buffers.Geometry, capacity: int,
                     initial: Any) -> list[Finding]:
    """Deadlocks of the message counts the runtime uses at the sizes the file is selected for: one run per
    distinct way the program's transmissions split (maxAllowedCount below the largest cnt; above it every
    transmission is one message, the main run). A deadlock at every selectable size is an error; at only
    some of them a warning naming those sizes (`fifo-capacity`: the file works at the others, and real
    MSCCLang programs such as recursive doubling-halving deadlock only in a band of sizes). When none is,
    the per-chunk regime of larger buffers (maxAllowedCount = 1) is tried too, and a deadlock there is a
    note (`fifo-capacity`, info): the file is not selected for those sizes."""
    nchannels = p.nchannels
    assert nchannels is not None  # checked before the semantic checks
    counts = sorted({tr.cnt for t in tbs for tr in t.trans if tr.sends or tr.receives})
    effective = messages.effective_chunk_size(p.proto, p.coll)
    if not counts or counts[-1] <= 1 or effective is None or not p.nchunksperloop:
        return []
    low, high = _size_range(p)
    tried: dict[tuple[int, ...], Any] = {}

    def deadlocks(split: int) -> Any:
        """The run that deadlocks at this split, or None; one run per distinct message count of the cnts."""
        key = tuple(messages.messages(c, split) for c in counts)
        if key not in tried:
            run = execute(tbs, geo, nchannels, capacity, initial, data=False, split=split)
            tried[key] = run if run.deadlock else None
        return tried[key]

    selected = messages.regimes(effective, p.nchunksperloop, low, high)
    bad: list[tuple[messages.Regime, Any]] = []
    for regime in selected:
        if regime.count < counts[-1]:  # at or above the largest cnt every transmission is one message: the main run
            run = deadlocks(regime.count)
            if run is not None:
                bad.append((regime, run))
    if bad:
        regime, run = bad[0]
        f = _deadlock(run.blocked, geo.mode, capacity, p.proto, split=regime.count)
        sizes = ", ".join(f"{r.sizes()} (maxAllowedCount {r.count})" for r, _ in bad)
        if len(bad) == len(selected):
            return [Finding("deadlock", f"{f.message}. It deadlocks at every size the file is selected for: {sizes}, "
                            "with the default NCCL buffer sizes", where=f.where)]
        return [Finding("fifo-capacity", f"{f.message}. It deadlocks for buffers of {sizes}, with the default NCCL "
                        "buffer sizes; it completes at the other sizes the file is selected for", where=f.where,
                        severity="warning")]
    threshold = per_chunk_threshold(p)
    run = deadlocks(1)
    if run is None or threshold is None:
        return []
    f = _deadlock(run.blocked, geo.mode, capacity, p.proto, split=1)
    top = f"maxBytes={high}" if high is not None else "no upper limit"
    return [Finding("fifo-capacity", f"{f.message}. Not at the sizes the file is selected for (minBytes={low}, "
                    f"{top}; every chunk is its own message only over {threshold} bytes, with the default NCCL "
                    "buffer sizes)", where=f.where, severity="info")]


def _deadlock(blocked: list[tuple[int, int, int, int, str]], mode: str, capacity: int | None,
              proto: str | None, split: int | None = None) -> Finding:
    first = blocked[0]
    listing = "; ".join(f"gpu {r} tb {t} step {s} (line {ln}) {why}" for r, t, s, ln, why in blocked[:6])
    more = f"; and {len(blocked) - 6} more" if len(blocked) > 6 else ""
    if split == 1:
        kind = (f"when every chunk of a multi-chunk step is its own FIFO message (large buffers) and the {proto} "
                f"FIFO holds {capacity} of them")
    elif split is not None:
        kind = (f"when a multi-chunk step is sent as messages of at most {split} chunks and the {proto} FIFO "
                f"holds {capacity} of them")
    elif capacity is None:
        kind = "with unbounded FIFOs (it never completes whatever the order)"
    else:
        kind = (f"with the bounded FIFOs of the {proto} protocol ({capacity} messages per connection); it completes "
                "only with unbounded FIFOs")
    possible = "possible " if split is not None else ""
    return Finding("deadlock", f"{possible}deadlock {kind}: {count(len(blocked), 'thread block')} blocked: "
                               f"{listing}{more}",
                   where={"gpu": first[0], "tb": first[1], "step": first[2], "line": first[3]})


def _dependency_findings(tbs: list[TbInput]) -> list[Finding]:
    out: list[Finding] = []
    by_rank: dict[int, dict[int, tuple[Transmission, ...]]] = {}
    for t in tbs:
        by_rank.setdefault(t.rank, {})[t.tb_id] = t.trans
    for t in tbs:
        for tr in t.trans:
            for depid, deps in tr.deps:
                where = {"gpu": t.rank, "tb": t.tb_id, "step": tr.first, "line": tr.line}
                target = by_rank[t.rank].get(depid)
                if target is None:
                    out.append(Finding("dependency", f"depid={depid}: gpu {t.rank} has no thread block {depid}",
                                       where=where))
                    continue
                hit = next((x for x in target if x.hasdep and x.counter >= deps), None)
                if hit is None:
                    out.append(Finding("dependency", f"waits for tb {depid} to reach step {deps}, but no transmission "
                                       f"of tb {depid} at or after it sets its flag (hasdep=1): it waits forever",
                                       where=where))
                elif hit.last != deps:
                    out.append(Finding("dependency", f"(depid={depid}, deps={deps}) is released by tb {depid} step "
                                       f"{hit.last} (line {hit.line}), the first flagged step whose runtime step "
                                       f"counter ({hit.counter}) reaches {deps}", where=where, severity="info"))
    return out


def _element_lines(p: Program) -> dict[tuple[int | None, int | None], int]:
    """Line of the first <gpu> element of each rank, (gpu, None), and of each of its <tb>, (gpu, tb)."""
    lines: dict[tuple[int | None, int | None], int] = {}
    for g in p.gpus:
        if g.id is None:
            continue
        lines.setdefault((g.id, None), g.line)
        for tb in g.tbs:
            if tb.id is not None:
                lines.setdefault((g.id, tb.id), tb.line)
    return lines


def _few(items: list[int]) -> str:
    return ", ".join(map(str, items[:8])) + (f" and {len(items) - 8} more" if len(items) > 8 else "")


def _report(file: str, p: Program, findings: list[Finding], selected: frozenset[str], metrics: dict[str, Any],
            coll_name: str | None, every: bool = False) -> Report:
    """`every`: each selected runtime must accept the file (a refusal by one is an error, not a warning)."""
    accepted: dict[str, bool] = {r: not any(r in f.rejects for f in findings) for r in RUNTIMES}
    violations: list[Violation] = []
    lines = _element_lines(p)
    for f in findings:
        severity: Severity
        where = {k: v for k, v in f.where.items() if v is not None}
        if "line" not in where:  # a finding about a gpu or thread block points at its element
            line = lines.get((where.get("gpu"), where.get("tb")), lines.get((where.get("gpu"), None)))
            if line:
                where["line"] = line
        if f.rejects:
            hit = f.rejects & selected
            if hit == selected or (every and hit):
                severity, message = "error", f.message
            elif hit:
                severity = "warning"
                message = f"{' and '.join(sorted(hit))} runtime refuses this file: {f.message}"
            else:
                severity, message = "info", f"({' and '.join(sorted(f.rejects))} only) {f.message}"
            if len(f.rejects) == 1:
                where["runtime"] = next(iter(f.rejects))
        elif where.get("runtime") in RUNTIMES and (where["runtime"] not in selected or not accepted[where["runtime"]]):
            severity, message = "info", f"({where['runtime']} only) {f.message}"
        else:
            severity, message = f.severity, f.message
        violations.append(attrs.evolve(f, message=message, severity=severity, where=where, rejects=frozenset()))
    order = {"error": 0, "warning": 1, "info": 2}
    violations.sort(key=lambda v: order[v.severity])  # stable: the checks' own order within a severity
    # one cap per (code, severity), after the taint analysis and the runtimes changed severities: a summary
    # line has the severity of the findings it stands for
    violations = capped(violations, MAX_LISTED)
    if not (all if every else any)(accepted[r] for r in selected) and not any(
            v.severity == "error" and v.code == "parse-rule" for v in violations):
        refused = ", ".join(r for r in sorted(selected) if not accepted[r])
        violations.insert(0, Violation("parse-rule", f"{'not every' if every else 'no'} runtime accepts this file "
                                       f"(refused by: {refused}); see the warnings", "error", {"line": p.line}))
    return Report(file, coll_name, p.ngpus, accepted, violations, metrics)
