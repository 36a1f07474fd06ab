"""Checking any file that is not an MSCCL XML program: read it (`smtcoll.formats.inputs`) and judge it with
the step-schedule checker or the timed checker."""

from __future__ import annotations

import attrs

from smtcoll.check.report import Report, Violation
from smtcoll.check.schedule import check_schedule
from smtcoll.check.timed import check_timed
from smtcoll.errors import SmtcollError
from smtcoll.formats.inputs import parse_input, read_text
from smtcoll.model import Schedule, Topology
from smtcoll.model.timed import BoundFn, TimedSchedule


def check_input_file(path: str, fmt: str = "auto", topology: Topology | None = None,
                     bound: BoundFn | None = None, max_bytes: int | None = None,
                     text: str | bytes | None = None) -> Report:
    """Unreadable input gives an `unusable` report. `topology` replaces the file's own (step schedules,
    TACCL) or supplies the one the format lacks (TE-CCL, ForestColl, transfer logs); `max_bytes` is
    the size limit (`verify --max-bytes`; default the schedule readers' MAX_SCHEDULE_BYTES); `text`, when
    given, is the file's content (then `path` only names it)."""
    try:
        found, schedule = parse_input(read_text(path, max_bytes) if text is None else text, path, fmt, topology)
    except SmtcollError as e:
        return unreadable(path, e, fmt)
    return judge(schedule, found, path, topology, bound)


def unreadable(path: str, error: SmtcollError, fmt: str) -> Report:
    """The report of a schedule file that cannot be read; its format is the one the user named, if any."""
    return Report(path, violations=[Violation("unusable", str(error), "error")], unusable=True,
                  format=None if fmt == "auto" else fmt)


def judge(schedule: Schedule | TimedSchedule, found: str, path: str, topology: Topology | None,
          bound: BoundFn | None) -> Report:
    """The report on a schedule read from `path` in format `found`, on `topology` when given."""
    if not isinstance(schedule, Schedule):
        return check_timed(schedule, path, bound)
    if topology is not None:
        if topology.ranks != schedule.topology.ranks:
            return Report(path, schedule.collective.name, schedule.collective.ranks, None, [Violation(
                "topology-mismatch", f"the schedule has {schedule.topology.ranks} ranks, topology {topology.name!r} "
                                     f"has {topology.ranks}", "error")], format=found)
        schedule = Schedule(topology, schedule.collective, schedule.steps, schedule.name)
    return attrs.evolve(check_schedule(schedule, path), format=found)
