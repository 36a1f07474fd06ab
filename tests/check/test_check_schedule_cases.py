"""Step schedules wrong in the ways SCCL's checker misses are caught (through `smtcoll verify`'s dispatch)."""

from __future__ import annotations

from pathlib import Path

from smtcoll import library
from smtcoll.check.files import check_file
from smtcoll.formats import save_schedule
from smtcoll.model import Link, Schedule, Send, Step, Topology


def verify(tmp_path: Path, schedule: Schedule) -> set[str]:
    path = tmp_path / "s.json"
    save_schedule(schedule, path)
    report = check_file(str(path), "any", None, None, None)
    return {v.code for v in report.violations if v.severity == "error"}


def allgather_ring3() -> tuple:
    topo, coll = library.topology("ring:3"), library.collective("allgather", 3)
    # ring: each step every rank forwards to the next what it received last
    steps = [Step(1, [Send(0, 0, 1), Send(1, 1, 2), Send(2, 2, 0)]),
             Step(1, [Send(2, 0, 1), Send(0, 1, 2), Send(1, 2, 0)])]
    return topo, coll, steps


def test_correct_schedule_verifies(tmp_path: Path) -> None:
    topo, coll, steps = allgather_ring3()
    assert verify(tmp_path, Schedule(topo, coll, steps)) == set()


def test_deleted_send(tmp_path: Path) -> None:
    topo, coll, steps = allgather_ring3()
    steps[1] = Step(1, list(steps[1].sends[:2]))
    assert "postcondition" in verify(tmp_path, Schedule(topo, coll, steps))


def test_send_of_a_chunk_not_yet_held(tmp_path: Path) -> None:
    topo, coll, steps = allgather_ring3()
    steps = [Step(1, [Send(2, 0, 1), *list(steps[0].sends[1:])]), *steps[1:]]
    assert "not-held" in verify(tmp_path, Schedule(topo, coll, steps))


def test_send_over_a_missing_link(tmp_path: Path) -> None:
    _, coll, steps = allgather_ring3()
    one_way = Topology("one-way-ring", 3, [Link(0, 1), Link(1, 2), Link(2, 0)])
    assert verify(tmp_path, Schedule(one_way, coll, steps)) == set()
    assert "missing-link" in verify(tmp_path, Schedule(one_way, coll, [*steps, Step(1, [Send(1, 1, 0)])]))


def test_double_counting_in_a_reduction(tmp_path: Path) -> None:
    topo, coll = library.topology("fully-connected:3"), library.collective("allreduce", 3)
    # rank 0 gets 1's contribution twice: once directly, once inside rank 2's partial sum
    steps = [Step(1, [Send(0, 1, 2)]), Step(1, [Send(0, 1, 0), Send(0, 2, 0)])]
    assert "double-count" in verify(tmp_path, Schedule(topo, coll, steps))
