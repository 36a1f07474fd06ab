"""The input formats `smtcoll verify` reads, as one table (pre-commit's `Language` protocol and
`all_languages.py` are the model): a format is a module that provides the `Format` protocol, and one row
of `FORMATS`. Detection, which files a directory walk checks, the `--input-format` choices and the errors
a reader may raise all derive from the table; nothing else names a format (docs/architecture.md, "A new input format").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from smtcoll.errors import InputError, ModelError
from smtcoll.formats import forestcoll, msccl_xml, schedules, taccl, teccl, transfers, transfers_csv
from smtcoll.formats.source import Source

if TYPE_CHECKING:
    from smtcoll.model import Schedule, Topology
    from smtcoll.model.timed import TimedSchedule
    from smtcoll.msccl.reader import ReadResult


class Format(Protocol):
    """What a format module provides. `NAME` is what `--input-format` and a report's `format` say;
    `SUFFIXES` decide only when no format's content test does; `ERRORS` are the reader's own exceptions,
    each with `where` (a place in the file, may be empty) and `message`, turned into `InputError` here."""

    NAME: str
    SUFFIXES: tuple[str, ...]
    ERRORS: tuple[type[Exception], ...]

    def detect(self, source: Source) -> bool:
        """Whether the content is in this format, given that it is an input to check (never raises)."""

    def claims(self, source: Source) -> bool:
        """Whether a directory walk checks this file (`smtcoll verify DIR`, check/discover.py): its suffix and
        content say it is an algorithm in this format, or a broken one recognisable as such, where `detect`
        may take any file (never raises; `source` may hold only the file's first bytes,
        `source.complete` says)."""

    def read(self, source: Source, topology: Topology | None) -> Schedule | TimedSchedule | ReadResult:
        """The file read: a step schedule, a timed schedule, or an MSCCL XML program. `topology` is the
        user's (`--topology`): it replaces the file's own or supplies the one the format lacks."""


# Detection tries the rows in this order: the first whose content test holds wins. The last row is the
# default when neither the content nor the suffix decides.
FORMATS: tuple[Format, ...] = (forestcoll, msccl_xml, transfers_csv, teccl, transfers, taccl, schedules)
NAMES: tuple[str, ...] = tuple(f.NAME for f in FORMATS)  # `--input-format` choices (with `auto`)


def suffixes() -> tuple[str, ...]:
    """The suffixes of the files a directory walk looks into: those some format reads."""
    return tuple(dict.fromkeys(s for f in FORMATS for s in f.SUFFIXES))


def claimed(source: Source) -> bool:
    """Whether any format claims the file: a directory walk checks it."""
    return any(f.claims(source) for f in FORMATS)


def by_name(name: str) -> Format:
    """The format of that name (`KeyError` when none: `CheckRequest` validates the name first)."""
    for f in FORMATS:
        if name == f.NAME:
            return f
    raise KeyError(name)


def detect(source: Source) -> Format:
    """The format of a file by its content; its suffix only when the content does not decide."""
    for f in FORMATS:
        if f.detect(source):
            return f
    return next((f for f in FORMATS if source.suffix in f.SUFFIXES), FORMATS[-1])


def read(fmt: Format, source: Source, topology: Topology | None) -> Schedule | TimedSchedule | ReadResult:
    """`fmt.read`, with the reader's own exceptions turned into `InputError` naming the file and place."""
    try:
        return fmt.read(source, topology)
    except tuple(e for f in FORMATS for e in f.ERRORS) as e:
        where, message = getattr(e, "where", ""), getattr(e, "message", str(e))
        raise InputError(source.name, f"{where}: {message}" if where else message) from None
    except ModelError as e:
        raise InputError(source.name, str(e)) from None
