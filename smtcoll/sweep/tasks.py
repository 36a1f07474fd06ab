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

import hashlib
import json
import os
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

import smtcoll
from smtcoll import specs
from smtcoll.errors import SmtcollError
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.sweep import cost
from smtcoll.sweep.selection import envelope, tiles
from smtcoll.sweep.sizes import SizeRange, file_bounds

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
    timing: cost.Timing = attrs.Factory(cost.Timing)
    prove: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"sizes": [self.sizes.low, self.sizes.high], "runtimes": list(self.runtimes), "budget": self.budget,
                "max_chunks": self.max_chunks, "max_steps": self.max_steps,
                "timing": {"alpha_us": self.timing.alpha_us, "gbps_per_unit": self.timing.gbps_per_unit},
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
        """The content hash: topology, collective, options and the smtcoll version, nothing else."""
        text = json.dumps({"task": self.payload(), "smtcoll": smtcoll.__version__}, sort_keys=True)
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


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._" else "-" for ch in text)


def _options(data: dict[str, Any]) -> Options:
    t = data["timing"]
    return Options(SizeRange(*data["sizes"]), tuple(data["runtimes"]), data["budget"], data["max_chunks"],
                   data["max_steps"], cost.Timing(t["alpha_us"], t["gbps_per_unit"]), data["prove"])


def versions() -> dict[str, str]:
    import z3

    return {"smtcoll": smtcoll.__version__, "z3": z3.get_full_version()}


# --- the task ------------------------------------------------------------------------------------

@attrs.frozen
class Candidate:
    point: int  # index into the frontier
    schedule: Schedule
    protocol: str
    instances: int
    line: cost.Line


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
        # the wall clock is only the safety stop, 30 s before the task's own kill (--task-timeout: 2 x + 60)
        request = SynthRequest(strategy="pareto", method="exact", max_steps=o.max_steps, max_chunks=o.max_chunks,
                               limits=Limits(timeout=min(2 * o.budget + 30, 7 * 24 * 3600.0),
                                             work=max(1, min(10**15, int(o.budget * WORK_PER_SECOND)))))
        result = synthesize(topo, base, request)
        status = result.status
    except SmtcollError:
        raise
    except Exception as e:
        from smtcoll.synth.result import SynthResult

        result = SynthResult("timeout", None, "pareto", {}, (),
                             message=f"the synthesizer failed ({type(e).__name__}: {str(e)[:200]}); please report this")
        status = "error"
    schedules = [p.schedule for p in result.points if p.schedule is not None]
    out: dict[str, Any] = {"status": "ok", "versions": versions(),
                           "synth": {"status": status,
                                     "frontier": [[p.steps, p.rounds, p.chunks] for p in result.points
                                                  if p.schedule is not None],
                                     "complete": result.status == "found", "message": result.message,
                                     "lower_bound": result.lower_bound, "optimal": result.optimal},
                           "files": [], "rejected": [], "certificates": []}
    method = "pareto" if result.status == "found" else "pareto (time limit: frontier incomplete)"
    if result.status != "found":  # the large-instance engine's schedule joins an incomplete frontier
        scaled = _scaled(topo, base, o.max_steps)
        if scaled is not None:
            schedules.append(scaled.schedule)
            method = f"{method} + large-instance engine ({scaled.method})" if len(schedules) > 1 else \
                f"large-instance engine: {scaled.method} (the exact search: {status})"
    if not schedules:
        out.update(status="failed", why=f"the synthesizer found no schedule ({status}: {result.message})")
        return out
    cands = [Candidate(i, s, proto, inst, cost.predict(s, proto, inst, o.timing))
             for i, s in enumerate(schedules) for proto in cost.PROTOCOLS for inst in cost.INSTANCES]
    lb = result.lower_bound
    bound = None
    if lb.get("steps") is not None and lb.get("rounds_per_chunk_exact") is not None:
        bound = cost.bound_line(topo, base, lb["steps"], Fraction(lb["rounds_per_chunk_exact"]), o.timing)
    for runtime in o.runtimes:
        files, rejected = _select_and_write(cands, o.sizes, runtime, label, nodes, kind, method, bound, topo.ranks)
        out["files"] += files
        out["rejected"] += rejected
    if o.prove:
        out["certificates"] = _certificates(result, topo, base)
    return out


