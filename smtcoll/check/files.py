"""Checking files by path: directories and globs expanded, each file checked without ever raising for
bad input (an unusable file is a report), many files on a process pool."""

from __future__ import annotations

import glob
import os
from concurrent.futures import ProcessPoolExecutor

from smtcoll.check.program import check_program_file, unusable_report
from smtcoll.check.report import Report, Violation
from smtcoll.check.schedule import check_schedule_file
from smtcoll.errors import SmtcollError
from smtcoll.model import Topology
from smtcoll.msccl.reader import Limits

PARALLEL_FROM = 8  # files; below this a process pool costs more than it saves
SUFFIXES = (".xml", ".json")


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
