"""The runtime profiles (`smtcoll.msccl.runtime.PROFILES`): the checker refuses exactly what a profile says
its runtime refuses, so one edit to a profile changes the checker and the lowering together."""

from __future__ import annotations

import pytest
from helpers.xmlgen import algo, allgather2, gpu, step, tb

from smtcoll.check.program import check_program
from smtcoll.msccl.reader import read_program_bytes
from smtcoll.msccl.runtime import MAX_STEPS, MAX_TBS, PROFILES, RUNTIMES, Runtime


def _refusing(text: str) -> frozenset[str]:
    """The runtimes that refuse the program, as the report says."""
    runtimes = check_program(read_program_bytes(text.encode()), "prog.xml").runtimes
    assert runtimes is not None
    return frozenset(r for r, accepted in runtimes.items() if not accepted)


def test_every_runtime_has_one_profile_and_the_limits_come_from_it() -> None:
    assert set(PROFILES) == set(RUNTIMES) and all(PROFILES[r].name == r for r in RUNTIMES)
    assert {r: p.max_steps for r, p in PROFILES.items()} == MAX_STEPS
    assert {r: p.max_tbs for r, p in PROFILES.items()} == MAX_TBS


@pytest.mark.parametrize("runtime", sorted(PROFILES))
def test_a_step_number_past_a_profile_is_refused_by_that_runtime_only(runtime: Runtime) -> None:
    last = PROFILES[runtime].max_steps
    rank = gpu(0, 0, 1, 0, tb(0, -1, -1, 0, step(last, "nop", cnt=0)))
    refusing = frozenset(r for r, p in PROFILES.items() if p.max_steps <= last)
    assert runtime in refusing and _refusing(algo(rank, ngpus=1, chunks=1)) == refusing


@pytest.mark.parametrize("coll", sorted(PROFILES["executor"].colls ^ PROFILES["legacy"].colls))
def test_a_coll_one_profile_lacks_is_refused_by_that_runtime(coll: str) -> None:
    lacking = frozenset(r for r, p in PROFILES.items() if coll not in p.colls)
    report = check_program(read_program_bytes(allgather2().replace('coll="allgather"', f'coll="{coll}"').encode()),
                           "prog.xml")
    said = f"coll={coll!r} is unknown to the {' and '.join(sorted(lacking))} runtime"
    assert any(said in v.message for v in report.violations), [v.message for v in report.violations]
    assert report.runtimes is not None and not any(report.runtimes[r] for r in lacking)
