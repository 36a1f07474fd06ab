"""One sweep task: the algorithm files of one collective on one topology at one node count.

`compute(payload)` is a pure function of its input (a JSON document holding the topology and the collective
in explicit form and the options): it synthesizes the Pareto frontier within the budget, forms candidates
(frontier point x protocol x instances), selects the fastest per size range (`selection`), lowers each
choice for each runtime with its `minBytes`/`maxBytes`, verifies every file with the checker, and returns the
files' text and what the manifest says about them. Nothing in the result depends on time or on the machine,
except where the synthesizer hit its budget (the frontier is then incomplete and says so).

`python -m smtcoll.sweep.tasks` runs `compute` on the JSON document on stdin and prints the result: the
worker runs each task in such a child process, under a time and memory limit (`run.py`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

import smtcoll
from smtcoll import specs
from smtcoll.errors import SmtcollError
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.sweep import cost, prune
from smtcoll.sweep.selection import envelope, tiles
from smtcoll.sweep.sizes import SizeRange, file_bounds

if TYPE_CHECKING:
    from smtcoll.synth.result import LowerBound

# every size range gets one file per mode, each lowered, timed, selected and verified for its mode: the
# runtimes pick an algorithm per call by whether the buffers alias (docs/sweep.md, "In place and out of place")
MODES = ("outofplace", "inplace")
LAYOUT = "per-mode/1"  # what the files of a result are (part of the cache key: an older result has other files)
FAULT_ENV = "SMTCOLL_SWEEP_FAULT"  # test-only: makes the child process hang or crash (tests/test_sweep*.py)
MEMORY_ENV = "SMTCOLL_SWEEP_MEMORY"  # the child's address-space limit in bytes (0: none), set by run.execute


@attrs.frozen
class Options:
    """What every task of a sweep shares (part of each task's cache key)."""

    sizes: SizeRange
    runtimes: tuple[str, ...] = ("executor",)
    budget: float = 60.0  # the synthesizer's time limit per task, seconds (`synth --timeout`)
    max_chunks: int = 4
    max_steps: int | None = None
    model: cost.Model = attrs.Factory(cost.Model.load)
    prove: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"sizes": [self.sizes.low, self.sizes.high], "runtimes": list(self.runtimes), "budget": self.budget,
                "max_chunks": self.max_chunks, "max_steps": self.max_steps,
                "model": self.model.to_json(),
                "prove": self.prove}


