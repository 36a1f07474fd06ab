"""`smtcoll lower SCHEDULE -o algo.xml`: a step schedule becomes MSCCL XML (docs/lower.md).

Exit codes: 0 written (and verified, unless --no-verify); 1 the schedule checker rejects the schedule or
the written program does not verify (nothing is written then); 2 unusable input, options the runtimes
cannot express, or a wrong command line.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from smtcoll.check.report import Report
from smtcoll.cli.app import Format, app, print_json
from smtcoll.errors import NotVerified
from smtcoll.files import check_writable
from smtcoll.formats import load_schedule
from smtcoll.lower import LowerOptions, lower_to_file


class Protocol(str, enum.Enum):
    Simple = "Simple"
    LL = "LL"
    LL128 = "LL128"


class Target(str, enum.Enum):
    auto = "auto"
    both = "both"
    executor = "executor"
    legacy = "legacy"


@app.command("lower")
def lower_command(
    schedule: Annotated[Path, typer.Argument(help="a step schedule (smtcoll, SCCL or TACCL JSON)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="the MSCCL XML file to write")],
    instances: Annotated[int, typer.Option(help="replicate over this many channels (chunks interleaved)",
                                           min=1, max=32)] = 1,
    protocol: Annotated[Protocol, typer.Option(help="NCCL protocol of the kernel")] = Protocol.Simple,
    runtime: Annotated[Target, typer.Option(help="auto: one file both runtimes accept when the collective "
                                            "allows it, else the runtime that has the collective")] = Target.auto,
    inplace: Annotated[bool, typer.Option("--inplace", help="declare the in-place mode (buffers alias)")] = False,
    outofplace: Annotated[bool, typer.Option("--outofplace", help="declare the out-of-place mode (the default "
                                             "when neither is given; both flags: one file for both modes)")] = False,
    min_bytes: Annotated[Optional[int], typer.Option("--min-bytes", help="smallest buffer (bytes) to select "
                                                     "this algorithm for", min=0)] = None,
    max_bytes: Annotated[Optional[int], typer.Option("--max-bytes", help="largest buffer (bytes); default 0 "
                                                     "(unlimited) for the executor alone, 2^27 when the legacy "
                                                     "runtime is a target", min=0)] = None,
    name: Annotated[Optional[str], typer.Option(help="the algo name attribute")] = None,
    fuse: Annotated[bool, typer.Option("--fuse/--no-fuse", help="fuse receive+forward into rcs/rrcs/rrs")] = True,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="check the written file with "
                                         "`smtcoll verify` and refuse to write it when it fails")] = True,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text for people, json for scripts")] = Format.text,
) -> None:
    """Lower a step schedule to MSCCL XML: exit 0 written, 1 rejected or not verified, 2 unusable input."""
    mode = "both" if inplace and outofplace else "inplace" if inplace else "outofplace"
    options = LowerOptions(instances, protocol.value, runtime.value, mode, min_bytes, max_bytes, fuse, name)
    check_writable(output)
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
            f"{r['instances']} instance(s), {r['protocol']}; runtimes: {', '.join(r['runtimes'])}")
    typer.echo(head if r["written"] else f"{r['file']}: NOT written: the lowered program does not verify")
    typer.echo(f"  nchunksperloop {r['nchunksperloop']}, nchannels {r['nchannels']}, {s['thread_blocks']} thread "
               f"blocks, {s['steps']} steps (at most {s['max_tb_steps']} per thread block, {s['nops']} nops, "
               f"{s['fused']} fused), scratch {s['scratch_chunks']} chunk(s) per rank")
    if report is None:
        typer.echo("  not verified (--no-verify)")
        return
    typer.echo(f"  verify: {report.verdict}" + (" (every target runtime accepts it)" if r["verified"] else ""))
    for v in report.violations:
        if v.severity != "info":
            place = v.place()
            typer.echo(f"  {v.severity:<7} {v.code}: {place + ': ' if place else ''}{v.message}")
