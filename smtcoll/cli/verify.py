"""`smtcoll verify PATH...`: check MSCCL XML programs and step schedules (docs/verify.md).

Exit codes: 0 every file verified; 1 some file is wrong or accepted by no runtime considered; 2 some input
is unusable (unreadable, not XML, no `<algo>`, a bad schedule file, over a limit such as `--max-steps`)
or the command line is wrong. When both happen, 2 wins: an unusable input means the run did not check
everything it was asked to. Output formats (text, json, junit, github) are in `verify_output.py`.
"""

from __future__ import annotations

import enum
import glob
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Annotated, Optional

import typer

from smtcoll import specs
from smtcoll.check.program import check_program_file, unusable_report
from smtcoll.check.report import Report, Violation
from smtcoll.check.schedule import check_schedule_file
from smtcoll.cli.app import app, print_json
from smtcoll.cli.verify_output import FORMATTERS, format_text  # noqa: F401  (format_text: public helper)
from smtcoll.errors import EXIT_UNUSABLE, SmtcollError
from smtcoll.limits import check_jobs
from smtcoll.model import Topology
from smtcoll.msccl.reader import Limits

EXIT_WRONG = 1
PARALLEL_FROM = 8  # files; below this a process pool costs more than it saves
SUFFIXES = (".xml", ".json")
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


def expand(paths: list[str]) -> list[str]:
    """Files named, found under directories (recursively, *.xml and *.json) or matched by globs; sorted,
    without duplicates. A path that matches nothing is kept, so that it is reported as unusable."""
    found: set[str] = set()
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                found.update(os.path.join(root, f) for f in files if f.endswith(SUFFIXES))
        elif os.path.exists(p):
            found.add(p)
        elif glob.has_magic(p):
            for m in glob.glob(p, recursive=True):
                if os.path.isdir(m):
                    found.update(expand([m]))
                else:
                    found.add(m)
        else:
            found.add(p)
    return sorted(found)


def check_file(path: str, runtime: str, collective: str | None, root: int | None, topology: Topology | None,
               limits: Limits | int | None = None) -> Report:
    """Check one file; never raises for bad input. `limits` (or only a size limit) bound what is read."""
    if not isinstance(limits, Limits):
        limits = Limits() if limits is None else Limits(max_bytes=limits)
    try:
        if path.endswith(".json"):
            size = _size(path)
            if size > limits.max_bytes:
                raise SmtcollError(f"{path}: " + limits.exceeded("--max-bytes", f"file is {size} bytes",
                                                                  limits.max_bytes))
            return check_schedule_file(path, topology)
        return check_program_file(path, runtime=runtime, collective=collective, root=root, topology=topology,
                                  limits=limits)
    except SmtcollError as e:
        return unusable_report(path, e)
    except (RecursionError, MemoryError):
        return unusable_report(path, SmtcollError(f"{path}: structure too large or nested too deeply"))
    except Exception as e:  # a checker bug: never a traceback, never an `ok`; the fuzz tests look for these
        return Report(path, violations=[Violation(
            "internal-error", f"{path}: smtcoll could not check this file ({type(e).__name__}: {str(e)[:200]}); "
            "please report it with the file", "error")], unusable=True)


def _check_args(args: tuple[str, str, str | None, int | None, Topology | None, Limits]) -> Report:
    return check_file(*args)


def check_files(files: list[str], runtime: str = "any", collective: str | None = None, root: int | None = None,
                topology: Topology | None = None, jobs: int | None = None,
                limits: Limits | int | None = None) -> list[Report]:
    """Reports in the order of `files`; a process pool when there are many files and more than one core."""
    if not isinstance(limits, Limits):
        limits = Limits() if limits is None else Limits(max_bytes=limits)
    args = [(f, runtime, collective, root, topology, limits) for f in files]
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 4)
    if len(files) < PARALLEL_FROM or workers <= 1:
        return [_check_args(a) for a in args]
    # largest files first, one at a time, so that one big file does not finish last on a busy worker
    order = sorted(range(len(files)), key=lambda i: -_size(files[i]))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(_check_args, [args[i] for i in order]))
    out: list[Report] = [done[0]] * len(files)
    for k, i in enumerate(order):
        out[i] = done[k]
    return out


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


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
    check_jobs(jobs)
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
