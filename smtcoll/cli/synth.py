"""`smtcoll synth`: step-optimal schedules and the latency/bandwidth frontier, with the proof status.

Exit codes (smtcoll/errors.py): 0 found, 1 proved that none exists within the bounds, 2 unusable input,
3 time or memory limit (the best schedule and the frontier known so far are still reported and written),
4 found (and written with -o), but the MSCCL XML of --xml could not be written (the reason names the
runtime limit and the option that avoids it).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from smtcoll import limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.lower import Protocol, Target
from smtcoll.cli.options import (
    MAX_CHUNKS,
    CollectiveOpt,
    ForceOpt,
    FormatOpt,
    NodesOpt,
    RootOpt,
    TimeoutOpt,
    TopologyOpt,
    refuse_overwrite,
)
from smtcoll.cli.progress import solver_progress
from smtcoll.draw import need_matplotlib  # no matplotlib import until it is called
from smtcoll.errors import ModelError, NotVerified, NotWritten, OutputError, TooLarge
from smtcoll.formats import save_schedule
from smtcoll.lower import CannotLower, LowerOptions, RejectedSchedule
from smtcoll.model import Schedule
from smtcoll.text import count

if TYPE_CHECKING:
    from smtcoll.synth.result import SynthResult

EXIT = {"found": 0, "infeasible": 1, "timeout": 3}

JSON_SCHEMA = "smtcoll-synth/1"  # the version of the shape of `synth --format json` (docs/synth.md)


class Method(str, enum.Enum):
    auto = "auto"
    exact = "exact"
    scale = "scale"
    # the constructions (smtcoll.synth.constructions.METHODS; a test keeps the two lists equal)
    ring = "ring"
    tree = "tree"
    direct = "direct"
    multiring = "multiring"
    hier = "hier"
    hier2d = "hier2d"


class Strategy(str, enum.Enum):
    instance = "instance"
    least_steps = "least-steps"
    pareto = "pareto"


Count = Optional[int]


@app.command("synth")
def synth(
    topology: TopologyOpt,
    collective: CollectiveOpt,
    root: RootOpt = None,
    chunks: Annotated[int, typer.Option(metavar="C", min=1, max=MAX_CHUNKS,
                                        help="split every chunk in C (instance, least-steps)")] = 1,
    steps: Annotated[Count, typer.Option(metavar="S", min=1, help="steps S (instance strategy)")] = None,
    rounds: Annotated[Count, typer.Option(metavar="R", min=1, help="rounds R in all (default: one per step)")] = None,
    strategy: Annotated[Optional[Strategy], typer.Option(
        metavar="instance|least-steps|pareto", help="instance (with --steps), least-steps (default) or pareto")] = None,
    max_steps: Annotated[Count, typer.Option(metavar="S", min=1, help="least-steps/pareto: give up above this "
                                             "many steps (default: lower bound + 2 * ranks)")] = None,
    max_chunks: Annotated[int, typer.Option(metavar="C", min=1, max=MAX_CHUNKS,
                                            help="pareto: the most chunks per input to consider")] = 6,
    timeout: TimeoutOpt = None,
    max_memory: Annotated[Optional[int], typer.Option(
        "--max-memory", metavar="MB", help="memory cap in MB (default: 3/4 of the memory, at most 4096); an encoding "
        "estimated not to fit is not tried (exit 3, or 2 for --strategy instance)", min=64)] = None,
    max_cells: Annotated[int, typer.Option("--max-cells", metavar="N", help="refuse collectives with more ranks x "
                                           "chunks (after --chunks)", min=1)] = limits.MAX_CELLS,
    nodes: NodesOpt = 1,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
                                                   help="write the schedule (JSON) here")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--dir", "-d", metavar="DIR", file_okay=False,
                                                    help="write every schedule found (each Pareto point) into DIR, "
                                                         "named after its instance: allgather-dgx1-s2-r3-c2.json")
                       ] = None,
    xml: Annotated[Optional[Path], typer.Option(metavar="FILE|DIR", help="also lower the schedule to MSCCL XML "
                                                "(verified before it is written; exit 4 when it cannot be written; "
                                                "see smtcoll lower); a directory (a path without .xml): every schedule "
                                                "found, named after its instance")] = None,
    runtime: Annotated[Target, typer.Option(metavar="RUNTIME",
                                            help="--xml: the runtime(s) the file is for, as in smtcoll lower: "
                                            "auto, both, executor or legacy")
                       ] = Target.auto,
    instances: Annotated[int, typer.Option(metavar="N", help="--xml: replicate over this many channels", min=1,
                                           max=32)] = 1,
    protocol: Annotated[Protocol, typer.Option(metavar="Simple|LL|LL128", help="--xml: NCCL protocol of the kernel")
                        ] = Protocol.Simple,
    plot: Annotated[Optional[Path], typer.Option(metavar="FILE.png|FILE.svg", help="pareto: plot the frontier, "
                                                 "the pruned points and the lower bounds")] = None,
    prove: Annotated[Optional[Path], typer.Option(metavar="DIR", help="write certificates of every claim the result "
                                                  "rests on into DIR (re-check: smtcoll proof check)")] = None,
    method: Annotated[Method, typer.Option(metavar="auto|exact|scale|NAME", help="least-steps: exact (the SMT search), "
                                           "scale (the large-instance engine: seconds, with its gap to the bound), "
                                           "auto (the engine, then the exact search up to 16 ranks), or a "
                                           "throughput construction: ring, tree, direct (NCCL's), multiring, "
                                           "hier, hier2d (docs/synth.md)")
                      ] = Method.auto,
    force: ForceOpt = False,
    fmt: FormatOpt = Format.text,
) -> None:
    """Synthesize a schedule with the fewest steps, one instance, or the whole Pareto frontier."""
    # the lower ends and --timeout's range are declared on the options (typer checks them); the upper ends
    # of what the encoding can hold are smtcoll.limits'
    limits.check_timeout(timeout)
    for name, value, high in (("--steps", steps, limits.MAX_ROUNDS), ("--rounds", rounds, limits.MAX_ROUNDS),
                              ("--max-steps", max_steps, limits.MAX_ROUNDS), ("--chunks", chunks, limits.MAX_CHUNKS),
                              ("--max-chunks", max_chunks, MAX_CHUNKS)):
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
    if plot is not None and chosen is not Strategy.pareto:
        raise ModelError("--plot", "draws the Pareto frontier: use it with --strategy pareto")
    if rounds is not None and steps is not None and rounds < steps:
        raise ModelError("--rounds", f"= {rounds}: rounds must be >= steps ({steps})")
    xml_dir = xml is not None and (xml.is_dir() or xml.suffix.lower() != ".xml")
    # before any work: an existing file (without --force), a device or a folder is refused now, not after the search
    refuse_overwrite(force, output, None if xml_dir else xml, plot)
    if plot is not None:
        need_matplotlib("--plot", plot)
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

    try:
        with solver_progress() as progress:
            if chosen is Strategy.instance:
                assert steps is not None
                result = strategies.instance(topo, base, steps, rounds, chunks, timeout, progress,
                                             max_memory_mb=memory)
            elif chosen is Strategy.least_steps:
                from smtcoll.synth.scale import run

                result = run.least_steps(topo, base, method.value, rounds, chunks, max_steps, timeout, progress,
                                         max_memory_mb=memory)
            else:
                result = strategies.pareto(topo, base, max_chunks, max_steps, timeout, progress,
                                           max_memory_mb=memory)
    finally:
        z3.set_param("memory_max_size", 0)  # z3's default (no cap): the cap is this command's, not the process's
    schedule = _named(result.schedule, base.name, topo.name)
    found = [s for s in (_named(p.schedule, base.name, topo.name) for p in result.points) if s is not None]
    if schedule is not None and not found:
        found = [schedule]
    written: list[Path] = []
    xml_error: str | None = None
    lowering = LowerOptions(instances, protocol.value, runtime.value)
    if schedule is not None:
        if output is not None:
            save_schedule(schedule, output)
            written.append(output)
        if out_dir is not None:
            written += write_all(found, out_dir, ".json", force)
        if xml is not None:
            if xml_dir:
                xml_written, xml_error = write_all_xml(found, xml, force, lowering)
                written += xml_written
            else:
                xml_error = _lower(schedule, xml, lowering)
                written += [xml] if xml_error is None else []
    if plot is not None:
        from smtcoll.draw.pareto import draw_pareto

        draw_pareto(result, f"{base.name} on {topo.name}", plot)
        written.append(plot)
    data = {"schema": JSON_SCHEMA, **result.to_json()}
    data["files"] = [str(w) for w in written]
    if xml is not None:
        data["xml"] = {"file": str(xml), "written": schedule is not None and xml_error is None, "error": xml_error}
    if prove is not None:
        from smtcoll.proofs.certify import certify  # networkx: only when certificates are asked for

        data["certificates"] = certify(result.pruned, topo, base, prove)
    if fmt is Format.json:
        print_json(data)
    else:
        _text(result, topo.name, base.name, output if schedule is not None else None)
        for w in written:
            if w != output:
                typer.echo(f"written: {w}" + (" (MSCCL XML, verified)" if w.suffix == ".xml" else ""))
        for c in data.get("certificates", []):
            typer.echo(f"certificate {c['file']}: {c['claim']}" if c["file"] else f"not certified: {c['claim']}: "
                       f"{c['why']}")
    if xml_error is not None:
        typer.echo(f"error: {xml}: the MSCCL XML was not written: {xml_error}", err=True)
        if result.status == "found":
            raise typer.Exit(NotWritten.exit_code)
    raise typer.Exit(EXIT[result.status])


def _named(schedule: Schedule | None, coll: str, topo: str) -> Schedule | None:
    """The schedule named after its instance (`allgather-dgx1-s3-r7-c6`): its file name and XML name."""
    if schedule is None:
        return None
    return schedule.renamed(schedule.instance.label(coll, topo))  # not validated again: its parts are unchanged


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


def _paths(schedules: list[Schedule], folder: Path, suffix: str, force: bool) -> list[Path]:
    """`folder/<instance name><suffix>` for every schedule, the folder created; existing files are refused
    unless `force`, all of them before anything is written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(str(folder), f"cannot create the folder: {e.strerror or e}") from None
    paths = [folder / f"{s.name}{suffix}" for s in schedules]
    refuse_overwrite(force, *paths)
    return paths


