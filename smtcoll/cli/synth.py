"""`smtcoll synth`: step-optimal schedules and the latency/bandwidth frontier, with the proof status.

Exit codes (smtcoll/errors.py): 0 found, 1 proved that none exists within the bounds, 2 unusable input,
3 time or memory limit (the best schedule and the frontier known so far are still reported and written),
4 found (and written with -o), but the MSCCL XML of --xml could not be written (the reason names the
runtime limit and the option that avoids it).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from smtcoll import limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.lower import Protocol, Target
from smtcoll.errors import ModelError, NotVerified, NotWritten, OutputError, TooLarge
from smtcoll.files import check_writable
from smtcoll.formats import save_schedule
from smtcoll.lower import CannotLower, LowerOptions, RejectedSchedule
from smtcoll.model import Schedule
from smtcoll.synth.result import Attempt, SynthResult

EXIT = {"found": 0, "infeasible": 1, "timeout": 3}


class Method(str, enum.Enum):
    auto = "auto"
    exact = "exact"
    scale = "scale"


class Strategy(str, enum.Enum):
    instance = "instance"
    least_steps = "least-steps"
    pareto = "pareto"


def _progress() -> Callable[[Attempt], None] | None:
    """One line per solver question on stderr, only for a person watching a terminal."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    colors = {"sat": "green", "unsat": "yellow", "timeout": "red"}

    def show(a: Attempt) -> None:
        rounds = "any" if a.rounds is None else str(a.rounds)
        console.print(f"  steps {a.steps:>3}  rounds <= {rounds:>4}  chunks {a.chunks:>2}  {a.method:<9}  "
                      f"[{colors.get(a.verdict, 'white')}]{a.verdict:<8}[/]  {a.seconds:7.2f} s")

    return show


