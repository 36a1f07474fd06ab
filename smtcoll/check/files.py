"""Checking files by path: directories and globs expanded (`smtcoll.check.discover`: algorithm files are
recognised by content), each file checked by the front door (`smtcoll.check.door.check`) without ever
raising for bad input (an unusable file is a report), many files on a process pool."""

from __future__ import annotations

import functools
import os

from smtcoll.check.discover import expand  # noqa: F401  (re-exported: the walk is part of checking files)
from smtcoll.check.door import DEFAULT_REQUEST, check
from smtcoll.check.report import Report
from smtcoll.check.request import CheckRequest
from smtcoll.model import Topology
from smtcoll.model.timed import BoundFn
from smtcoll.msccl.reader import Limits

PARALLEL_FROM = 8  # files; below this a process pool costs more than it saves


def check_file(path: str, runtime: str = "any", collective: str | None = None, root: int | None = None,
               topology: Topology | None = None, limits: Limits | int | None = None, chunks: int | None = None,
               strict: bool = False, input_format: str = "auto", bound: BoundFn | None = None) -> Report:
    """`check(path, CheckRequest(...))` with the request's fields as parameters (docs/api.md)."""
    return check(path, CheckRequest(runtime=runtime, collective=collective, root=root, topology=topology,
                                    limits=limits, chunks=chunks, strict=strict, input_format=input_format,
                                    bound=bound))


def check_files(files: list[str], request: CheckRequest = DEFAULT_REQUEST, jobs: int | None = None) -> list[Report]:
    """Reports in the order of `files`, each `check(file, request)`; a process pool when there are many
    files and more than one core (`jobs`: its workers, default up to 4)."""
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 4)
    if len(files) < PARALLEL_FROM or workers <= 1:
        return [check(f, request) for f in files]
    from concurrent.futures import ProcessPoolExecutor  # here: multiprocessing costs start-up for few files

    # largest files first, one at a time, so that one big file does not finish last on a busy worker
    order = sorted(range(len(files)), key=lambda i: -_size(files[i]))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(functools.partial(check, request=request), [files[i] for i in order]))
    out: list[Report] = [done[0]] * len(files)
    for k, i in enumerate(order):
        out[i] = done[k]
    return out


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
