"""`smtcoll lower SCHEDULE -o algo.xml`: a step schedule becomes MSCCL XML (docs/lower.md).

Exit codes: 0 written (and verified, unless --no-verify); 1 the schedule checker rejects the schedule or
the written program does not verify (nothing is written then); 2 unusable input, options the runtimes
cannot express, or a wrong command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from smtcoll.check.report import Report
from smtcoll.cli.app import Format, app, print_json
from smtcoll.cli.options import (
    RUNTIME_METAVAR,
    ForceOpt,
    FormatOpt,
    Protocol,
    Target,
    refuse_input_as_output,
    refuse_overwrite,
)
from smtcoll.errors import NotVerified
from smtcoll.formats import load_schedule
from smtcoll.lower import LowerOptions, lower_to_file
from smtcoll.text import count


@app.command("lower")
def lower_command(
    schedule: Annotated[Path, typer.Argument(metavar="SCHEDULE",
                                             help="a step schedule (smtcoll, SCCL or TACCL JSON)")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="the MSCCL XML file to write")],
    instances: Annotated[int, typer.Option(metavar="N", help="replicate over this many channels (chunks "
                                           "interleaved)", min=1, max=32)] = 1,
    protocol: Annotated[Protocol, typer.Option(metavar="Simple|LL|LL128", help="NCCL protocol of the kernel")
                        ] = Protocol.Simple,
    runtime: Annotated[Target, typer.Option(metavar=RUNTIME_METAVAR, help="auto, both, executor or legacy; "
                                            "auto (or any): one file both "
                                            "runtimes accept when the collective allows it, else the runtime that "
                                            "has the collective")] = Target.auto,
    inplace: Annotated[bool, typer.Option("--inplace", metavar="",
                                          help="declare the in-place mode (buffers alias)")] = False,
    outofplace: Annotated[bool, typer.Option("--outofplace", metavar="", help="declare the out-of-place mode (the "
                                             "default when neither is given; both flags: one file for both modes)")
                          ] = False,
    min_bytes: Annotated[int | None, typer.Option("--min-buffer-bytes", metavar="BYTES", min=0,
                                                     help="smallest buffer the runtime selects this algorithm for "
                                                          "(the XML's minBytes)")] = None,
    max_bytes: Annotated[int | None, typer.Option("--max-buffer-bytes", metavar="BYTES", min=0,
                                                     help="largest buffer the runtime selects this algorithm for "
                                                          "(maxBytes); default 0 (unlimited) for the executor "
                                                          "alone, 2^27 when the legacy runtime is a target")] = None,
    name: Annotated[str | None, typer.Option(metavar="NAME", help="the algo name attribute (default: the "
                                                "schedule's name)")] = None,
    fuse: Annotated[bool, typer.Option("--fuse/--no-fuse", metavar="",
                                       help="fuse receive+forward into rcs/rrcs/rrs")] = True,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", metavar="", help="check the written file with "
                                         "`smtcoll verify` and refuse to write it when it fails")] = True,
    force: ForceOpt = False,
    fmt: FormatOpt = Format.text,
) -> None:
    """Lower a step schedule to MSCCL XML: exit 0 written, 1 rejected or not verified, 2 unusable input."""
    mode = "both" if inplace and outofplace else "inplace" if inplace else "outofplace"
    options = LowerOptions(instances, protocol.value, runtime.canonical, mode, min_bytes, max_bytes, fuse, name)
    refuse_input_as_output("--output", output, [schedule])
    refuse_overwrite(force, output)  # also refuses what the safe writer would (check_writable)
    failure: NotVerified | None = None
    try:
        result, report = lower_to_file(load_schedule(schedule), output, options, verify)
    except NotVerified as e:  # the summary and the findings are still the output; nothing was written
        failure, result, report = e, e.summary, e.report
    result["schedule"] = str(schedule)
    if fmt is Format.json:
        print_json(result)
    else:
        _print_text(result, report)
    if failure is not None:
        raise typer.Exit(failure.exit_code)


def _print_text(r: dict[str, Any], report: Report | None) -> None:
    s = r["stats"]
    root = f", root {r['root']}" if r["root"] is not None else ""
    head = (f"{r['file']}: {r['coll']} ({r['collective']}{root}), {r['ranks']} ranks, {r['mode']}, "
            f"{count(r['instances'], 'instance')}, {r['protocol']}; runtimes: {', '.join(r['runtimes'])}")
    typer.echo(head if r["written"] else f"{r['file']}: NOT written: the lowered program does not verify")
    typer.echo(f"  nchunksperloop {r['nchunksperloop']}, nchannels {r['nchannels']}, {s['thread_blocks']} thread "
               f"blocks, {s['steps']} steps (at most {s['max_tb_steps']} per thread block, {s['nops']} nops, "
               f"{s['fused']} fused), scratch {count(s['scratch_chunks'], 'chunk')} per rank")
    if report is None:
        typer.echo("  not verified (--no-verify)")
        return
    typer.echo(f"  verify: {report.verdict}" + (" (every target runtime accepts it)" if r["verified"] else ""))
    for v in report.violations:
        if v.severity != "info":
            place = v.place()
            typer.echo(f"  {v.severity:<7} {v.code}: {place + ': ' if place else ''}{v.message}")
