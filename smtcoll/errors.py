"""The named exceptions of smtcoll and the one table from exception class to exit code.

Every error a user can meet is one of these classes; the CLI guard (`smtcoll/cli/app.py`) prints its
message and exits with the code `EXIT_CODES` gives its class (the nearest listed base class wins). Any
other exception is a bug of ours: `internal error: ...`, exit `EXIT_INTERNAL`, a code no verdict uses.

| code | meaning | classes |
|---|---|---|
| 0 | success: verified, found, written | - |
| 1 | a verdict against the input: the algorithm is wrong, or proved that no schedule exists | `Wrong` |
| 2 | unusable input: a file, an option, a parameter out of range, an instance too large to try | `SmtcollError` |
| 3 | a limit was reached (time, memory) before an answer; what was found so far is kept | `LimitReached` |
| 4 | synth: a schedule was found (and written), but its MSCCL XML could not be written | `NotWritten` |
| 70 | internal error: a bug of smtcoll; please report it | `InternalError` |
| 130 | interrupted (Ctrl-C) | - |
"""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_WRONG = 1
EXIT_UNUSABLE = 2
EXIT_LIMIT = 3
EXIT_NOT_WRITTEN = 4
EXIT_INTERNAL = 70  # EX_SOFTWARE of sysexits.h
EXIT_INTERRUPTED = 130


class SmtcollError(Exception):
    """A user-facing error: the message is printed as `error: <message>`; unusable input by default."""

    exit_code = EXIT_UNUSABLE  # set from EXIT_CODES below; kept as an attribute for `except ... as e: e.exit_code`

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ModelError(SmtcollError):
    """Invalid data in a model object; `where` names the field (e.g. `links[3].dst`)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.detail = message


class InputError(SmtcollError):
    """An unusable input file: names the file, the line where known, and the field."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        place = f"{path}:{line}" if line is not None else path
        super().__init__(f"{place}: {message}")
        self.path = path
        self.line = line
        self.detail = message


class UsageError(SmtcollError):
    """An option value that cannot be used (out of range, not a number, contradicting another option)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


class TooLarge(UsageError):
    """An instance refused before any work because it would not fit the size, time or memory limits;
    `raise_with` names the option that raises the limit (empty when none does)."""

    def __init__(self, option: str, message: str, raise_with: str = "") -> None:
        super().__init__(option, message + (f" (raise the limit with {raise_with})" if raise_with else ""))
        self.raise_with = raise_with


class OutputError(SmtcollError):
    """An output file that cannot be written (not a regular file, no permission, disk full)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class Wrong(SmtcollError):
    """A verdict against the input: wrong, rejected, or proved impossible (exit 1)."""


class VerificationFailed(Wrong):
    """A program or schedule failed verification (the checker's report says why)."""


class NotVerified(VerificationFailed):
    """A file smtcoll produced fails the independent checker, so it was not written (exit 1).

    `report` is the checker's report and `summary` what the command would have printed."""

    def __init__(self, message: str, report: Any = None, summary: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = report
        self.summary = summary if summary is not None else {}


class LimitReached(SmtcollError):
    """A time or memory limit was reached before an answer (exit 3)."""


class TimeLimit(LimitReached):
    """The `--timeout` of a command ran out."""


class MemoryLimit(LimitReached):
    """The memory cap (`--max-memory`) was reached."""


class NotWritten(SmtcollError):
    """synth found a schedule, but its MSCCL XML could not be written (exit 4)."""


class InternalError(SmtcollError):
    """A bug of smtcoll (e.g. the checker rejects a synthesized schedule): never a verdict (exit 70)."""


# The one table: exception class -> exit code. A class not listed takes the code of its nearest listed base.
EXIT_CODES: dict[type[SmtcollError], int] = {
    SmtcollError: EXIT_UNUSABLE,
    Wrong: EXIT_WRONG,
    LimitReached: EXIT_LIMIT,
    NotWritten: EXIT_NOT_WRITTEN,
    InternalError: EXIT_INTERNAL,
}

for _cls, _code in EXIT_CODES.items():
    _cls.exit_code = _code


def exit_code_of(error: BaseException) -> int:
    """The exit code of an exception: its class's entry in EXIT_CODES (or its `exit_code` when a subclass
    defined elsewhere sets one of the table's codes), EXIT_INTERNAL for anything that is not ours."""
    if isinstance(error, SmtcollError):
        return error.exit_code
    return EXIT_INTERNAL
