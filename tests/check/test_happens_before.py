"""Races decided by happens-before through messages, not only through a rank's own dependencies: the
checker's first run orders accesses with local knowledge (program order and flags), and the pairs it
leaves unordered are decided again with knowledge that travels with messages (check/execution.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.xmlgen import algo, allgather2, gpu, step, tb, write

from smtcoll.check import execution
from smtcoll.check.program import check_program_file


def _echo(echo_first: bool) -> str:
    """Rank 0's tb 0 writes o[0] and sends it; its tb 1 later overwrites o[0] with what rank 1 sends back.
    No dependency of rank 0 orders the two: only the message chain tb 0 -> rank 1 -> tb 1 does, when rank 1
    echoes o[0] before sending its own chunk (`echo_first`); otherwise the overwrite races."""
    if echo_first:
        peer_ops = (step(0, "cpy", "i", 0, "o", 1), step(1, "r", "o", 0, "o", 0), step(2, "s", "o", 0, "o", 0),
                    step(3, "s", "o", 1, "o", 1))
    else:
        peer_ops = (step(0, "cpy", "i", 0, "o", 1), step(1, "s", "o", 1, "o", 1), step(2, "r", "o", 0, "o", 0),
                    step(3, "s", "o", 0, "o", 0))
    rank0 = gpu(0, 1, 2, 0,
                tb(0, 1, -1, 0, step(0, "cpy", "i", 0, "o", 0), step(1, "s", "o", 0, "o", 0)),
                tb(1, -1, 1, 0, step(0, "r", "o", 0, "o", 0), step(1, "r", "o", 1, "o", 1)))
    return algo(rank0, gpu(1, 1, 2, 0, tb(0, 0, 0, 0, *peer_ops)))


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many simulations each check ran (one per `_run`)."""
    calls: list[int] = []
    real = execution._run

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(execution, "_run", counted)
    return calls


def test_an_order_only_messages_give_is_no_race(tmp_path: Path, runs: list[int]) -> None:
    r = check_program_file(write(tmp_path, _echo(echo_first=True)))
    assert r.verdict == "ok", [v.message for v in r.errors]
    assert len(runs) == 2  # local knowledge left the pair unordered: the message chain decided it


def test_without_the_message_chain_the_overwrite_races(tmp_path: Path) -> None:
    r = check_program_file(write(tmp_path, _echo(echo_first=False)))
    races = [v for v in r.violations if v.code == "race"]
    assert races and races[0].where["gpu"] == 0 and "o[0] on gpu 0" in races[0].message
    assert r.verdict == "error"


def test_a_program_its_own_dependencies_order_runs_once(tmp_path: Path, runs: list[int]) -> None:
    assert check_program_file(write(tmp_path, allgather2())).verdict == "ok"
    assert len(runs) == 1
