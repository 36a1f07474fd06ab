"""Lowered programs as files: verified by the independent checker before they are written, written
atomically so that a runtime scanning the folder never sees half a file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from smtcoll.check.program import check_program_file
from smtcoll.check.report import Report
from smtcoll.errors import NotVerified
from smtcoll.files import write_chunks, write_text
from smtcoll.lower.options import LowerOptions
from smtcoll.lower.pipeline import Lowered, lower
from smtcoll.model import Schedule
from smtcoll.msccl.reader import Limits
from smtcoll.msccl.writer import program_lines


def verify_lowered(lowered: Lowered, path: str | os.PathLike[str]) -> tuple[bool, Report]:
    """Check the written file with the independent checker: it must verify and every runtime it was
    written for must accept it. The reader's limits guard against hostile files; for the program the
    lowering itself wrote they are raised to its size (so a large schedule's program is checked, not
    refused: its runtime limits are still checked as for any file)."""
    limits = own_limits(lowered, os.path.getsize(path))
    return _verify_file(path, lowered.runtimes, lowered.verify_collective, lowered.layout.root, limits)


def _verify_file(path: str | os.PathLike[str], runtimes: tuple[str, ...], collective: object, root: int | None,
                 limits: Limits) -> tuple[bool, Report]:
    runtime = "any" if len(runtimes) > 1 else runtimes[0]
    report = check_program_file(path, runtime=runtime, collective=collective,  # type: ignore[arg-type]
                                root=root, limits=limits)
    accepted = report.runtimes is not None and all(report.runtimes.get(r) for r in runtimes)
    return report.verdict == "ok" and accepted, report


def own_limits(lowered: Lowered, size: int) -> Limits:
    """The reader's default limits, each raised to what this program needs."""
    p, d = lowered.program, Limits()
    return Limits(max_bytes=max(d.max_bytes, size), max_ranks=max(d.max_ranks, p.ngpus or 0),
                  max_chunks=max(d.max_chunks, (p.ngpus or 0) * (p.nchunksperloop or 0)),
                  max_tbs=max(d.max_tbs, sum(len(g.tbs) for g in p.gpus)), max_steps=max(d.max_steps, p.steps),
                  max_pieces=max(d.max_pieces, sum(s.cnt or 0 for g in p.gpus for t in g.tbs for s in t.steps)))


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` atomically, never a device or a directory; through a symlink (smtcoll/files.py)."""
    write_text(path, text)


def _file_blocks(path: Path, size: int = 1 << 20) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while block := f.read(size):
            yield block


def lower_to_file(schedule: Schedule, output: Path, options: LowerOptions = LowerOptions(),
                  verify: bool = True) -> tuple[dict[str, Any], Report | None]:
    """Lower `schedule`, verify the program (unless `verify` is False) and write it to `output`.

    Returns the JSON summary of `smtcoll lower` and the checker's report (None without `verify`). Raises
    `RejectedSchedule` (exit 1) or `CannotLower` (exit 2) when there is nothing to write, and
    `NotVerified` (exit 1, with the summary and the report) when the program fails the checker: the file
    is then not written, so a caller cannot report a file that does not exist.

    The program is written line by line to a file in a temporary folder and dropped before the checker
    reads that file back, so the lowering's and the checker's memory do not add up (2 million steps at
    1024 ranks); the checked file is then copied into place atomically."""
    lowered = lower(schedule, options)
    program = lowered.program
    result: dict[str, Any] = {
        "file": str(output), "schedule": schedule.name, "written": False, "collective": lowered.layout.kind,
        "coll": program.coll, "ranks": program.ngpus, "root": lowered.layout.root,
        "runtimes": list(lowered.runtimes), "mode": options.mode, "instances": options.instances,
        "protocol": options.protocol, "nchunksperloop": program.nchunksperloop,
        "nchannels": program.nchannels, "stats": lowered.stats, "verified": None, "report": None,
    }
    if not verify:
        write_chunks(output, (line.encode() for line in program_lines(program)))
        result["written"] = True
        return result, None
    limits = own_limits(lowered, 0)
    runtimes, collective, root = lowered.runtimes, lowered.verify_collective, lowered.layout.root
    with tempfile.TemporaryDirectory(prefix="smtcoll-lower-") as tmp:
        probe = Path(tmp) / "algo.xml"
        write_chunks(probe, (line.encode() for line in program_lines(program)))
        del program, lowered
        limits = attrs.evolve(limits, max_bytes=max(limits.max_bytes, os.path.getsize(probe)))
        ok, report = _verify_file(probe, runtimes, collective, root, limits)
        report = attrs.evolve(report, file=str(output))
        result.update(written=ok, verified=ok, report=report.to_json())
        if not ok:
            raise NotVerified(f"{output}: NOT written: the lowered program does not verify", report, result)
        write_chunks(output, _file_blocks(probe))
    return result, report