def write_all(schedules: list[Schedule], folder: Path, suffix: str, force: bool) -> list[Path]:
    """Every schedule into `folder` as `<instance name>.json`, like msccl-tools' `pareto-optimal -d DIR`."""
    paths = _paths(schedules, folder, suffix, force)
    for s, p in zip(schedules, paths):
        save_schedule(s, p)
    return paths


def write_all_xml(schedules: list[Schedule], folder: Path, force: bool,
                  options: LowerOptions) -> tuple[list[Path], str | None]:
    """Every schedule lowered into `folder` as `<instance name>.xml`, each verified before it is written; the
    files written and the first reason a file could not be (exit 4), None when all were."""
    written: list[Path] = []
    error: str | None = None
    for s, p in zip(schedules, _paths(schedules, folder, ".xml", force)):
        why = _lower(s, p, options)
        if why is None:
            written.append(p)
        elif error is None:
            error = f"{p.name}: {why}"
    return written, error


def _text(result: SynthResult, topo: str, coll: str, output: Path | None) -> None:
    echo = typer.echo
    lb = result.lower_bound
    s = result.schedule
    if result.status == "found" and s is not None:
        echo(f"found: {coll} on {topo}: {count(len(s.steps), 'step')}, {count(s.rounds, 'round')}, "
             f"{count(s.collective.chunk_factor, 'chunk')} ({count(sum(len(x.sends) for x in s.steps), 'send')}); "
             "accepted by the checker")
    else:
        echo(f"{result.status}: {result.message}")
    if result.method != "exact":
        echo(f"method: {result.method}")
    if result.optimal.get("why") and "steps" in result.optimal:
        echo(f"optimal: {count(result.optimal['steps'], 'step')} ({result.optimal['why']})")
    elif result.gap:
        gap = result.gap
        echo(f"gap to the lower bound: {count(gap['gap_steps'], 'step')}, {count(gap['gap_rounds'], 'round')}")
    if lb["steps"] is None:  # answered before any bound: the reachability witness is the message
        echo(f"{count(len(result.attempts), 'solver call')}, {result.seconds:.2f} s")
        return
    echo(f"lower bounds: {count(lb['steps'], 'step')} with any rounds ({lb['steps_why']}); "
         f"{count(lb['rounds'], 'round')}, rounds/chunk >= {lb['rounds_per_chunk_exact']} ({lb['rounds_why']})")
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
            echo(f"variant {v['method']}: {count(v['steps'], 'step')}, {count(v['rounds'], 'round')}")
        else:
            echo(f"variant {v['method']}: {v.get('status')} {v.get('why', '')}".rstrip())
    if result.status == "found" and s is not None and result.message:
        echo(result.message)
    if output is not None:
        echo(f"schedule written to {output}")
    echo(f"{count(len(result.attempts), 'solver call')}, {result.seconds:.2f} s")