@attrs.frozen
class Task:
    """`label` is the topology as the user named it (`dgx1`, a file's stem); the content is explicit."""

    label: str
    nodes: int
    collective: str
    topology: Topology
    coll: Collective
    options: Options

    def payload(self) -> dict[str, Any]:
        return {"label": self.label, "nodes": self.nodes, "collective": self.collective,
                "topology": specs.topology_to_dict(self.topology), "coll": specs.collective_to_dict(self.coll),
                "options": self.options.to_json()}

    def key(self) -> str:
        """The content hash: topology, collective, options, the smtcoll version and its code, nothing else."""
        text = json.dumps({"task": self.payload(), "smtcoll": smtcoll.__version__, "code": code_digest(),
                           "layout": LAYOUT}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def slug(self) -> str:
        return f"{self.collective}-{_safe(self.label)}-{self.nodes}n"

    def describe(self) -> dict[str, Any]:
        return {"topology": self.label, "nodes": self.nodes, "collective": self.collective,
                "ranks": self.topology.ranks}


@attrs.frozen
class Invalid:
    """A combination of the request that is no task (e.g. a topology without NICs on several nodes)."""

    label: str
    nodes: int
    collective: str
    why: str

    def describe(self) -> dict[str, Any]:
        return {"topology": self.label, "nodes": self.nodes, "collective": self.collective, "ranks": None}


@functools.cache
def code_digest() -> str:
    """The digest of the package's own code: a result computed by other code (a changed construction, bound or
    cost model in a development tree, where the version string stays the same) is never reused."""
    return tree_digest(Path(smtcoll.__file__).parent)


def tree_digest(root: Path) -> str:
    """The sha256 of the `.py` and `.json` files under `root`, with their paths (bytecode caches are left out)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".json") and p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._" else "-" for ch in text)


def _options(data: dict[str, Any]) -> Options:
    return Options(SizeRange(*data["sizes"]), tuple(data["runtimes"]), data["budget"], data["max_chunks"],
                   data["max_steps"], cost.Model.from_dict(data["model"]), data["prove"])


def versions() -> dict[str, str]:
    import z3

    return {"smtcoll": smtcoll.__version__, "z3": z3.get_full_version()}


# --- the task ------------------------------------------------------------------------------------

@attrs.frozen
class Source:
    """A schedule that may be chosen: a frontier point, the engine's, a construction (`nccl`: the NCCL
    algorithm it is, "ring" or "tree", or None)."""

    name: str
    method: str
    schedule: Schedule
    nccl: str | None = None


@attrs.frozen
class Candidate:
    source: int  # index into the sources
    protocol: str
    instances: int
    curve: cost.Piecewise
    mode: str = "outofplace"


def compute(payload: dict[str, Any]) -> dict[str, Any]:
    """The task's result (module docstring); raises SmtcollError for unusable input."""
    from smtcoll.synth.door import synthesize  # z3: only where tasks run
    from smtcoll.synth.request import WORK_PER_SECOND, Limits, SynthRequest

    topo = specs.topology_from_dict(payload["topology"])
    base = specs.collective_from_dict(payload["coll"])
    o = _options(payload["options"])
    label, nodes, kind = payload["label"], payload["nodes"], payload["collective"]
    status: str
    try:
        # the frontier within a work budget (deterministic: the same files on an idle and a busy machine);
        # the wall clock is only the safety stop, 30 s before the task's own kill (--task-timeout's default: 2 x + 1800)
        request = SynthRequest(strategy="pareto", method="exact", max_steps=o.max_steps, max_chunks=o.max_chunks,
                               limits=Limits(timeout=min(2 * o.budget + 30, 7 * 24 * 3600.0),
                                             work=max(1, min(10**15, int(o.budget * WORK_PER_SECOND)))))
        result = synthesize(topo, base, request)
        status = result.status
    except SmtcollError:
        raise
    except Exception as e:
        from smtcoll.synth.result import SynthResult

        result = SynthResult("timeout", None, "pareto", None, (),
                             message=f"the synthesizer failed ({type(e).__name__}: {str(e)[:200]}); please report this")
        status = "error"
    complete = result.status == "found"
    frontier = "pareto" if complete else "pareto (time limit: frontier incomplete)"
    sources = [Source(f"({p.steps},{p.rounds},{p.chunks})", frontier, p.schedule)
               for p in result.points if p.schedule is not None]
    scaled = _scaled(topo, base, o.max_steps)
    if scaled is not None:
        i = scaled.schedule.instance
        sources.append(Source(f"({i.steps},{i.rounds},{i.chunks})", f"engine: {scaled.method}", scaled.schedule))
    for name, schedule, nccl in _constructions(topo, base, o.max_steps):
        if nccl is None and any(src.schedule.steps == schedule.steps and src.schedule.collective ==
                                schedule.collective for src in sources):
            continue  # the same schedule as a baseline before it (multiring is NCCL's ring on some machines)
        sources.append(Source(name, "construction" if nccl is None else f"NCCL {nccl}", schedule, nccl))
    out: dict[str, Any] = {"status": "ok", "versions": versions(),
                           "synth": {"status": status,
                                     "frontier": [[p.steps, p.rounds, p.chunks] for p in result.points
                                                  if p.schedule is not None],
                                     "complete": complete, "message": result.message,
                                     "lower_bound": result.lower_bound.to_json() if result.lower_bound else {},
                                     "optimal": result.optimal.to_json()},
                           "candidates": [{"name": src.name, "method": src.method, "nccl": src.nccl,
                                           "chunks": src.schedule.collective.chunk_factor} for src in sources],
                           "files": [], "rejected": [], "certificates": []}
    if not sources:
        out.update(status="failed", why=f"the synthesizer found no schedule ({status}: {result.message})")
        return out
    machine = cost.machine(topo, nodes, o.model)
    memo: dict[Any, Any] = {}  # supporting lines by timing key, shared by the modes (cost.predict)
    per_mode: dict[str, list[Candidate]] = {}
    for mode in MODES:
        per_mode[mode], rejected = _candidates(sources, machine, o, kind, label, nodes, mode, memo)
        out["rejected"] += rejected
    bound = _bound(topo, base, result.lower_bound, o.model, machine)
    for runtime in o.runtimes:
        for mode in MODES:
            files, rej = _select_and_write(sources, per_mode[mode], o.sizes, runtime, label, nodes, kind, bound,
                                           topo.ranks)
            out["files"] += files
            out["rejected"] += rej
    if not out["files"]:
        out.update(status="failed", why="no candidate lowers and verifies (see rejected)")
    if o.prove:
        out["certificates"] = _certificates(result, topo, base)
    return out


