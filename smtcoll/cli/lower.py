"""`smtcoll lower SCHEDULE -o algo.xml`: a step schedule becomes MSCCL XML (docs/lower.md).

Exit codes: 0 written (and verified, unless --no-verify); 1 the schedule checker rejects the schedule or
the written program does not verify (nothing is written then); 2 unusable input, options the runtimes
cannot express, or a wrong command line.
"""

from __future__ import annotations

import enum
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Optional

import attrs
import typer

from smtcoll.check.program import check_program_file
from smtcoll.check.report import Report
from smtcoll.cli.app import Format, app, print_json
from smtcoll.files import check_writable, write_text
from smtcoll.formats import load_schedule
from smtcoll.model import Schedule
from smtcoll.msccl.lower import Lowered, LowerOptions, lower
from smtcoll.msccl.writer import write_program

EXIT_WRONG = 1


class Protocol(str, enum.Enum):
    Simple = "Simple"
    LL = "LL"
    LL128 = "LL128"


class Target(str, enum.Enum):
    auto = "auto"
    both = "both"
    executor = "executor"
    legacy = "legacy"


def verify_lowered(lowered: Lowered, path: str | os.PathLike[str]) -> tuple[bool, Report]:
    """Check the written file with the independent checker: it must verify and every runtime it was
    written for must accept it."""
    runtime = "any" if len(lowered.runtimes) > 1 else lowered.runtimes[0]
    report = check_program_file(path, runtime=runtime, collective=lowered.verify_collective,  # type: ignore[arg-type]
                                root=lowered.layout.root)
    accepted = report.runtimes is not None and all(report.runtimes.get(r) for r in lowered.runtimes)
    return report.verdict == "ok" and accepted, report


def _write(path: Path, text: str) -> None:
    """Replace `path` atomically, never a device or a directory (smtcoll/files.py)."""
    write_text(path, text)


def lower_to_file(schedule: Schedule, output: Path, options: LowerOptions = LowerOptions(),
                  verify: bool = True) -> tuple[dict[str, Any], Report | None]:
    """Lower `schedule`, verify the program (unless `verify` is False) and write it to `output` only when
    it verifies. Returns the JSON summary of `smtcoll lower` and the checker's report. Raises
    `RejectedSchedule` (exit 1) or `CannotLower` (exit 2); `smtcoll synth --xml` can call this too."""
    lowered = lower(schedule, options)
    text = write_program(lowered.program)
    report: Report | None = None
    ok = True
    if verify:
        with tempfile.TemporaryDirectory(prefix="smtcoll-lower-") as tmp:
            probe = Path(tmp) / "algo.xml"
            probe.write_text(text)
            ok, report = verify_lowered(lowered, probe)
        report = attrs.evolve(report, file=str(output))
    if ok:
        _write(Path(output), text)
    result: dict[str, Any] = {
        "file": str(output), "schedule": schedule.name, "written": ok, "collective": lowered.layout.kind,
        "coll": lowered.program.coll, "ranks": lowered.program.ngpus, "root": lowered.layout.root,
        "runtimes": list(lowered.runtimes), "mode": options.mode, "instances": options.instances,
        "protocol": options.protocol, "nchunksperloop": lowered.program.nchunksperloop,
        "nchannels": lowered.program.nchannels, "stats": lowered.stats, "verified": None if report is None else ok,
        "report": None if report is None else report.to_json(),
    }
    return result, report


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
    result, report = lower_to_file(load_schedule(schedule), output, options, verify)
    result["schedule"] = str(schedule)
    if fmt is Format.json:
        print_json(result)
    else:
        _print_text(result, report)
    if not result["written"]:
        raise typer.Exit(EXIT_WRONG)


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
