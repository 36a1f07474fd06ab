"""The checker's one front door: `check(source, request) -> Report` for a file path or a file's bytes.

Only this function decides how a source is checked (which format it is in, which reader and which checker
judge it); `check_file`, `check_files`, `smtcoll verify` and `smtcoll.verify` build a `CheckRequest` and
call it. It never raises for bad input: an unusable source is a report.
"""

from __future__ import annotations

import os

import attrs

from smtcoll.check.inputs import check_input_file
from smtcoll.check.program import check_program, unusable_report
from smtcoll.check.report import Report, Violation
from smtcoll.check.request import CheckRequest
from smtcoll.check.topology_cost import program_time
from smtcoll.errors import SmtcollError
from smtcoll.formats.inputs import detect
from smtcoll.msccl.reader import read_program, read_program_bytes

BYTES_NAME = "<bytes>"  # how a source given as bytes is named in its report and messages

DEFAULT_REQUEST = CheckRequest()


def check(source: str | os.PathLike[str] | bytes, request: CheckRequest = DEFAULT_REQUEST) -> Report:
    """Check one file, given by its path or as its bytes, as `request` asks; never raises for bad input.

    >>> check("examples/allgather-ring4.xml").verdict
    'ok'
    >>> check(open("examples/allgather-ring4-wrong.xml", "rb").read(), CheckRequest(runtime="executor")).verdict
    'error'
    """
    name = BYTES_NAME if isinstance(source, bytes) else os.fspath(source)
    try:
        return _check(source, name, request)
    except SmtcollError as e:
        return unusable_report(name, e)
    except (RecursionError, MemoryError):
        return unusable_report(name, SmtcollError(f"{name}: structure too large or nested too deeply"))
    except Exception as e:  # a checker bug: never a traceback, never an `ok`; the fuzz tests look for these
        return Report(name, violations=[Violation(
            "internal-error", f"{name}: smtcoll could not check this file ({type(e).__name__}: {str(e)[:200]}); "
            "please report it with the file", "error")], unusable=True)


def _check(source: str | os.PathLike[str] | bytes, name: str, request: CheckRequest) -> Report:
    limits = request.limits
    data = source if isinstance(source, bytes) else None
    fmt = request.input_format
    if fmt == "auto":
        fmt = detect(name) if data is None else detect(name, data[:4096].decode("utf-8-sig", errors="replace"))
    if fmt != "msccl-xml":
        size = _size(name) if data is None else len(data)
        if size > limits.max_bytes:
            raise SmtcollError(f"{name}: " + limits.exceeded("--max-bytes", f"file is {size} bytes",
                                                              limits.max_bytes))
        return check_input_file(name, request.input_format, request.topology, request.bound, limits.max_bytes,
                                text=data)
    try:
        result = read_program(name, limits=limits) if data is None else read_program_bytes(data, name, limits)
    except SmtcollError as e:
        return unusable_report(name, e)
    report = check_program(result, name, runtime=request.runtime, collective=request.collective,
                           root=request.root, topology=request.topology, chunks=request.chunks,
                           strict=request.strict)
    return attrs.evolve(report, format=None if report.unusable else fmt,
                        time=program_time(report, request.topology, request.bound))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
