"""Synthesized schedules lower to XML that verifies, in every mode and with 1, 2 and 4 instances (a
representative subset of the synthesis benchmark set; `benchmarks/lower_all.py` runs the whole set)."""

from functools import cache
from pathlib import Path

import pytest
from test_lower import MODES, lower_and_verify

from smtcoll import library
from smtcoll.synth.exact import strategies

CASES = [
    ("ring:4", "allgather", None, 1), ("dgx1", "allgather", None, 2), ("star:4", "alltoall", None, 1),
    ("line:4", "allreduce", None, 1), ("ring:4", "reducescatter", None, 1), ("ring:4", "broadcast", 2, 1),
    ("dgx1", "reduce", 0, 1), ("hub-and-spoke:4", "allgather", None, 1), ("ring:4", "allreduce", None, 4),
]


@cache
def synthesized(topo: str, coll: str, root: int | None, chunks: int):
    t = library.topology(topo)
    result = strategies.least_steps(t, library.collective(coll, t.ranks, root), chunks=chunks)
    assert result.status == "found"
    return result.schedule


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}-{c[0]}-C{c[3]}")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("instances", [1, 2, 4])
def test_synthesized_schedules_lower_and_verify(case, mode, instances, tmp_path: Path) -> None:
    schedule = synthesized(*case)
    runtime = "executor" if case[1] == "reducescatter" else "auto"  # spelled differently per runtime
    lowered, _ = lower_and_verify(schedule, tmp_path, mode=mode, instances=instances, runtime=runtime)
    if case[1] == "reducescatter":
        lower_and_verify(schedule, tmp_path, mode=mode, instances=instances, runtime="legacy")
    else:
        assert lowered.runtimes == ("executor", "legacy")
