"""Which format a file is in (by content, or as the user says), and reading it into a schedule, through
the one table of formats (`smtcoll.formats.registry`).

Step schedules (`Schedule`: smtcoll's JSON, SCCL `*.msccl.json`, SCCL-style algorithms with a `links`
matrix) and timed schedules (`TimedSchedule`: TE-CCL flow JSON, TACCL algorithm JSON, the transfer log,
ForestColl trees). MSCCL XML programs are read by `smtcoll.msccl.reader`, not here.
"""

from __future__ import annotations

from pathlib import Path

from smtcoll.errors import InputError
from smtcoll.formats import registry, schedules
from smtcoll.formats.source import Source
from smtcoll.model import Schedule, Topology
from smtcoll.model.timed import TimedSchedule
from smtcoll.msccl.reader import Limits, ReadResult

INPUT_FORMATS = ("auto", *registry.NAMES)  # the choices of `smtcoll verify --input-format`


def read_text(path: str, limit: int | None = None) -> str:
    """The file's text, refused above `limit` bytes (default MAX_SCHEDULE_BYTES; `smtcoll verify
    --max-bytes` passes its own, so the option its message names is the one that lifts it)."""
    p = Path(path)
    limit = schedules.MAX_SCHEDULE_BYTES if limit is None else limit
    try:
        size = p.stat().st_size
        if size > limit:
            raise InputError(path, f"file is {size} bytes: over the limit of {limit}; if the file is genuine, "
                                   "raise it (smtcoll verify --max-bytes N)")
        data = p.read_bytes()
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    return decode(data, path)


def decode(data: bytes, name: str) -> str:
    """The text of a file's bytes (UTF-8, a byte-order mark dropped)."""
    return Source(name, data).text()


def detect(path: str, text: str | None = None) -> str:
    """The name of a file's format by its content (`text`, else the file's); the suffix only decides
    when the content does not (an unreadable file is reported by the reader of that format)."""
    if text is None:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = b""
    else:
        data = text.encode()
    return registry.detect(Source(path, data)).NAME


def read_input(path: str, fmt: str = "auto", topology: Topology | None = None,
               max_bytes: int | None = None) -> tuple[str, Schedule | TimedSchedule]:
    """(format, schedule) of a file that is not MSCCL XML; errors name the file and the place.
    `max_bytes`: the size limit (default MAX_SCHEDULE_BYTES)."""
    return parse_input(read_text(path, max_bytes), path, fmt, topology)


def parse_input(text: str | bytes, path: str, fmt: str = "auto",
                topology: Topology | None = None) -> tuple[str, Schedule | TimedSchedule]:
    """`read_input` of a file's content; `path` names it."""
    source = Source(path, text if isinstance(text, bytes) else text.encode(),
                    Limits(max_bytes=max(len(text), Limits().max_bytes)))
    found = registry.detect(source) if fmt == "auto" else registry.by_name(fmt)
    schedule = registry.read(found, source, topology)
    if isinstance(schedule, ReadResult):
        raise InputError(path, "an MSCCL XML program, not a schedule")
    return found.NAME, schedule