def _scaled(topo: Topology, base: Collective, max_steps: int | None) -> Any:
    """Where the exact search gives no complete frontier within its budget: the large-instance engine's
    schedule (checked by the independent checker inside the engine), or None if it has none."""
    from smtcoll.synth.scale.engine import synthesize

    try:
        scaled = synthesize(topo, base)
    except SmtcollError:
        return None
    return None if max_steps is not None and len(scaled.schedule.steps) > max_steps else scaled


def _select_and_write(cands: list[Candidate], sizes: SizeRange, runtime: str, label: str, nodes: int, kind: str,
                      method: str, bound: cost.Line | None, ranks: int) -> tuple[list[dict], list[dict]]:
    """Select on the candidates that lower and verify; a candidate that does not is dropped (with the
    reason) and the selection is made again without it."""
    from smtcoll.lower import LowerOptions, lower
    from smtcoll.msccl.writer import write_program

    alive = list(range(len(cands)))
    rejected: list[dict[str, Any]] = []
    while alive:
        chosen = envelope([cands[i].line for i in alive], sizes)
        files: list[dict[str, Any]] = []
        failed = None
        for rng, j in chosen:
            c = cands[alive[j]]
            low, high = file_bounds(rng, runtime)
            s = c.schedule
            inst = s.instance
            name = f"{kind} {label} x{nodes} ({inst.steps},{inst.rounds},{inst.chunks}) {c.protocol} x{c.instances}"
            try:
                lowered = lower(s, LowerOptions(c.instances, c.protocol, runtime, "both", low, high, True, name))
                text = write_program(lowered.program)
                ok, why = _verify(lowered, text)
            except SmtcollError as e:
                ok, why = False, str(e)
            if not ok:
                failed = (alive[j], why)
                break
            files.append(_file_entry(c, rng, runtime, low, high, label, nodes, kind, method, bound, ranks, text))
        if failed is None:
            if not tiles([SizeRange(*f["sizes"]) for f in files], sizes):
                raise SmtcollError(f"internal error: the size ranges of {kind} on {label} do not tile {sizes.text()}")
            return files, rejected
        c = cands[failed[0]]
        rejected.append({"runtime": runtime, "point": c.point, "protocol": c.protocol, "instances": c.instances,
                         "why": failed[1]})
        alive.remove(failed[0])
    return [], rejected


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


def _file_entry(c: Candidate, rng: SizeRange, runtime: str, low: int, high: int, label: str, nodes: int, kind: str,
                method: str, bound: cost.Line | None, ranks: int, text: str) -> dict[str, Any]:
    inst = c.schedule.instance
    predicted = []
    for size in rng.samples():
        t = c.line.at(size)
        row: dict[str, Any] = {"bytes": size, "time_us": _us(t), "busbw_gbps": _gbps(kind, ranks, size, t)}
        if bound is not None:
            b = bound.at(size)
            row.update(bound_us=_us(b), bound_busbw_gbps=_gbps(kind, ranks, size, b),
                       gap=round(float(t / b - 1), 6) if b > 0 else None)
        predicted.append(row)
    return {"name": f"{kind}-{_safe(label)}-{nodes}n-{rng.low}-{rng.high}.xml", "runtime": runtime,
            "topology": label, "nodes": nodes, "collective": kind, "ranks": ranks, "sizes": [rng.low, rng.high],
            "min_bytes": low, "max_bytes": high,
            "instance": {"steps": inst.steps, "rounds": inst.rounds, "chunks": inst.chunks},
            "frontier_point": c.point, "protocol": c.protocol, "instances": c.instances, "method": method,
            "model": {"fixed_us": _us(c.line.fixed), "us_per_byte": float(c.line.slope)},
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
