"""`smtcoll verify PATH...`: check MSCCL XML programs and step schedules (docs/verify.md).

Exit codes: 0 every file verified; 1 some file is wrong or accepted by no runtime considered; 2 some input
is unusable (unreadable, not XML, no `<algo>`, a bad schedule file, over a limit such as `--max-steps`)
or the command line is wrong. When both happen, 2 wins: an unusable input means the run did not check
everything it was asked to. Output formats (text, json, junit, github) are in `verify_output.py`.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from smtcoll import specs
from smtcoll.check.files import check_files, expand
from smtcoll.check.report import Report
from smtcoll.cli.app import app, print_json
from smtcoll.cli.verify_output import FORMATTERS, format_text  # noqa: F401  (format_text: public helper)
from smtcoll.errors import EXIT_UNUSABLE, SmtcollError
from smtcoll.msccl.reader import Limits

EXIT_WRONG = 1
DEFAULTS = Limits()


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"


class Runtime(str, enum.Enum):
    executor = "executor"
    legacy = "legacy"
    any = "any"


def exit_code(reports: list[Report]) -> int:
    if any(r.verdict == "unusable" for r in reports):
        return EXIT_UNUSABLE
    if any(r.verdict == "error" for r in reports):
        return EXIT_WRONG
    return 0


@app.command("verify")
def verify(
    paths: Annotated[list[str], typer.Argument(help="MSCCL XML files, schedule JSON files, directories or globs")],
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", help="text for people, json for scripts, junit "
                                                                      "(JUnit XML) and github (annotations) for CI")
                   ] = OutputFormat.text,
    topology: Annotated[Optional[str], typer.Option(help="XML: map connections to links of this topology (a "
                                                         "name or .toml) and estimate the time; JSON schedules: "
                                                         "check them on this topology")] = None,
    collective: Annotated[Optional[str], typer.Option(help="check the programs against this collective (a built-in "
                                                           "name or a .toml spec) instead of their coll")] = None,
    root: Annotated[Optional[int], typer.Option(help="root rank of broadcast, reduce, gather, scatter")] = None,
    runtime: Annotated[str, typer.Option(help="the runtime that must accept the files: executor, legacy or any")] = "any",
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="also print informational findings")] = False,
    jobs: Annotated[Optional[int], typer.Option(help="worker processes (default: up to 4, only for 8+ files)",
                                                min=1)] = None,
    max_bytes: Annotated[int, typer.Option(help="refuse files larger than this many bytes, before parsing them",
                                           min=1)] = DEFAULTS.max_bytes,
    max_ranks: Annotated[int, typer.Option(help="refuse XML programs with more ranks (ngpus, <gpu> elements)",
                                           min=1)] = DEFAULTS.max_ranks,
    max_chunks: Annotated[int, typer.Option(help="refuse XML programs with more chunks per buffer over all ranks "
                                              "(ngpus x nchunksperloop)", min=1)] = DEFAULTS.max_chunks,
    max_tbs: Annotated[int, typer.Option(help="refuse XML programs with more <tb> elements in all",
                                         min=1)] = DEFAULTS.max_tbs,
    max_steps: Annotated[int, typer.Option(help="refuse XML programs with more <step> elements in all",
                                           min=1)] = DEFAULTS.max_steps,
) -> None:
    """Verify MSCCL XML programs and step schedules: exit 0 verified, 1 wrong, 2 unusable input."""
    if runtime not in {r.value for r in Runtime}:
        raise SmtcollError(f"--runtime {runtime!r}: expected executor, legacy or any")
    files = expand(paths)
    if not files:
        raise SmtcollError("no .xml or .json files found in " + ", ".join(paths))
    topo = specs.resolve_topology(topology) if topology else None
    if collective is not None and not collective.endswith(".toml") and not Path(collective).is_file():
        from smtcoll.check.postconditions import BUILTIN

        if collective not in BUILTIN:
            raise SmtcollError(f"--collective {collective!r}: not a built-in postcondition "
                               f"({', '.join(sorted(BUILTIN))}) nor a .toml spec file")
    limits = Limits(max_bytes=max_bytes, max_ranks=max_ranks, max_chunks=max_chunks, max_tbs=max_tbs,
                    max_steps=max_steps)
    reports = check_files(files, runtime, collective, root, topo, jobs, limits)
    if fmt is OutputFormat.json:
        print_json([r.to_json() for r in reports])
    else:
        typer.echo(FORMATTERS[fmt.value](reports, verbose))
    code = exit_code(reports)
    if code:
        raise typer.Exit(code)
