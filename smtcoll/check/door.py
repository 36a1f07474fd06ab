"""The checker's one front door: `check(source, request) -> Report` for a file path or a file's bytes.

Only this function decides how a source is checked (which format it is in, which reader and which checker
judge it); `check_file`, `check_files`, `smtcoll verify` and `smtcoll.verify` build a `CheckRequest` and
call it. It never raises for bad input: an unusable source is a report.
"""

from __future__ import annotations

import os

import attrs

from smtcoll.check.inputs import judge, unreadable
from smtcoll.check.program import check_program, unusable_report
from smtcoll.check.report import Report, Violation
from smtcoll.check.request import CheckRequest
from smtcoll.check.topology_cost import program_time
from smtcoll.errors import InputError, SmtcollError
from smtcoll.formats import msccl_xml, registry
from smtcoll.formats.source import Source, read_source, size_of
from smtcoll.msccl.reader import ReadResult

BYTES_NAME = "<bytes>"  # how a source given as bytes is named in its report and messages

DEFAULT_REQUEST = CheckRequest()


def check(source: str | os.PathLike[str] | bytes, request: CheckRequest = DEFAULT_REQUEST) -> Report:
    """Check one file, given by its path or as its bytes, as `request` asks; never raises for bad input.

    >>> check("examples/allgather-ring4.xml").verdict
    'ok'
    >>> from pathlib import Path
    >>> check(Path("examples/allgather-ring4-wrong.xml").read_bytes(), CheckRequest(runtime="executor")).verdict
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
    size = len(source) if isinstance(source, bytes) else size_of(name)
    if size > limits.max_bytes:  # refused before any format is considered (an unusable report, no format)
        raise SmtcollError(f"{name}: " + limits.exceeded("--max-bytes", f"file is {size} bytes", limits.max_bytes))
    if isinstance(source, bytes):
        src = Source(name, source, limits)
    else:
        try:
            src = read_source(name, limits)
        except InputError as e:
            return _unreadable(name, e, request.input_format, request.input_format == "msccl-xml")
    fmt = registry.detect(src) if request.input_format == "auto" else registry.by_name(request.input_format)
    from smtcoll.limits import transfer_limit

    # a transfer of a timed schedule moves one chunk: `--max-pieces` bounds them as it bounds an XML program's
    with transfer_limit(limits.max_pieces):
        try:
            read = registry.read(fmt, src, request.topology)
        except SmtcollError as e:
            return _unreadable(name, e, request.input_format, fmt.NAME == msccl_xml.NAME)
        if not isinstance(read, ReadResult):
            return judge(read, fmt.NAME, name, request.topology, request.bound)
    report = check_program(read, name, runtime=request.runtime, collective=request.collective,
                           root=request.root, topology=request.topology, chunks=request.chunks,
                           strict=request.strict)
    return attrs.evolve(report, format=None if report.unusable else fmt.NAME,
                        time=program_time(report, request.topology, request.bound))


def _unreadable(name: str, error: SmtcollError, input_format: str, program: bool) -> Report:
    """An XML program that cannot be read keeps the line of the error (the runtimes' reader knows it); a
    schedule file keeps the format the user named."""
    return unusable_report(name, error) if program else unreadable(name, error, input_format)