@app.command("synth")
def synth(
    topology: Annotated[str, typer.Option("--topology", "-t", help="a built-in name (dgx1, ring:8) or a .toml file")],
    collective: Annotated[str, typer.Option("--collective", "-c", help="a built-in name (allgather) or a .toml file")],
    root: Annotated[Optional[int], typer.Option(help="root rank of a rooted collective")] = None,
    chunks: Annotated[int, typer.Option(help="split every chunk in C (instance, least-steps)")] = 1,
    steps: Annotated[Optional[int], typer.Option(help="steps S (instance strategy)")] = None,
    rounds: Annotated[Optional[int], typer.Option(help="rounds R in all (default: one per step)")] = None,
    strategy: Annotated[Optional[Strategy], typer.Option(
        help="instance (with --steps), least-steps (default) or pareto")] = None,
    max_steps: Annotated[Optional[int], typer.Option(help="least-steps/pareto: give up above this many steps "
                                                          "(default: lower bound + 2 * ranks)")] = None,
    max_chunks: Annotated[int, typer.Option(help="pareto: the most chunks per input to consider")] = 6,
    timeout: Annotated[Optional[float], typer.Option(help="time limit in seconds for the whole run, every phase "
                                                          "included (exit 3 when reached)")] = None,
    max_memory: Annotated[Optional[int], typer.Option(
        "--max-memory", help="memory cap in MB (default: 3/4 of the memory, at most 4096); an encoding estimated "
                             "not to fit is not tried (exit 3, or 2 for --strategy instance)", min=64)] = None,
    max_cells: Annotated[int, typer.Option("--max-cells", help="refuse collectives with more ranks x chunks "
                                           "(after --chunks)", min=1)] = limits.MAX_CELLS,
    nodes: Annotated[int, typer.Option(help="compose this many nodes through the NIC model")] = 1,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the schedule (JSON) here")] = None,
    xml: Annotated[Optional[Path], typer.Option(help="also lower the schedule to MSCCL XML (verified before it "
                                                     "is written; exit 4 when it cannot be written)")] = None,
    runtime: Annotated[Target, typer.Option(help="--xml: the runtime(s) the file is for, as in smtcoll lower")]
    = Target.auto,
    instances: Annotated[int, typer.Option(help="--xml: replicate over this many channels", min=1, max=32)] = 1,
    protocol: Annotated[Protocol, typer.Option(help="--xml: NCCL protocol of the kernel")] = Protocol.Simple,
    prove: Annotated[Optional[Path], typer.Option(help="write certificates of every claim the result rests on "
                                                       "into this folder (re-check: smtcoll proof check)")] = None,
    method: Annotated[Method, typer.Option(help="least-steps: exact (the SMT search), scale (the large-instance "
                                                "engine: seconds, with its gap to the bound) or auto (the engine, "
                                                "then the exact search up to 16 ranks)")] = Method.auto,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text for people, json for scripts")] = Format.text,
) -> None:
    """Synthesize a schedule with the fewest steps, one instance, or the whole Pareto frontier."""
    for name, value, low in (("--chunks", chunks, 1), ("--steps", steps, 1), ("--rounds", rounds, 1),
                             ("--max-steps", max_steps, 1), ("--max-chunks", max_chunks, 1), ("--nodes", nodes, 1)):
        if value is not None and value < low:
            raise ModelError(name, f"must be >= {low}, got {value}")
    limits.check_timeout(timeout)
    for name, value, high in (("--steps", steps, limits.MAX_ROUNDS), ("--rounds", rounds, limits.MAX_ROUNDS),
                              ("--max-steps", max_steps, limits.MAX_ROUNDS), ("--chunks", chunks, limits.MAX_CHUNKS),
                              ("--max-chunks", max_chunks, 64)):
        if value is not None and value > high:
            raise TooLarge(name, f"= {value}: at most {high}")
    chosen = strategy or (Strategy.instance if steps is not None else Strategy.least_steps)
    if chosen is Strategy.instance and steps is None:
        raise ModelError("--steps", "the instance strategy needs --steps S")
    if chosen is not Strategy.instance and steps is not None:
        raise ModelError("--steps", f"applies to the instance strategy only, not {chosen.value}")
    if chosen is Strategy.pareto and (chunks != 1 or rounds is not None):
        raise ModelError("--chunks/--rounds", "pareto searches every rounds and chunks count itself; "
                                              "bound it with --max-chunks and --max-steps")
    if rounds is not None and steps is not None and rounds < steps:
        raise ModelError("--rounds", f"= {rounds}: rounds must be >= steps ({steps})")
    for path in (output, xml):
        if path is not None:
            check_writable(path)  # before any work: a device or a folder is refused now, not after the search
    memory = max_memory if max_memory is not None else limits.default_memory_mb()
    with limits.cell_limit(max_cells):
        topo = specs.resolve_topology(topology, nodes)
        base = specs.resolve_collective(collective, topo.ranks, root, 1)
        limits.check_cells(base.name, base.ranks, base.chunks, max_chunks if chosen is Strategy.pareto else chunks)
    if base.ranks != topo.ranks:
        raise ModelError("collective", f"has {base.ranks} ranks but topology {topo.name} has {topo.ranks}")
    if chosen is Strategy.instance:
        assert steps is not None  # checked above: the instance strategy needs --steps
        coll = base.with_chunks(chunks)
        n = limits.encoding_variables(steps, rounds or steps, topo.ranks, len(topo.links), coll.chunks,
                                      len(coll.addresses))
        if not limits.encoding_fits(n, memory):
            raise TooLarge("instance", f"the encoding of {steps} steps, {rounds or steps} rounds and {chunks} chunk(s) "
                                       f"(about {n} variables) would not fit in {memory} MB", "--max-memory")
    import z3  # the solver: imported only when synthesizing, not for other commands

    z3.set_param("memory_max_size", memory)
    limits.cap_memory(memory)
    from smtcoll.synth import strategies

    progress = _progress()
    try:
        if chosen is Strategy.instance:
            assert steps is not None
            result = strategies.instance(topo, base, steps, rounds, chunks, timeout, progress, max_memory_mb=memory)
        elif chosen is Strategy.least_steps:
            from smtcoll.synth.scale import run

            result = run.least_steps(topo, base, method.value, rounds, chunks, max_steps, timeout, progress,
                                     max_memory_mb=memory)
        else:
            result = strategies.pareto(topo, base, max_chunks, max_steps, timeout, progress, max_memory_mb=memory)
    finally:
        z3.set_param("memory_max_size", 0)  # z3's default (no cap): the cap is this command's, not the process's
    schedule = result.schedule
    xml_error: str | None = None
    if schedule is not None:
        schedule = schedule.renamed(f"{base.name} on {topo.name}: {len(schedule.steps)} steps, "
                                    f"{schedule.rounds} rounds, {schedule.collective.chunk_factor} chunk(s)")
        if output is not None:
            save_schedule(schedule, output)
        if xml is not None:
            xml_error = _lower(schedule, xml, LowerOptions(instances, protocol.value, runtime.value))
    data = result.to_json()
    if xml is not None:
        data["xml"] = {"file": str(xml), "written": schedule is not None and xml_error is None, "error": xml_error}
    if prove is not None:
        from smtcoll.proofs.certify import certify  # networkx: only when certificates are asked for

        data["certificates"] = certify(result.pruned, topo, base, prove)
    if fmt is Format.json:
        print_json(data)
    else:
        _text(result, topo.name, base.name, output if schedule is not None else None)
        if xml is not None and schedule is not None and xml_error is None:
            typer.echo(f"MSCCL XML written to {xml} (verified)")
        for c in data.get("certificates", []):
            typer.echo(f"certificate {c['file']}: {c['claim']}" if c["file"] else f"not certified: {c['claim']}: "
                       f"{c['why']}")
    if xml_error is not None:
        typer.echo(f"error: {xml}: the MSCCL XML was not written: {xml_error}", err=True)
        if result.status == "found":
            raise typer.Exit(NotWritten.exit_code)
    raise typer.Exit(EXIT[result.status])