def _candidates(sources: list[Source], machine: cost.Machine, o: Options, kind: str, label: str,
                nodes: int, mode: str, memo: dict[Any, Any]) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Every source x protocol x instances that lowers in `mode`, with its exact time over the requested
    sizes (the lowered program run in the cost model); the others are rejected with the reason. A candidate
    that another live one is at least as fast as at every size is left out (`prune.beaten_by`); a variant of
    NCCL's own algorithms only when another variant of the same algorithm is (NCCL's time is the best of
    them). NCCL's algorithms are lowered and timed in the same mode, so the comparison stays fair.

    NCCL's algorithms are recovered first. The others in two passes: every one timed at both ends only, then
    each recovered in full unless the live ones (recovered curves, and the chords of those with only their
    ends) beat it everywhere: a candidate that loses to a later one is then left out after two runs rather
    than recovered in full (the pieces of a program take 5-9 runs)."""
    cands: list[Candidate] = []
    rejected: list[dict[str, Any]] = []
    low, high = o.sizes.low, o.sizes.high
    # baselines first: they are kept whatever happens, and their curves prune the others early
    order = sorted(range(len(sources)), key=lambda i: (sources[i].nccl is None, i))
    pending: list[tuple[int, str, int, Any, cost.Line, cost.Line]] = []  # ends known, pieces not yet

    def reject(src: Source, proto: str, inst: int, why: str) -> None:
        rejected.append({"runtime": o.runtimes[0], "mode": mode, "candidate": src.name, "method": src.method,
                         "chunks": src.schedule.collective.chunk_factor, "protocol": proto, "instances": inst,
                         "why": why})

    for i in order:
        src = sources[i]
        for inst, proto, program in _lowered(src, o, kind, label, nodes, mode):
            if isinstance(program, str):
                reject(src, proto, inst, program)
                continue
            # an NCCL variant is needed only where it is NCCL's best: compare it with its own kind
            curves = [c.curve for c in cands if src.nccl is None or sources[c.source].nccl == src.nccl]
            ends = [(f, la) for _, _, _, _, f, la in pending]
            lost = [False]
            seen: list[tuple[cost.Line, cost.Line]] = []

            def dominated(first: cost.Line, last: cost.Line, curves: list[cost.Piecewise] = curves,
                          ends: list[tuple[cost.Line, cost.Line]] = ends, lost: list[bool] = lost,
                          seen: list[tuple[cost.Line, cost.Line]] = seen, nccl: bool = src.nccl is not None) -> bool:
                lost[0] = prune.beaten_by(first, last, curves, ends, low, high)
                if not lost[0] and not nccl and first is not last:
                    seen.append((first, last))
                    return True  # the ends are known: the pieces wait for the second pass
                return lost[0]

            try:
                curve = cost.predict(program, machine, o.model, low, high, dominated, memo)
            except SmtcollError as e:
                reject(src, proto, inst, str(e)[:300])
                continue
            if curve is not None:
                cands.append(Candidate(i, proto, inst, curve, mode))
            elif seen:
                pending.append((i, proto, inst, program, *seen[0]))
            elif not lost[0]:
                reject(src, proto, inst, "the lowered program does not run to its end in the cost model")
    # the second pass: a candidate is recovered unless the live ones beat it everywhere
    for n, (i, proto, inst, program, first, last) in enumerate(pending):
        live = [(f, la) for j, (_, _, _, p, f, la) in enumerate(pending) if j > n and p is not None]
        if prune.beaten_by(first, last, [c.curve for c in cands], live, low, high):
            pending[n] = (i, proto, inst, None, first, last)
            continue
        try:
            curve = cost.predict(program, machine, o.model, low, high, None, memo)
        except SmtcollError as e:
            reject(sources[i], proto, inst, str(e)[:300])
            continue
        if curve is None:
            reject(sources[i], proto, inst, "the lowered program does not run to its end in the cost model")
        else:
            cands.append(Candidate(i, proto, inst, curve, mode))
    cands.sort(key=lambda c: (c.source, o.model.instances.index(c.instances), o.model.protocols.index(c.protocol)))
    return cands, rejected


def _lowered(src: Source, o: Options, kind: str, label: str, nodes: int, mode: str) -> Iterator[tuple[int, str, Any]]:
    """(instances, protocol, the lowered program or why it cannot be timed) for every variant of `src`."""
    from smtcoll.check.parse_rules import rank_nodes
    from smtcoll.lower import LowerOptions, lower
    from smtcoll.msccl.runtime import FIFO_MESSAGES, MAX_NODES

    # the lowering depends on the protocol only through its FIFO size (fusion) and the `proto` it
    # writes: one lowering per FIFO size, the protocol set afterwards (the same program as lowering anew)
    lowered_by: dict[tuple[int, int], Any] = {}
    for inst in o.model.instances:
        for proto in o.model.protocols:
            fifo = (inst, FIFO_MESSAGES[proto])
            if fifo not in lowered_by:
                try:
                    lowered_by[fifo] = lower(src.schedule, LowerOptions(
                        inst, proto, o.runtimes[0], mode, o.sizes.low, o.sizes.high, True, f"{kind} {label} x{nodes}"))
                except SmtcollError as e:
                    lowered_by[fifo] = str(e)[:300]
            done = lowered_by[fifo]
            if isinstance(done, str):
                yield inst, proto, done
                continue
            program = attrs.evolve(done.program, proto=proto)
            # a program over the readers' MAX_NODES XML nodes per rank is never written: it is not timed,
            # and it cannot prune a candidate that can be written. Only for one runtime: another runtime's
            # lowering spreads and pads the steps differently, so its file may fit
            most = max(rank_nodes(program, g) for g in program.gpus)
            if len(o.runtimes) == 1 and most > MAX_NODES:
                yield inst, proto, (f"a rank of the lowered program needs {most} XML nodes; the runtimes' "
                                    f"readers hold at most {MAX_NODES} (MAX_NODES)")
                continue
            yield inst, proto, program


def _constructions(topo: Topology, base: Collective, max_steps: int | None) -> list[tuple[str, Schedule, str | None]]:
    """The throughput constructions and NCCL's own algorithms (`smtcoll.synth.constructions`), each
    checked by the schedule checker inside."""
    from smtcoll.synth.constructions import constructions

    out = []
    for c in constructions(topo, base):
        if max_steps is None or len(c.schedule.steps) <= max_steps or c.nccl is not None:
            out.append((c.name, c.schedule, c.nccl))
    return out


def _bound(topo: Topology, base: Collective, lb: LowerBound | None, model: cost.Model,
           machine: cost.Machine) -> Any:
    """The time no schedule beats at a size (µs, a function of bytes), or None: the tight throughput
    bound of `smtcoll.bounds.throughput` where it is installed, else the synthesizer's lower bound
    (steps x the smallest latency + rounds per chunk x a chunk at the fastest link)."""
    try:
        from smtcoll.bounds.throughput import time_bound
    except ImportError:
        time_bound = None  # type: ignore[assignment]
    if time_bound is not None:
        tb = time_bound(topo, base, float(model.default_gbps), float(model.default_alpha_us))
        fixed = _fixed_costs(machine, model) if tb.us_per_byte > 0 else {}
        if not fixed:
            return lambda size: Fraction(tb.at(size))
        # what the model charges every program besides its data (`_fixed_costs`), with the data at the
        # protocol's efficiency: the least over the protocols the sweep tries
        return lambda size: max(Fraction(tb.at(size)), min(
            lat + tb.us_per_byte * size / model.efficiency[p] for p, lat in fixed.items()))
    if lb is None or lb.steps is None or lb.rounds_per_chunk is None or not topo.links:
        return None
    m = cost.machine(topo, 1, model)
    fastest = min(m.per_byte[(lk.src, lk.dst)] * lk.bandwidth for lk in topo.links)  # one unit of bandwidth
    alpha = min(m.alpha.values()) if model.link_alpha else Fraction(0)
    steps, q, a = lb.steps, lb.rounds_per_chunk, cost.addresses(base)
    return lambda size: steps * alpha + q * Fraction(size, a) * fastest


def _fixed_costs(m: cost.Machine, model: cost.Model) -> dict[str, Fraction]:
    """Per protocol, the time the model adds to every program's data time: the call's base latency, and the
    least hop latency, which the last chunk on the busiest resource still pays after its hold there (the run
    of `smtcoll.check.execution`: a chunk arrives the longest of its holds plus its hop's latency after it
    leaves). Empty when no link is timed."""
    if not m.per_byte:
        return {}
    out = {}
    for p in model.protocols:
        hop = min(model.hop_latency_us[m.kind[link]][p] + (m.alpha[link] if model.link_alpha else 0)
                  for link in m.per_byte)
        out[p] = model.call_latency_us[p] + hop
    return out


def model_bound(topo: Topology, base: Collective, nodes: int, model: cost.Model) -> Any:
    """The time no program beats in `model` at a size (µs, a function of bytes): the sweep's bound column,
    for benchmarks that re-read older runs."""
    return _bound(topo, base, None, model, cost.machine(topo, nodes, model))


def _scaled(topo: Topology, base: Collective, max_steps: int | None) -> Any:
    """The large-instance engine's schedule (checked by the independent checker inside the engine), or
    None if it has none."""
    from smtcoll.synth.scale.engine import synthesize

    try:
        scaled = synthesize(topo, base)
    except SmtcollError:
        return None
    return None if max_steps is not None and len(scaled.schedule.steps) > max_steps else scaled


def _baselines(sources: list[Source], cands: list[Candidate]) -> dict[str, list[cost.Piecewise]]:
    """NCCL's algorithms among the candidates: NCCL takes the best of its protocols and channel counts."""
    out: dict[str, list[cost.Piecewise]] = {}
    for c in cands:
        nccl = sources[c.source].nccl
        if nccl is not None:
            out.setdefault(nccl, []).append(c.curve)
    return out


