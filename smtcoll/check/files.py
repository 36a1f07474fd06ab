"""Checking files by path: directories and globs expanded (`smtcoll.check.discover`: algorithm files are
recognised by content), each file checked without ever raising for bad input (an unusable file is a
report), many files on a process pool."""

from __future__ import annotations

import os

import attrs

from smtcoll.check.discover import expand  # noqa: F401  (re-exported: the walk is part of checking files)
from smtcoll.check.inputs import check_input_file
from smtcoll.check.program import check_program_file, unusable_report
from smtcoll.check.report import Report, Violation
from smtcoll.check.topology_cost import program_time
from smtcoll.errors import SmtcollError
from smtcoll.formats.inputs import detect
from smtcoll.model import Topology
from smtcoll.model.timed import BoundFn
from smtcoll.msccl.reader import Limits

PARALLEL_FROM = 8  # files; below this a process pool costs more than it saves


def check_file(path: str, runtime: str, collective: str | None, root: int | None, topology: Topology | None,
               limits: Limits | int | None = None, chunks: int | None = None, strict: bool = False,
               input_format: str = "auto", bound: BoundFn | None = None) -> Report:
    """Check one file; never raises for bad input. `limits` (or only a size limit) bound what is read;
    `input_format` names the format (`auto`: by content, docs/formats.md); `bound` gives the lower bound
    shown with the times."""
    if not isinstance(limits, Limits):
        limits = Limits() if limits is None else Limits(max_bytes=limits)
    try:
        fmt = detect(path) if input_format == "auto" else input_format
        if fmt != "msccl-xml":
            size = _size(path)
            if size > limits.max_bytes:
                raise SmtcollError(f"{path}: " + limits.exceeded("--max-bytes", f"file is {size} bytes",
                                                                  limits.max_bytes))
            from smtcoll.limits import transfer_limit

            with transfer_limit(limits.max_pieces):  # a transfer moves one chunk: the timed schedule's pieces
                return check_input_file(path, input_format, topology, bound, limits.max_bytes)
        report = check_program_file(path, runtime=runtime, collective=collective, root=root, topology=topology,
                                    limits=limits, chunks=chunks, strict=strict)
        return attrs.evolve(report, format=None if report.unusable else fmt,
                            time=program_time(report, topology, bound))
    except SmtcollError as e:
        return unusable_report(path, e)
    except (RecursionError, MemoryError):
        return unusable_report(path, SmtcollError(f"{path}: structure too large or nested too deeply"))
    except Exception as e:  # a checker bug: never a traceback, never an `ok`; the fuzz tests look for these
        return Report(path, violations=[Violation(
            "internal-error", f"{path}: smtcoll could not check this file ({type(e).__name__}: {str(e)[:200]}); "
            "please report it with the file", "error")], unusable=True)


def _check_args(args: tuple[str, str, str | None, int | None, Topology | None, Limits, int | None, bool, str,
                            BoundFn | None]) -> Report:
    return check_file(*args)


def check_files(files: list[str], runtime: str = "any", collective: str | None = None, root: int | None = None,
                topology: Topology | None = None, jobs: int | None = None,
                limits: Limits | int | None = None, chunks: int | None = None,
                strict: bool = False, input_format: str = "auto", bound: BoundFn | None = None) -> list[Report]:
    """Reports in the order of `files`; a process pool when there are many files and more than one core.
    `chunks`: chunks per input of a `.toml` collective spec (`smtcoll verify --chunks`)."""
    if not isinstance(limits, Limits):
        limits = Limits() if limits is None else Limits(max_bytes=limits)
    args = [(f, runtime, collective, root, topology, limits, chunks, strict, input_format, bound) for f in files]
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 4)
    if len(files) < PARALLEL_FROM or workers <= 1:
        return [_check_args(a) for a in args]
    from concurrent.futures import ProcessPoolExecutor  # here: multiprocessing costs start-up for few files

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