def _lower(schedule: Schedule, xml: Path, options: LowerOptions) -> str | None:
    """Lower, verify and write the XML; the reason when it cannot be (a runtime limit names the option that
    avoids it), None when written."""
    from smtcoll.lower import lower_to_file

    try:
        lower_to_file(schedule, xml, options)
    except (CannotLower, RejectedSchedule, OutputError) as e:
        return str(e)
    except NotVerified as e:
        first = next((v for v in e.report.violations if v.severity == "error"), None) if e.report else None
        return "the lowered program does not verify" + (f" ({first.code}: {first.message})" if first else "")
    return None


def _text(result: SynthResult, topo: str, coll: str, output: Path | None) -> None:
    echo = typer.echo
    lb = result.lower_bound
    s = result.schedule
    if result.status == "found" and s is not None:
        echo(f"found: {coll} on {topo}: {len(s.steps)} steps, {s.rounds} rounds, {s.collective.chunk_factor} "
             f"chunk(s) ({sum(len(x.sends) for x in s.steps)} sends); accepted by the checker")
    else:
        echo(f"{result.status}: {result.message}")
    if result.method != "exact":
        echo(f"method: {result.method}")
    if result.optimal.get("why") and "steps" in result.optimal:
        echo(f"optimal: {result.optimal['steps']} steps ({result.optimal['why']})")
    elif result.gap:
        echo(f"gap to the lower bound: {result.gap['gap_steps']} step(s), {result.gap['gap_rounds']} round(s)")
    if lb["steps"] is None:  # answered before any bound: the reachability witness is the message
        echo(f"{len(result.attempts)} solver call(s), {result.seconds:.2f} s")
        return
    echo(f"lower bounds: {lb['steps']} steps with any rounds ({lb['steps_why']}); {lb['rounds']} rounds, "
         f"rounds/chunk >= {lb['rounds_per_chunk_exact']} ({lb['rounds_why']})")
    if result.strategy == "pareto":
        unproved = " (found so far, not proved complete)" if result.status != "found" else ""
        echo(f"Pareto frontier{unproved} (steps, rounds, chunks, rounds/chunk):" if result.points
             else "no Pareto point")
        for p in result.points:
            echo(f"  ({p.steps}, {p.rounds}, {p.chunks})  {(p.rounds or 0) / p.chunks:.4g}")
        echo(f"pruned ({len(result.pruned)}), each with its reason:")
        for p in result.pruned:
            what = f"steps {p.steps}" + (f", chunks {p.chunks}" if p.chunks else "") + \
                   (f", rounds <= {p.rounds}" if p.rounds is not None else "")
            echo(f"  {what}: {p.why}")
    for v in result.variants:
        if "steps" in v:
            echo(f"variant {v['method']}: {v['steps']} steps, {v['rounds']} rounds")
        else:
            echo(f"variant {v['method']}: {v.get('status')} {v.get('why', '')}".rstrip())
    if result.status == "found" and s is not None and result.message:
        echo(result.message)
    if output is not None:
        echo(f"schedule written to {output}")
    echo(f"{len(result.attempts)} solver call(s), {result.seconds:.2f} s")