def _select_and_write(sources: list[Source], cands: list[Candidate], sizes: SizeRange, runtime: str, label: str,
                      nodes: int, kind: str, bound: Any, ranks: int) -> tuple[list[dict], list[dict]]:
    """Select on the candidates that lower and verify; a candidate that does not is dropped (with the
    reason) and the selection is made again without it."""
    from smtcoll.msccl.writer import write_program

    alive = list(range(len(cands)))
    rejected: list[dict[str, Any]] = []
    baselines = _baselines(sources, cands)
    lowered_by: dict[tuple[int, int, int, str], Any] = {}  # `_lower_for`'s lowerings
    while alive:
        chosen = envelope([cands[i].curve for i in alive], sizes)
        files: list[dict[str, Any]] = []
        failed = None
        for rng, j in chosen:
            c = cands[alive[j]]
            src = sources[c.source]
            low, high = file_bounds(rng, runtime)
            name = f"{kind} {label} x{nodes} {src.name} {c.protocol} x{c.instances} {c.mode}"
            try:
                lowered = _lower_for(lowered_by, c, src, runtime, low, high, name)
                text = write_program(lowered.program)
                ok, why = _verify(lowered, text)
            except SmtcollError as e:
                ok, why = False, str(e)
            if not ok:
                failed = (alive[j], why)
                break
            files.append(_file_entry(src, c, rng, runtime, low, high, label, nodes, kind, bound, baselines, ranks,
                                     text))
        if failed is None:
            if not tiles([SizeRange(*f["sizes"]) for f in files], sizes):
                raise SmtcollError(f"internal error: the size ranges of {kind} on {label} do not tile {sizes.text()}")
            return files, rejected
        c = cands[failed[0]]
        src = sources[c.source]
        rejected.append({"runtime": runtime, "mode": c.mode, "candidate": src.name, "method": src.method,
                         "chunks": src.schedule.collective.chunk_factor, "protocol": c.protocol,
                         "instances": c.instances, "why": failed[1]})
        alive.remove(failed[0])
    return [], rejected


