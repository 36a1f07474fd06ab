"""Errors that reach users as a clear message and an exit code, never a traceback."""

from __future__ import annotations

from typing import Any

EXIT_WRONG = 1
EXIT_UNUSABLE = 2


class SmtcollError(Exception):
    """A user-facing error: the message is printed as `error: <message>`."""

    exit_code = EXIT_UNUSABLE

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


class NotVerified(SmtcollError):
    """A file smtcoll produced fails the independent checker, so it was not written (exit 1).

    `report` is the checker's report and `summary` what the command would have printed."""

    exit_code = EXIT_WRONG

    def __init__(self, message: str, report: Any = None, summary: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = report
        self.summary = summary if summary is not None else {}
