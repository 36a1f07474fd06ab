"""`smtcoll verify PATH...`: check MSCCL XML programs and step schedules (docs/verify.md).

Exit codes: 0 every file verified; 1 some file is wrong or accepted by no runtime considered; 2 some input
is unusable (unreadable, not XML, no `<algo>`, a bad schedule file, over a limit such as `--max-steps`)
or the command line is wrong. When both happen, 2 wins: an unusable input means the run did not check
everything it was asked to. Output formats (text, json, junit, github, sarif) are in `verify_output.py`;
which files a directory holds is decided in `smtcoll.check.discover`.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Annotated

import typer

from smtcoll import specs
from smtcoll.check.discover import expand
from smtcoll.check.files import check_files
from smtcoll.check.report import Report
from smtcoll.check.request import CheckRequest
from smtcoll.choices import checked_collective
from smtcoll.cli.app import app
from smtcoll.cli.options import MAX_CHUNKS, RootOpt, Runtime, RuntimeOpt, refuse_input_as_output
from smtcoll.cli.verify_output import FORMATTERS, format_text, select_findings, strict_findings, summary
from smtcoll.cli.verify_times import lower_bound
from smtcoll.errors import EXIT_UNUSABLE, OutputError, SmtcollError
from smtcoll.files import check_writable, write_text
from smtcoll.formats.inputs import INPUT_FORMATS
from smtcoll.limits import check_jobs
from smtcoll.msccl.reader import Limits

EXIT_WRONG = 1
DEFAULTS = Limits()


class OutputFormat(enum.StrEnum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"
    sarif = "sarif"


def exit_code(reports: list[Report]) -> int:
    if any(r.verdict == "unusable" for r in reports):
        return EXIT_UNUSABLE
    if any(r.verdict == "error" for r in reports):
        return EXIT_WRONG
    return 0


def codes(values: list[str]) -> list[str]:
    """`--select race,dead --select parse` -> ["race", "dead", "parse"]."""
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def print_report(text: str, color: bool) -> None:
    if not text:
        return
    if color:
        from rich.console import Console  # only on a terminal: rich costs start-up time

        Console(highlight=False, soft_wrap=True).print(text)
    else:
        sys.stdout.write(text + "\n")


def wants_color() -> bool:
    """Colours on a terminal, never in a pipe or file, never with NO_COLOR set (https://no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


@app.command("verify")
def verify(
    paths: Annotated[list[str], typer.Argument(
        metavar="PATH", help="MSCCL XML programs, schedules (smtcoll, SCCL, TACCL, TE-CCL, ForestColl, transfer "
        "logs), directories or globs")],
    fmt: Annotated[OutputFormat, typer.Option(
        "--format", metavar="text|json|junit|github|sarif", help="text for people, json for scripts, junit "
        "(JUnit XML), github (annotations) and sarif (code scanning) for CI")] = OutputFormat.text,
    topology: Annotated[str | None, typer.Option(
        "--topology", "-t", metavar="NAME|FILE", help="XML: map connections to links of this topology (a name "
        "or .toml) and estimate the time; schedules: check them on this topology (docs/formats.md)")] = None,
    input_format: Annotated[str, typer.Option(
        "--input-format", metavar="FORMAT", help="auto (by content), " + ", ".join(INPUT_FORMATS[1:]))] = "auto",
    collective: Annotated[str | None, typer.Option(
        "--collective", "-c", metavar="NAME|FILE", help="check the programs against this collective (a built-in "
        "name or a .toml spec) instead of their coll")] = None,
    root: RootOpt = None,
    runtime: RuntimeOpt = Runtime.auto,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", metavar="",
                                          help="also print informational findings")] = False,
    jobs: Annotated[int | None, typer.Option(
        metavar="N", min=1, help="worker processes (default: up to 4, only for 8+ files)")] = None,
    max_bytes: Annotated[int, typer.Option(
        metavar="BYTES", min=1, help="refuse files larger than this many bytes, before parsing them")
    ] = DEFAULTS.max_bytes,
    max_ranks: Annotated[int, typer.Option(
        metavar="N", min=1, help="refuse XML programs with more ranks (ngpus, <gpu> elements)")] = DEFAULTS.max_ranks,
    max_chunks: Annotated[int, typer.Option(
        metavar="N", min=1, help="refuse XML programs with more chunks per buffer over all ranks "
        "(ngpus x nchunksperloop)")] = DEFAULTS.max_chunks,
    max_tbs: Annotated[int, typer.Option(
        metavar="N", min=1, help="refuse XML programs with more <tb> elements in all")] = DEFAULTS.max_tbs,
    max_steps: Annotated[int, typer.Option(
        metavar="N", min=1, help="refuse XML programs with more <step> elements in all")] = DEFAULTS.max_steps,
    max_pieces: Annotated[int, typer.Option(
        metavar="N", min=1, help="refuse XML programs whose steps move more chunk pieces in all (sum of cnt), "
        "and timed schedules with more transfers")
    ] = DEFAULTS.max_pieces,
    strict: Annotated[bool, typer.Option("--strict", metavar="", help="make every warning an error (after --select "
                                         "and --ignore), including dead-read, dead-race and dead-double-count "
                                         "(defects whose data reaches no output)")] = False,
    select: Annotated[list[str] | None, typer.Option("--select", metavar="CODES", help="report only findings with "
                                                     "these codes or code prefixes (comma-separated, repeatable)")
                      ] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", metavar="CODES", help="drop findings with these "
                                                     "codes or code prefixes (comma-separated, repeatable)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", metavar="", help="print the findings only: no verdict per "
                                        "file, no summary")] = False,
    output_file: Annotated[str | None, typer.Option("--output-file", metavar="PATH", help="write the report "
                                                       "(in --format) to PATH instead of stdout; stdout gets the "
                                                       "summary line")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", metavar="GLOB", help="skip files and "
                                                      "directories whose name or path matches (repeatable)")] = None,
    only_algorithms: Annotated[bool, typer.Option("--only-algorithms", metavar="", help="skip named files that are not "
                                                  "algorithm files or are --exclude'd, as the directory walk "
                                                  "does (the pre-commit hook uses this)")] = False,
    chunks: Annotated[int | None, typer.Option(
        metavar="C", min=1, max=MAX_CHUNKS, help="chunks per rank's input of the --collective .toml spec "
        "(default: 1, or as the program's buffers show)")] = None,
) -> None:
    """Verify MSCCL XML programs and step schedules: exit 0 verified, 1 wrong, 2 unusable input."""
    if collective is not None:
        checked_collective(collective)
    if input_format not in INPUT_FORMATS:
        from smtcoll.library import did_you_mean

        hint = did_you_mean(input_format, list(INPUT_FORMATS))
        raise SmtcollError(f"--input-format {input_format!r}: expected {', '.join(INPUT_FORMATS)}"
                           + (f"; did you mean {hint!r}?" if hint else ""))
    check_jobs(jobs)
    files = expand(paths, codes(exclude or []), only_algorithms)
    if not files:
        if only_algorithms:  # the hook passes every changed .xml/.json: none being an algorithm is fine
            if not quiet:
                typer.echo("no algorithm files among " + ", ".join(paths))
            return
        raise SmtcollError("no algorithm files (MSCCL XML, schedule JSON) found in " + ", ".join(paths))
    if output_file is not None:  # before any work: a long run is never thrown away at the end
        refuse_input_as_output("--output-file", output_file, [*files, topology, collective])
        try:
            check_writable(output_file)
        except OutputError as e:
            raise OutputError(f"--output-file {e.path}", str(e)[len(e.path) + 2:]) from None
    topo = specs.resolve_topology(topology) if topology else None
    limits = Limits(max_bytes=max_bytes, max_ranks=max_ranks, max_chunks=max_chunks, max_tbs=max_tbs,
                    max_steps=max_steps, max_pieces=max_pieces)
    if chunks is not None and collective is None:
        raise SmtcollError("--chunks applies to the spec given with --collective")
    request = CheckRequest(runtime=runtime.checked, collective=collective, root=root, topology=topo, limits=limits,
                           chunks=chunks, strict=strict, input_format=input_format, bound=lower_bound)
    reports = check_files(files, request, jobs)
    reports = select_findings(reports, codes(select or []), codes(ignore or []))
    if strict:
        reports = strict_findings(reports)
    if output_file is not None:
        try:
            write_text(output_file, FORMATTERS[fmt.value](reports, verbose, quiet) + "\n")
        except OutputError as e:
            raise OutputError(f"--output-file {e.path}", str(e)[len(e.path) + 2:]) from None
        if not quiet:
            typer.echo(summary(reports))
    elif fmt is OutputFormat.text:
        color = wants_color()
        print_report(format_text(reports, verbose, quiet, color), color)
    else:
        print_report(FORMATTERS[fmt.value](reports, verbose, quiet), False)
    code = exit_code(reports)
    if code:
        raise typer.Exit(code)