def _lower_for(lowered_by: dict[tuple[int, int, int, str], Any], c: Candidate, src: Source, runtime: str, low: int,
               high: int, name: str) -> Any:
    """`c` lowered for `runtime` with `minBytes=low maxBytes=high` and `name`. The lowering reads those three
    and the protocol only to write them (the protocol also through its FIFO size, fusion): a candidate chosen
    for several ranges, or the same program with another protocol of its FIFO size, is lowered once and its
    attributes set, the same program as lowering anew (the tests compare the two)."""
    from smtcoll.lower import LowerOptions, lower
    from smtcoll.msccl.runtime import FIFO_MESSAGES
    from smtcoll.msccl.writer import safe_name

    key = (c.source, c.instances, FIFO_MESSAGES[c.protocol], c.mode)
    if key not in lowered_by:
        try:
            lowered_by[key] = lower(src.schedule, LowerOptions(c.instances, c.protocol, runtime, c.mode, low, high,
                                                               True, name))
        except SmtcollError as e:
            lowered_by[key] = e
    done = lowered_by[key]
    if isinstance(done, SmtcollError):
        raise done
    return attrs.evolve(done, program=attrs.evolve(done.program, name=safe_name(name), proto=c.protocol,
                                                   min_bytes=low, max_bytes=high))


