"""Every schedule any synthesizer returns passes the independent checker first; a rejection is our bug."""

from __future__ import annotations

from smtcoll.check.schedule import check_schedule
from smtcoll.errors import InternalError
from smtcoll.model import Schedule


def checked(schedule: Schedule, producer: str, error: type[InternalError] = InternalError) -> Schedule:
    """`schedule`, once the checker accepts it; else `error` (exit 70) naming `producer` and the first finding."""
    report = check_schedule(schedule)
    if report.verdict != "ok":
        first = report.errors[0]
        raise error(f"internal error: the {producer} schedule is rejected by the checker ({first.code} at "
                    f"{first.place() or 'end'}: {first.message}); please report this")
    return schedule
