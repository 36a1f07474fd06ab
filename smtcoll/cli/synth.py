"""`smtcoll synth`: step-optimal schedules and the latency/bandwidth frontier, with the proof status.

Exit codes (smtcoll/errors.py): 0 found, 1 proved that none exists within the bounds, 2 unusable input,
3 time or memory limit (the best schedule and the frontier known so far are still reported and written),
4 found (and written with -o), but the MSCCL XML of --xml could not be written (the reason names the
runtime limit and the option that avoids it).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from smtcoll import limits, specs
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.options import (
    MAX_CHUNKS,
    CollectiveOpt,
    ForceOpt,
    FormatOpt,
    NodesOpt,
    Protocol,
    RootOpt,
    Target,
    TimeoutOpt,
    TopologyOpt,
    refuse_overwrite,
)
from smtcoll.cli.progress import solver_progress
from smtcoll.draw import need_matplotlib  # no matplotlib import until it is called
from smtcoll.errors import ModelError, NotVerified, NotWritten, OutputError
from smtcoll.formats import save_schedule
from smtcoll.model import Schedule
from smtcoll.synth.door import synthesize
from smtcoll.synth.request import Limits, SynthRequest
from smtcoll.text import count

if TYPE_CHECKING:
    from smtcoll.lower import LowerOptions
    from smtcoll.synth.result import SynthResult

EXIT = {"found": 0, "infeasible": 1, "timeout": 3}
STOPPED = {"budget": "the work budget (--budget; the same on any machine)",
           "time": "the time limit (--timeout: the result may differ on a busier machine)",
           "memory": "the memory cap (--max-memory)"}



class Method(enum.StrEnum):
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
    rail = "rail"
    treepack = "treepack"
    exchange = "exchange"
    rail_alltoall = "rail_alltoall"
    pairwise = "pairwise"
    lanes = "lanes"
    forest = "forest"
    hierforest = "hierforest"


class Strategy(enum.StrEnum):
    instance = "instance"
    least_steps = "least-steps"
    pareto = "pareto"


Count = int | None


@app.command("synth")
def synth(
    topology: TopologyOpt,
    collective: CollectiveOpt,
    root: RootOpt = None,
    chunks: Annotated[int, typer.Option(metavar="C", min=1, max=MAX_CHUNKS,
                                        help="split every chunk in C (instance, least-steps)")] = 1,
    steps: Annotated[Count, typer.Option(metavar="S", min=1, help="steps S (instance strategy)")] = None,
    rounds: Annotated[Count, typer.Option(metavar="R", min=1, help="rounds R in all (default: one per step)")] = None,
    strategy: Annotated[Strategy | None, typer.Option(
        metavar="instance|least-steps|pareto", help="instance (with --steps), least-steps (default) or pareto")] = None,
    max_steps: Annotated[Count, typer.Option(metavar="S", min=1, help="least-steps/pareto: give up above this "
                                             "many steps (default: lower bound + 2 * ranks)")] = None,
    max_chunks: Annotated[int, typer.Option(metavar="C", min=1, max=MAX_CHUNKS,
                                            help="pareto: the most chunks per input to consider")] = 6,
    timeout: TimeoutOpt = None,
    budget: Annotated[int | None, typer.Option(
        "--budget", metavar="UNITS", min=0, help="the exact search's work budget in z3 resource units, the same on "
        "any machine (default: 10^7, a few CPU seconds, at most 4 x 10^6 per step count with --method auto; 0: "
        "none); --method auto answers with the best schedule known when the default budget runs out")] = None,
    max_memory: Annotated[int | None, typer.Option(
        "--max-memory", metavar="MB", help="memory cap in MB (default: 3/4 of the memory, at most 4096); an encoding "
        "estimated not to fit is not tried (exit 3, or 2 for --strategy instance)", min=64)] = None,
    max_cells: Annotated[int, typer.Option("--max-cells", metavar="N", help="refuse collectives with more ranks x "
                                           "chunks (after --chunks)", min=1)] = limits.MAX_CELLS,
    nodes: NodesOpt = 1,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE",
                                                   help="write the schedule (JSON) here")] = None,
    out_dir: Annotated[Path | None, typer.Option("--dir", "-d", metavar="DIR", file_okay=False,
                                                    help="write every schedule found (each Pareto point) into DIR, "
                                                         "named after its instance: allgather-dgx1-s2-r3-c2.json")
                       ] = None,
    xml: Annotated[Path | None, typer.Option(metavar="FILE|DIR", help="also lower the schedule to MSCCL XML "
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
    plot: Annotated[Path | None, typer.Option(metavar="FILE.png|FILE.svg", help="pareto: plot the frontier, "
                                                 "the pruned points and the lower bounds")] = None,
    prove: Annotated[Path | None, typer.Option(metavar="DIR", help="write certificates of every claim the result "
                                                  "rests on into DIR (re-check: smtcoll proof check)")] = None,
    method: Annotated[Method, typer.Option(metavar="auto|exact|scale|NAME", help="exact (the SMT search), scale "
                                           "(the large-instance engine: seconds, with its gap to the bound), auto "
                                           "(the engine, then the exact search where it can still improve on it), or "
                                           "a throughput construction: ring, tree, direct (NCCL's), multiring, hier, "
                                           "hier2d, rail, treepack, exchange, rail_alltoall, pairwise, lanes, forest, "
                                           "hierforest (docs/synth.md)")
                      ] = Method.auto,
    force: ForceOpt = False,
    fmt: FormatOpt = Format.text,
) -> None:
    """Synthesize a schedule with the fewest steps, one instance, or the whole Pareto frontier."""
    # the request refuses what the API refuses, with the same errors (smtcoll/synth/request.py)
    request = SynthRequest(strategy=None if strategy is None else strategy.value,
                           method=method.value, steps=steps, rounds=rounds, chunks=chunks,
                           max_steps=max_steps, max_chunks=max_chunks,
                           limits=Limits(timeout, budget, max_memory, max_cells))
    if plot is not None and request.chosen != "pareto":
        raise ModelError("--plot", "draws the Pareto frontier: use it with --strategy pareto")
    xml_dir = xml is not None and (xml.is_dir() or xml.suffix.lower() != ".xml")
    # before any work: an existing file (without --force), a device or a folder is refused now, not after the search
    refuse_overwrite(force, output, None if xml_dir else xml, plot)
    if plot is not None:
        need_matplotlib("--plot", plot)
    with limits.cell_limit(max_cells):  # the collective is bounded while it is built, not after
        topo = specs.resolve_topology(topology, nodes)
        base = specs.resolve_collective(collective, topo.ranks, root, 1)
    with solver_progress() as progress:
        result = synthesize(topo, base, request, progress)
    schedule = _named(result.schedule, base.name, topo.name)
    found = [s for s in (_named(p.schedule, base.name, topo.name) for p in result.points) if s is not None]
    if schedule is not None and not found:
        found = [schedule]
    written: list[Path] = []
    xml_error: str | None = None
    if schedule is not None:
        if output is not None:
            save_schedule(schedule, output)
            written.append(output)
        if out_dir is not None:
            written += write_all(found, out_dir, ".json", force)
        if xml is not None:
            lowering = _lower_options(instances, protocol, runtime)
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
    data = result.to_json()
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


def _lower_options(instances: int, protocol: Protocol, runtime: Target) -> LowerOptions:
    from smtcoll.lower import LowerOptions  # the lowering: only when --xml asks for it

    return LowerOptions(instances, protocol.value, runtime.value)


def _lower(schedule: Schedule, xml: Path, options: LowerOptions) -> str | None:
    """Lower, verify and write the XML; the reason when it cannot be (a runtime limit names the option that
    avoids it), None when written."""
    from smtcoll.lower import CannotLower, RejectedSchedule, lower_to_file

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
    if result.optimal.why and result.optimal.steps is not None:
        echo(f"optimal: {count(result.optimal.steps, 'step')} ({result.optimal.why})")
    elif result.gap is not None:
        gap = result.gap
        echo(f"gap to the lower bound: {count(gap.gap_steps, 'step')}, {count(gap.gap_rounds, 'round')}")
    if lb is None or lb.steps is None:  # answered before any bound: the reachability witness is the message
        echo(f"{count(len(result.attempts), 'solver call')}, {result.seconds:.2f} s")
        return
    echo(f"lower bounds: {count(lb.steps, 'step')} with any rounds ({lb.steps_why}); "
         f"{count(lb.rounds or 0, 'round')}, rounds/chunk >= {lb.rounds_per_chunk} ({lb.rounds_why})")
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
        if v.steps is not None:
            echo(f"variant {v.method}: {count(v.steps, 'step')}, {count(v.rounds or 0, 'round')}")
        else:
            echo(f"variant {v.method}: {v.status} {v.why}".rstrip())
    if result.status == "found" and s is not None and result.message:
        echo(result.message)
    if output is not None:
        echo(f"schedule written to {output}")
    if result.stopped_by:
        echo(f"stopped by: {STOPPED[result.stopped_by]}")
    echo(f"{count(len(result.attempts), 'solver call')}, {result.work} work units, {result.seconds:.2f} s")