def _verify(lowered: Any, text: str) -> tuple[bool, str]:
    """The checker's verdict on the file exactly as it will be written."""
    from smtcoll.lower import verify_lowered

    with tempfile.TemporaryDirectory(prefix="smtcoll-sweep-") as tmp:
        probe = Path(tmp) / "algo.xml"
        probe.write_text(text)
        ok, report = verify_lowered(lowered, probe)
    if ok:
        return True, ""
    listed = "; ".join(f"{v.code}: {v.message}" for v in report.violations if v.severity == "error")[:500]
    return False, f"the lowered program does not verify ({report.verdict}): {listed or 'a target runtime rejects it'}"


def _us(t: Fraction) -> float:
    return round(float(t), 6)


def _file_entry(src: Source, c: Candidate, rng: SizeRange, runtime: str, low: int, high: int, label: str, nodes: int,
                kind: str, bound: Any, baselines: dict[str, list[cost.Piecewise]], ranks: int,
                text: str) -> dict[str, Any]:
    inst = src.schedule.instance
    predicted = []
    for size in rng.samples():
        t = c.curve.at(size)
        row: dict[str, Any] = {"bytes": size, "time_us": _us(t), "busbw_gbps": _gbps(kind, ranks, size, t)}
        best_nccl = None
        for algo in sorted(baselines):
            n = min(curve.at(size) for curve in baselines[algo])
            row[f"nccl_{algo}_us"] = _us(n)
            best_nccl = n if best_nccl is None else min(best_nccl, n)
        if best_nccl is not None:
            row["vs_nccl"] = round(float(best_nccl / t), 6) if t > 0 else None
        if bound is not None:
            b = bound(size)
            row.update(bound_us=_us(b), bound_busbw_gbps=_gbps(kind, ranks, size, b),
                       gap=round(float(t / b - 1), 6) if b > 0 else None)
        predicted.append(row)
    return {"name": f"{kind}-{_safe(label)}-{nodes}n-{c.mode}-{rng.low}-{rng.high}.xml", "runtime": runtime,
            "mode": c.mode,
            "topology": label, "nodes": nodes, "collective": kind, "ranks": ranks, "sizes": [rng.low, rng.high],
            "min_bytes": low, "max_bytes": high, "algorithm": src.name,
            "instance": {"steps": inst.steps, "rounds": inst.rounds, "chunks": inst.chunks},
            "candidate": c.source, "protocol": c.protocol, "instances": c.instances, "method": src.method,
            "nccl": src.nccl, "model": c.curve.to_json(),
            "predicted": predicted, "sha256": hashlib.sha256(text.encode()).hexdigest(), "xml": text}


def _gbps(kind: str, ranks: int, size: int, t: Fraction) -> float | None:
    v = cost.bus_bandwidth(kind, ranks, size, t)
    return None if v is None else round(v, 6)


def _certificates(result: Any, topo: Topology, base: Collective) -> list[dict[str, Any]]:
    """Certificates of the claims the frontier rests on (`smtcoll synth --prove`), as file texts."""
    from smtcoll.proofs.certify import certify

    out = []
    with tempfile.TemporaryDirectory(prefix="smtcoll-sweep-proofs-") as tmp:
        for entry in certify(result.pruned, topo, base, Path(tmp)):
            files = {}
            if entry["file"]:
                stem = Path(entry["file"])
                for path in sorted(Path(tmp).glob(stem.stem + ".*")):
                    files[path.name] = path.read_text()
            out.append({"claim": entry["claim"], "files": files, "why": entry.get("why")})
    return out


def main() -> None:
    """The child process: the task's JSON on stdin, the result's JSON on stdout."""
    memory = int(os.environ.get(MEMORY_ENV) or 0)
    if memory:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    fault = os.environ.get(FAULT_ENV)
    if fault == "hang":
        time.sleep(3600)
    if fault == "memory":
        blocks = []
        while True:  # until RLIMIT_AS stops it with MemoryError; bytes(n) is calloc'ed: address space only,
            blocks.append(bytes(64 << 20))  # pages never touched, so the test hook loads no machine's memory
    payload = json.load(sys.stdin)
    try:
        result = compute(payload)
    except SmtcollError as e:
        result = {"status": "failed", "why": str(e)}
    except MemoryError:
        result = {"status": "failed", "why": "out of memory (the task's memory limit)"}
    sys.stdout.write(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
